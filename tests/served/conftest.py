"""A real serving engine for the served-backend tests: llama-cpp-python's OpenAI-compatible
server (`python -m llama_cpp.server`) on a free loopback port, serving the embedded default GGUF.

One server for the whole session; the test that kills it mid-stream starts it again on the same
port, so the suite starts it at most twice. It runs on one thread (the test machine's cores are
shared) and with `--interrupt_requests false`, without which a second request cuts the stream of
the first short.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

import turnloom as tl

#: The name the server and the tests' graphs give the model.
MODEL = "gemma"


def free_port() -> int:
    """A loopback port nothing listens on (now)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LlamaServer:
    """A `python -m llama_cpp.server` process that can be killed and started again."""

    def __init__(
        self, model_path: Path, port: int, log_dir: Path, extra: Sequence[str] = ()
    ) -> None:
        self.model_path = model_path
        #: More command-line options (e.g. `--logits_all false`).
        self.extra = tuple(extra)
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log_path = log_dir / f"llama-server-{port}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, timeout: float = 120.0) -> None:
        """Start the server and wait until it answers."""
        args = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path), "--model_alias", MODEL,
            "--host", "127.0.0.1", "--port", str(self.port),
            "--n_ctx", "1024", "--n_threads", "1", "--n_threads_batch", "1",
            "--interrupt_requests", "false", "--verbose", "false", *self.extra,
        ]  # fmt: skip
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited at start:\n{self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/v1/models", timeout=1.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the server did not answer within {timeout} s:\n{self.log_tail()}")

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self.process is not None and self.process.poll() is None

    def ensure_running(self) -> None:
        """Start it again if a test killed it."""
        if not self.running:
            self.start()

    def kill(self) -> None:
        """SIGKILL: the server dies mid-whatever, as a crashed machine would."""
        if self.process is not None and self.running:
            os.kill(self.process.pid, signal.SIGKILL)

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL) and reap it."""
        if self.process is None:
            return
        if self.running:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.process.wait(10)

    def log_tail(self, lines: int = 30) -> str:
        """The end of its log, for failure messages."""
        try:
            text = self.log_path.read_text("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


@pytest.fixture(scope="session")
def llama_server() -> Iterator[LlamaServer]:
    """The session's server (started once; the kill test starts it again)."""
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (dev extra)")
    model_path = tl.models.catalog_entry(tl.models.DEFAULT_MODEL).resolve_path()
    with tempfile.TemporaryDirectory(prefix="turnloom-served-") as logs:
        server = LlamaServer(model_path, free_port(), Path(logs))
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture(scope="session")
def blind_server() -> Iterator[LlamaServer]:
    """A second server whose model is loaded without `logits_all`, so its completions return no
    log-probabilities (started by the tests that need it; a small context keeps it light)."""
    pytest.importorskip("llama_cpp.server", reason="needs llama-cpp-python[server] (dev extra)")
    model_path = tl.models.catalog_entry(tl.models.DEFAULT_MODEL).resolve_path()
    with tempfile.TemporaryDirectory(prefix="turnloom-served-") as logs:
        server = LlamaServer(
            model_path, free_port(), Path(logs), ["--logits_all", "false", "--n_ctx", "512"]
        )
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def server(llama_server: LlamaServer) -> LlamaServer:
    """The session's server, running."""
    llama_server.ensure_running()
    return llama_server


@pytest.fixture
def served(server: LlamaServer) -> tl.ServedModel:
    """A served model over the session's server: the catalog's default model, whose tool calls
    are grammar-required, named `MODEL` for the graphs."""
    return tl.ServedModel(
        server.url,
        model=MODEL,
        name=MODEL,
        server_kind="llama-cpp-python",
        entry=tl.models.DEFAULT_MODEL,
        retries=1,
    )


@pytest.fixture
def served_engine(served: tl.ServedModel) -> Iterator[tl.Engine]:
    """An embedded engine (real clock) over the served model."""
    with tl.Engine(served) as engine:
        yield engine
