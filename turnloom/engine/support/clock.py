"""Clocks: where pause deadlines and paused time come from.

The engine reads time and arms deadlines only through a `Clock`, so tests run timeouts on a
`VirtualClock` and never sleep on wall time. Deadlines are loop timers, not threads.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import math
import numbers
import threading
import time
from asyncio import BaseEventLoop
from collections.abc import Callable
from typing import Any, Protocol

from .guards import brief


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


def fast_now(clock: Clock) -> Callable[[], float]:
    """`clock.now`, or `time.monotonic` itself where that is all it returns (the loop clock of
    a standard asyncio loop, whose `time()` is `time.monotonic()`): what stamps a turn's
    events, with one C call instead of two Python ones, on the same clock."""
    loop = clock.loop
    if type(clock) is LoopClock and loop is not None and type(loop).time is BaseEventLoop.time:
        return time.monotonic
    return clock.now


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
        self._now = _seconds(start, "VirtualClock(start)")
        if self._now < 0:
            raise ValueError(f"VirtualClock(start): time starts at >= 0, got {brief(start)}")
        self._heap: list[tuple[float, int, _VirtualTimer]] = []
        self._seq = itertools.count()

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

        Safe from any thread: from outside the loop it runs on the loop and waits for it, and
        an exception raised there (by a due callback) is raised here, time stopping where that
        callback was due. `seconds` must be a finite real >= 0 that keeps the time finite
        (TypeError / ValueError before anything runs): a NaN or infinite time would compare
        false with every deadline, which then never fires.
        """
        step = _seconds(seconds, "VirtualClock.advance")
        if step < 0:
            raise ValueError(f"VirtualClock.advance: time only moves forward, got {brief(seconds)}")
        if not math.isfinite(self._now + step):
            raise ValueError(
                f"VirtualClock.advance: {brief(seconds)} s would take the time past a float's range"
            )
        loop = self.loop
        # Outside the loop (not in a callback or a coroutine of it), the timers' callbacks must
        # run on it: hand them over and wait.
        if loop is not None and loop.is_running() and asyncio._get_running_loop() is not loop:
            done = threading.Event()
            failure: list[BaseException] = []

            def run() -> None:
                try:
                    self._advance(step)
                except BaseException as exc:  # handed to the caller, not the loop's handler
                    failure.append(exc)
                finally:
                    done.set()

            loop.call_soon_threadsafe(run)
            done.wait()
            if failure:
                raise failure[0]
            return
        self._advance(step)

    def _advance(self, seconds: float) -> None:
        target = self._now + seconds
        while self._heap and self._heap[0][0] <= target:
            when, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback(*timer.args)
        self._now = target


def _seconds(value: object, what: str) -> float:
    """`value` as a finite float of seconds (TypeError for a non-number, ValueError else)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{what}: seconds must be a real number, got {type(value).__name__}")
    try:
        seconds = float(value)
    except (OverflowError, ValueError):
        seconds = math.inf
    if not math.isfinite(seconds):
        raise ValueError(f"{what}: seconds must be finite, got {brief(value)}")
    return seconds
