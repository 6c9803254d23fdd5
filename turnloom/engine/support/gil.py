"""Giving the GIL back to the engine loop quickly while a worker thread runs Python.

Heavy requests (the largest graphs, the heaviest nodes' params) are checked on a worker thread
so that the loop goes on serving every other agent. The loop still needs the GIL for each of
its iterations, and CPython hands it over only every switch interval (5 ms by default): with
the worker busy, every iteration of the loop would wait up to that long. While such work runs,
the interval is 0.5 ms; it goes back to what it was when the last of them ends.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

#: The switch interval while heavy work runs on a worker thread (seconds).
SWITCH_S = 0.0005

_lock = threading.Lock()
_running = 0
_saved = SWITCH_S


def run_switching_often(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`fn(*args, **kwargs)`, with the interpreter switching threads every `SWITCH_S`."""
    global _running, _saved
    with _lock:
        if _running == 0:
            _saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved, SWITCH_S))
        _running += 1
    try:
        return fn(*args, **kwargs)
    finally:
        with _lock:
            _running -= 1
            if _running == 0:
                sys.setswitchinterval(_saved)
