"""Helpers shared by the benchmark scripts: quiet logging, the graphs, RSS, a table printer."""

from __future__ import annotations

import logging
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


#: Warning-or-worse events the engine logged during a run, by event name (see `quiet_logging`).
LOGGED: Counter[str] = Counter()


class _CountingHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        event = record.msg.get("event") if isinstance(record.msg, dict) else record.getMessage()
        LOGGED[f"{record.levelname.lower()}:{event}"] += 1


def quiet_logging() -> None:
    """Count turnloom's warnings and errors, leaving its logging otherwise as a host gets it.

    turnloom's default (structlog unconfigured, stdlib `logging` silent) is what the benchmarks
    measure. A benchmark whose engine logged warnings or errors did not measure the normal
    path, so the scripts print `LOGGED` at the end.
    """
    root = logging.getLogger("turnloom")
    if not any(isinstance(h, _CountingHandler) for h in root.handlers):
        root.addHandler(_CountingHandler(logging.WARNING))
    if root.level == logging.NOTSET or root.level < logging.WARNING:
        root.setLevel(logging.WARNING)


def logged_summary() -> str:
    """One line on the warnings/errors the engine logged (there should be none)."""
    if not LOGGED:
        return "engine log: no warnings or errors (good: the normal path was measured)"
    return "engine log: WARNINGS/ERRORS were logged, figures are suspect: " + ", ".join(
        f"{k} x{v}" for k, v in LOGGED.most_common()
    )


def pause_then_canned(pause_timeout_ms: int = 0):  # -> turnloom.GraphDescription
    """Pause node "gate" (default_exit="reply") -> CannedResponse "reply" (lines=["ok"])."""
    import turnloom as tl

    return (
        tl.GraphDescription()
        .add_node("gate", tl.PauseParams(default_exit="reply", pause_timeout_ms=pause_timeout_ms))
        .add_node("reply", tl.CannedResponseParams(lines=["ok"]))
        .set_start_node("gate")
    )


def pause_then_generate():  # -> turnloom.GraphDescription
    """Pause node "gate" -> Generate "reply" on the mock model (echo reply, streamed)."""
    import turnloom as tl

    return (
        tl.GraphDescription()
        .add_node("gate", tl.PauseParams(default_exit="reply"))
        .add_node("reply", tl.GenerateParams())
        .set_start_node("gate")
        .set_default_model_name("mock")
    )


def rss_bytes() -> int:
    """Current resident set size (Linux /proc); falls back to the peak from getrusage."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024


def peak_rss_bytes() -> int:
    """Peak resident set size of this process."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Print a plain fixed-width table (first column left-aligned, the rest right-aligned)."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        pairs = enumerate(zip(row, widths, strict=True))
        return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in pairs)

    print(line(cells[0]))
    print("  ".join("-" * w for w in widths))
    for row in cells[1:]:
        print(line(row))


def redis_server() -> tuple[subprocess.Popen[bytes], str] | None:
    """A redis-server on a free loopback port, no persistence, and its URL (None: not installed)."""
    binary = shutil.which("redis-server")
    if binary is None:
        return None
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    import redis

    client = redis.Redis(port=port)
    for _ in range(500):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.01)
    client.close()
    return process, f"redis://127.0.0.1:{port}/0"


def live_timers(loop: Any, ignoring: Any = None) -> int:
    """Timers scheduled on `loop` and not cancelled (asyncio drops cancelled ones lazily),
    but for those that would call `ignoring`."""
    return sum(
        1
        for handle in getattr(loop, "_scheduled", ())
        if not handle.cancelled() and (ignoring is None or handle._callback != ignoring)
    )
