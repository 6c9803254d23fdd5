"""Clocks: where pause deadlines and paused time come from.

The engine reads time and arms deadlines only through a `Clock`, so tests run timeouts on a
`VirtualClock` and never sleep on wall time. Deadlines are loop timers, not threads.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol


class TimerHandle(Protocol):
    """A scheduled callback that can be cancelled."""

    def cancel(self) -> None:
        """Make sure the callback will not run."""


class Clock:
    """Monotonic time in seconds, and callbacks at a time, on the engine's event loop."""

    loop: asyncio.AbstractEventLoop | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach the clock to the loop the engine runs on."""
        self.loop = loop

    def now(self) -> float:
        """The current time in seconds."""
        raise NotImplementedError

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Run `callback(*args)` on the loop once `now() >= when`."""
        raise NotImplementedError


class LoopClock(Clock):
    """Wall-clock deadlines on the event loop's own timer heap (`loop.call_at`)."""

    def now(self) -> float:
        """The loop's monotonic time."""
        return self.loop.time() if self.loop is not None else time.monotonic()

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Schedule on the loop's heap."""
        assert self.loop is not None, "clock is not bound to a loop"
        return self.loop.call_at(when, callback, *args)


class _VirtualTimer:
    __slots__ = ("args", "callback", "cancelled")

    def __init__(self, callback: Callable[..., Any], args: tuple[Any, ...]) -> None:
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock(Clock):
    """Time that moves only when a test calls `advance`; due callbacks run on the loop in order."""

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._heap: list[tuple[float, int, _VirtualTimer]] = []
        self._seq = itertools.count()
        self._loop_thread: int | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach to the engine loop; `advance` from another thread is marshalled onto it."""
        super().bind(loop)
        loop.call_soon_threadsafe(self._remember_thread)

    def _remember_thread(self) -> None:
        self._loop_thread = threading.get_ident()

    def now(self) -> float:
        """The virtual time."""
        return self._now

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any) -> TimerHandle:
        """Queue `callback` until virtual time reaches `when`."""
        timer = _VirtualTimer(callback, args)
        heapq.heappush(self._heap, (when, next(self._seq), timer))
        return timer

    def pending(self) -> int:
        """How many timers are armed and not cancelled."""
        return sum(1 for _, _, t in self._heap if not t.cancelled)

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, running every callback that falls due, in order.

        Safe from any thread: from outside the loop it runs on the loop and waits for it.
        """
        if seconds < 0:
            raise ValueError("time only moves forward")
        loop = self.loop
        if loop is not None and loop.is_running() and threading.get_ident() != self._loop_thread:
            done = threading.Event()

            def run() -> None:
                try:
                    self._advance(seconds)
                finally:
                    done.set()

            loop.call_soon_threadsafe(run)
            done.wait()
            return
        self._advance(seconds)

    def _advance(self, seconds: float) -> None:
        target = self._now + seconds
        while self._heap and self._heap[0][0] <= target:
            when, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback(*timer.args)
        self._now = target
