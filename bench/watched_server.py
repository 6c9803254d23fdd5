"""A mock server whose event loop is watched, and raw frame helpers for the wire stress scripts.

`python -m bench.watched_server` serves ``AsyncEngine(MockModel("mock"))`` (what ``turnloom
serve --mock`` runs) on a free loopback port, prints ``serving on HOST:PORT``, and answers each
``lag`` line on its stdin with the longest time its loop went without waking a 1 ms sleeper
since the previous ``lag`` (``lag <ms>``): the longest any request blocked every session.
"""

from __future__ import annotations

import asyncio
import os
import re
import struct
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgpack

import turnloom as tl
from bench._common import quiet_logging
from turnloom.server import Server

PING_TIMEOUT_S = 10.0
MAX_BODY = 1024 * 1024


class LoopWatch:
    """The longest time the running loop went without waking a 1 ms sleeper."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    async def _watch(self) -> None:
        while True:
            before = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - before - 0.001)

    def take(self) -> float:
        """The worst block since the last call, in seconds; starts a new window."""
        worst, self.worst = self.worst, 0.0
        return worst


# --- the watched server (child process) -----------------------------------------------------


async def serve_watched() -> None:
    """Serve the mock engine on a free port; answer `lag` lines on stdin with the worst block."""
    server = Server(tl.AsyncEngine(tl.MockModel("mock")))
    await server.start("127.0.0.1", 0)
    watch = LoopWatch()
    watch.start()
    host, port = server.address
    print(f"serving on {host}:{port}", flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        if line.strip() == "lag":
            await asyncio.sleep(0.005)  # let the watcher see the end of the last request
            print(f"lag {watch.take() * 1000:.3f}", flush=True)
    await server.close()


class WatchedServer:
    """The child process running `serve_watched`."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.watched_server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        assert self.proc.stdout is not None and self.proc.stdin is not None
        found = re.search(r"on (\S+):(\d+)", self.proc.stdout.readline())
        if not found:
            self.proc.kill()
            raise SystemExit("the watched server did not start")
        self.address = (found.group(1), int(found.group(2)))

    def lag_ms(self) -> float:
        """The server loop's worst block since the last call."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("lag\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline().split()[1])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


# --- frames ----------------------------------------------------------------------------------


def frame_bytes(body: bytes) -> bytes:
    return struct.pack("<I", len(body)) + body


def deep(depth: int, leaf: bytes = b"\xc0") -> bytes:
    """A msgpack value nested `depth` arrays deep (built as bytes: msgpack refuses to pack it)."""
    return b"\x91" * depth + leaf


def pack_with(message: dict[str, Any], key: str, raw_value: bytes) -> bytes:
    """`message` packed with `key`'s value replaced by already-encoded bytes."""
    marker = "\x00raw-value\x00"
    body = msgpack.packb({**message, key: marker})
    packed_marker = msgpack.packb(marker)
    return body.replace(packed_marker, raw_value, 1)


class FrameReader:
    """Reads server frames continuously (the server closes sessions that do not read)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self.reader = reader
        self.replies: dict[int, dict[str, Any]] = {}
        #: Ids of the agents the session created (a fuzzer aims its requests at them).
        self.created: list[int] = []
        self.codes: Counter[int] = Counter()
        self.frames = 0
        self.closed = asyncio.Event()
        self.waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            while True:
                header = await self.reader.readexactly(4)
                body = await self.reader.readexactly(struct.unpack("<I", header)[0])
                frame = msgpack.unpackb(body)
                self.frames += 1
                if frame.get("type") == "ErrorResponse":
                    self.codes[frame.get("code")] += 1
                elif frame.get("type") == "CreateAgentResponse":
                    self.created.append(frame["agent_id"])
                future = self.waiting.pop(frame.get("request_id"), None)
                if future is not None and not future.done():
                    future.set_result(frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.closed.set()

    async def reply_to(self, request_id: int, timeout: float) -> dict[str, Any] | None:
        future = asyncio.get_running_loop().create_future()
        self.waiting[request_id] = future
        try:
            return await asyncio.wait_for(future, timeout)
        except TimeoutError:
            return None


async def open_session(address: tuple[str, int]) -> tuple[FrameReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection(*address)
    frames = FrameReader(reader)
    writer.write(frame_bytes(msgpack.packb({"type": "ConfigureSession", "protocol_version": 1})))
    return frames, writer


def main() -> int:
    """Run the watched server until stdin closes."""
    quiet_logging()
    asyncio.run(serve_watched())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
