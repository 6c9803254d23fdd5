"""Creating a `LlamaModel`: a bad GGUF path is refused at once, and loading one borrows
llama.cpp's process-wide log callback only for the load, then puts the host's back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import turnloom as tl

REPO = Path(__file__).resolve().parents[2]


def test_a_missing_gguf_is_refused_when_the_model_is_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.gguf"
    with pytest.raises(FileNotFoundError) as info:
        tl.LlamaModel(missing)
    assert info.value.filename == str(missing)
    assert "model 'nope'" in str(info.value)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IsADirectoryError):
        tl.LlamaModel(tmp_path, name="dir")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_gguf_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked.gguf"
    locked.write_bytes(b"GGUF")
    locked.chmod(0)
    with pytest.raises(PermissionError):
        tl.LlamaModel(locked)


def test_a_file_that_is_not_a_gguf_is_refused(tmp_path: Path) -> None:
    part = tmp_path / "model.gguf.part00"
    part.write_bytes(b"\x00\x01\x02\x03 a chunk")
    with pytest.raises(ValueError, match="is not a GGUF file"):
        tl.LlamaModel(part)
    tl.register_model(tl.CatalogEntry(name="bad-part", path=part), replace=True)
    with pytest.raises(ValueError, match="is not a GGUF file"):
        tl.LlamaModel.from_catalog("bad-part")


def test_a_resolver_is_not_run_until_the_model_needs_the_file(tmp_path: Path) -> None:
    calls: list[int] = []

    def resolve() -> Path:
        calls.append(1)
        return tmp_path / "later.gguf"

    model = tl.LlamaModel(resolve, name="later")
    assert calls == []
    with pytest.raises(FileNotFoundError):
        model.load()  # the resolver's missing file is reported when it is finally needed
    model.close()


def test_a_real_gguf_is_accepted_without_loading_it() -> None:
    path = tl.LlamaModel.from_catalog().model_path()
    model = tl.LlamaModel(path, name="gemma-file")
    assert not model.loaded


LOAD = """
import ctypes, json, logging
import llama_cpp
import turnloom as tl

def current_callback():
    callback, data = llama_cpp.llama_log_callback(), ctypes.c_void_p()
    llama_cpp.llama_log_get(ctypes.byref(callback), ctypes.byref(data))
    return ctypes.cast(callback, ctypes.c_void_p).value

class Keep(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages = []
    def emit(self, record):
        if record.msg["event"] == "llama.cpp":
            self.messages.append(record.msg["message"])

keep = Keep()
logging.getLogger("turnloom.llama").addHandler(keep)
logging.getLogger("turnloom.llama").setLevel(logging.DEBUG)
before = current_callback()
model = tl.LlamaModel.from_catalog(n_ctx=256).load()
print(json.dumps({"restored": current_callback() == before, "messages": keep.messages}))
model.close()
"""


def test_loading_borrows_the_llama_cpp_log_and_gives_it_back() -> None:
    done = subprocess.run(
        [sys.executable, "-c", LOAD], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["restored"]
    # The warning llama-cpp-python's own callback would print to stderr on every load:
    assert any("SWA cache" in message for message in report["messages"])
    assert done.stderr == ""
