"""Real `turnloom serve --mock --store` processes and the agents the wire durability tests
pause in them (kinds as in `scenario`, with a wall-clock deadline): shared by the crash test
and the several-workers test."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import turnloom as tl
from tests.durable import scenario

REPO = Path(__file__).resolve().parents[2]
#: A wall-clock pause deadline (a separate process has no virtual clock): long enough that it
#: is still open when the server is killed, waited out before the restart.
DEADLINE_MS = 1500
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}


@contextmanager
def serving(
    store: str, *options: str, log: IO[Any] | None = None
) -> Iterator[tuple[subprocess.Popen[str], tuple[str, int]]]:
    """`python -m turnloom serve --mock --store STORE OPTIONS...` on a free port, its log to
    `log` (or nowhere); killed at the end."""
    command = ["serve", "--port", "0", "--mock", "--store", store, *options]
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnloom", *command],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if log is None else log,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.fullmatch(r"turnloom: protocol v1 on (\S+):(\d+)\n", line)
        assert found, line
        yield proc, (found.group(1), int(found.group(2)))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def kill_9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL


def graph(kind: str, deadline_ms: int = DEADLINE_MS) -> tl.GraphDescription:
    """`scenario`'s graph of one kind, with a wall-clock deadline."""
    return scenario.graph(kind, deadline_ms)


def message(kind: str, index: int) -> str:
    if kind == "await":  # the mock model echoes it: a call of `look`
        return json.dumps({"name": "look", "arguments": {"what": f"door {index}"}})
    return f"hello {index}"


def finish(agent: tl.Agent, step: tl.Step, kind: str) -> tuple[list[str], tl.TurnResult]:
    """Finish a paused turn as the game would: (the call ids answered, the completion)."""
    assert step.pause is not None, step
    calls = step.pause.pending_calls
    if kind == "await":
        results = [(c.call_id, f"saw {c.arguments['what']}") for c in calls]
        return [c.call_id for c in calls], agent.resume(tool_results=results).final
    agent.change_params("answer", {"system_prompt": "Mira, trusted"})
    return [], agent.resume().final


class Balancer:
    """A TCP forwarder standing for a load balancer in front of workers: each new connection
    goes to `backend` as it is at that moment (a test moves it), bytes copied both ways."""

    def __init__(self, backend: tuple[str, int]) -> None:
        self.backend = backend
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._forward, "127.0.0.1", 0), self._loop
        ).result(10)
        self.address: tuple[str, int] = self._server.sockets[0].getsockname()[:2]

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.backend)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def close(self) -> None:
        self._loop.call_soon_threadsafe(self._server.close)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
