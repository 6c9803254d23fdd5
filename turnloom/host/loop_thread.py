"""An event loop on a daemon thread that a blocking caller drives itself while it waits.

The embedded engine runs its core on this loop, the wire client its connection, a background
server its listener. Handing each blocking call to the loop thread and waiting for the answer
costs two thread wake-ups per call (~120 µs a call on a 2-core VM, more than a whole turn's
work), so `block` does not hand over: the calling thread takes the loop's lock and runs the
loop's iterations itself until its call is answered. The loop thread holds the same lock
whenever it is not asleep in `select`, so exactly one thread runs the loop at any moment: the
engine still needs no other locks, and callbacks never run two at once.

Callbacks therefore run on whichever thread is running the loop: the loop thread, or, during a
blocking call, the calling thread. `block` refuses a call made from inside a loop iteration
(from a callback) at once: it would wait for an answer that only its own thread can
produce.

The price is four private names of CPython's selector loop (`_run_once`, `_ready`, `_scheduled`,
`_write_to_self`, in every CPython from 3.11 on): where they are missing (`DRIVE_ON_CALLER`), or
the loop runs in debug mode (whose thread checks would object), `block` hands the call over.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import numbers
import selectors
import threading
import time
from collections.abc import Coroutine
from typing import Any, Generic, TypeVar

from ..engine.support.guards import brief
from ..protocol.errors import ErrorCode, TurnloomError

T = TypeVar("T")


class BlockingCallInCallback(RuntimeError):
    """A blocking call was made on the engine's loop thread (from a callback)."""


def wait_limit(timeout: Any, name: str) -> float | None:
    """The seconds `name()` may wait for its answer: None or `math.inf` = no limit.

    Checked before the call is handed to the loop, so a refused timeout leaves the call undone:
    TypeError for a non-number, ValueError for a negative, NaN or too-large one.
    """
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(
            f"{name}(): timeout must be a number of seconds or None, "
            f"got {type(timeout).__name__} {brief(timeout)}"
        )
    try:
        seconds: float | None = float(timeout)
    except (OverflowError, ValueError):  # an int too large for a float
        seconds = None
    if seconds == math.inf:
        return None
    if seconds is None or not 0 <= seconds <= threading.TIMEOUT_MAX:  # NaN fails this too
        raise ValueError(
            f"{name}(): timeout must be between 0 and {threading.TIMEOUT_MAX:.0f} seconds, or "
            f"None or math.inf to wait without limit; got {brief(timeout)}"
        )
    return seconds


class _LoopLock:
    """The right to run the loop, and which thread has it (to refuse calls from callbacks)."""

    __slots__ = ("_lock", "owner")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.owner: int | None = None

    def acquire(self, timeout: float | None = None) -> bool:
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            return False
        self.owner = threading.get_ident()
        return True

    def release(self) -> None:
        self.owner = None
        self._lock.release()


class _SharedSelector(selectors.DefaultSelector):
    """The loop's selector, where whoever runs the loop lets go of it to wait.

    Only the loop thread ever sleeps in the kernel's `select`: threads waiting on one epoll
    are woken one at a time, so a caller asleep there could miss the wake-up meant for it.
    A caller polls (timeout 0) and, when it would have to wait, waits for its own call's task
    to end instead while the loop thread watches the I/O. The selector also notes until when
    the loop thread sleeps, so a caller that armed an earlier timer knows to wake it.
    """

    def __init__(self, runner: LoopThread) -> None:
        super().__init__()
        self._runner = runner

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        runner = self._runner
        if threading.get_ident() != runner.thread.ident:
            if timeout == 0:
                return super().select(0)
            runner.caller_waits(timeout)
            return []
        runner.loop_thread_wakes_at = math.inf if timeout is None else time.monotonic() + timeout
        scheduled = runner.loop._scheduled  # type: ignore[attr-defined]
        runner.loop_thread_sleeps_for = scheduled[0] if scheduled else None
        runner.lock.release()
        try:
            return super().select(timeout)
        finally:
            runner.loop_thread_wakes_at = -math.inf  # awake: it will look again
            runner.loop_thread_sleeps_for = None
            runner.lock.acquire()


class LoopThread:
    """An asyncio loop on its own daemon thread, which blocking callers drive themselves."""

    def __init__(self, name: str = "turnloom-loop") -> None:
        self.lock = _LoopLock()
        self.loop = asyncio.SelectorEventLoop(_SharedSelector(self))
        #: When the loop thread's `select` returns by itself (-inf: it is not asleep).
        self.loop_thread_wakes_at = -math.inf
        #: The timer it sleeps until, if any: one a caller need not wake it for.
        self.loop_thread_sleeps_for: asyncio.TimerHandle | None = None
        #: Per calling thread: its call, and the event the call's end sets.
        self._driven = threading.local()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        self.lock.acquire()
        try:
            self.loop.run_forever()
        finally:
            self.lock.release()

    def in_loop(self) -> bool:
        """Whether the caller is running the loop now (in a callback): it must not block."""
        return self.lock.owner == threading.get_ident()

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the loop; a future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def block(self, coro: Coroutine[Any, Any, T], name: str, timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait (BlockingCallInCallback in a callback, 1003).

        `timeout` is checked first (see `wait_limit`): a refused one runs nothing.
        """
        if not asyncio.iscoroutine(coro):  # as run_coroutine_threadsafe: it could never end
            raise TypeError(f"{name}(): a coroutine is required, got {type(coro).__name__}")
        try:
            timeout = wait_limit(timeout, name)
        except (TypeError, ValueError):
            coro.close()
            raise
        if self.in_loop():
            coro.close()
            thread = threading.current_thread().name
            raise BlockingCallInCallback(
                f"{name}() blocks until the engine loop answers it, but it was called from a "
                f"callback, i.e. on the thread running that loop ({thread!r}), which would "
                f"then never answer it; use {name}_async() from callbacks"
            )
        if not DRIVE_ON_CALLER or self.loop.get_debug():
            return self._hand_over(coro, name, timeout)
        if not self.lock.acquire(timeout):  # the loop is busy past the caller's patience
            coro.close()
            raise _timed_out(name, timeout)
        try:
            return self._drive(coro, name, timeout)
        finally:
            self._hand_back()
            self.lock.release()

    def _hand_over(self, coro: Coroutine[Any, Any, T], name: str, timeout: float | None) -> T:
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise _timed_out(name, timeout) from None

    def _drive(self, coro: Coroutine[Any, Any, T], name: str, timeout: float | None) -> T:
        loop = self.loop
        previous = asyncio._get_running_loop()
        asyncio._set_running_loop(loop)
        # Calls keep their order: behind what other threads queued before this one (`*_async`
        # calls, whose tasks are made by a queued callback), the task is made by a queued
        # callback too, as `run_coroutine_threadsafe` does; with nothing queued, at once.
        call = _Call(loop, coro)
        if loop._ready:  # type: ignore[attr-defined]
            loop.call_soon(call.start)
        else:
            call.start()
        alarm = None
        try:
            if timeout is not None:
                deadline = loop.time() + timeout
                alarm = loop.call_at(deadline, _nothing)  # so the wait ends by then
            self._driven.call = call
            self._driven.ended = None  # made when the caller first has to wait
            while not call.done():
                if timeout is not None and loop.time() >= deadline:
                    call.cancel()
                    raise _timed_out(name, timeout)
                loop._run_once()  # type: ignore[attr-defined]
            # Run what the answer left ready (the events after it), so the loop thread need
            # not be woken for it.
            for _ in range(_SETTLE_ITERATIONS):
                if not loop._ready:  # type: ignore[attr-defined]
                    break
                loop._run_once()  # type: ignore[attr-defined]
            return call.result()
        finally:
            self._driven.call = self._driven.ended = None
            if alarm is not None:
                alarm.cancel()
            asyncio._set_running_loop(previous)

    def caller_waits(self, timeout: float | None) -> None:
        """Let go of the loop until the calling thread's task ends or `timeout` passes.

        Called by the selector inside the caller's loop iteration, with the lock held.
        """
        driven = self._driven
        if driven.ended is None:
            driven.ended = driven.call.on_done(threading.Event())
        self._hand_back()  # the loop thread must be awake for what the task waits on
        self.lock.release()
        try:
            driven.ended.wait(timeout)
        finally:
            self.lock.acquire()

    def _wake(self) -> None:
        self.loop._write_to_self()  # type: ignore[attr-defined]

    def _hand_back(self) -> None:
        # The loop thread computed how long to sleep before this call armed timers or left
        # callbacks ready: wake it if it would otherwise sleep past them. Not for the very
        # timer it sleeps until: its wake-up time, taken a moment after the timer's, is a
        # hair later, and waking it for that on every call cost a fifth of a blocking turn.
        loop = self.loop
        ready = loop._ready  # type: ignore[attr-defined]
        scheduled = loop._scheduled  # type: ignore[attr-defined]
        if ready or (
            scheduled
            and scheduled[0] is not self.loop_thread_sleeps_for
            and scheduled[0].when() < self.loop_thread_wakes_at
        ):
            self._wake()

    def stop(self) -> None:
        """Stop the loop and join its thread."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        # From a callback (this thread runs the loop), the loop thread could not finish.
        if threading.current_thread() is not self.thread and not self.in_loop():
            self.thread.join()
            self.loop.close()


class _Call(Generic[T]):
    """A blocking call's coroutine, and the task that runs it once its turn in the queue comes."""

    __slots__ = ("_coro", "_ended", "_loop", "task")

    def __init__(self, loop: asyncio.AbstractEventLoop, coro: Coroutine[Any, Any, T]) -> None:
        self._loop = loop
        self._coro: Coroutine[Any, Any, T] | None = coro
        self._ended: threading.Event | None = None
        self.task: asyncio.Task[T] | None = None

    def start(self) -> None:
        if self._coro is None:  # cancelled before its turn
            return
        self.task = self._loop.create_task(self._coro)
        self._coro = None
        if self._ended is not None:
            self.task.add_done_callback(lambda _: self._ended.set())  # type: ignore[union-attr]

    def done(self) -> bool:
        return self.task is not None and self.task.done()

    def result(self) -> T:
        assert self.task is not None
        return self.task.result()

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
        elif self._coro is not None:
            self._coro.close()
            self._coro = None

    def on_done(self, ended: threading.Event) -> threading.Event:
        """Set `ended` when the call's task ends (the caller waits on it)."""
        self._ended = ended
        if self.task is not None:
            self.task.add_done_callback(lambda _: ended.set())
        return ended


def _nothing() -> None:
    """A timer that only makes the loop's `select` return by its deadline."""


def _timed_out(name: str, timeout: float | None) -> TurnloomError:
    return TurnloomError(ErrorCode.Timeout, f"{name}() got no answer within {timeout} s")


#: Iterations a caller runs after its answer to finish what the answer left ready.
_SETTLE_ITERATIONS = 4

#: Whether this Python's selector loop has what `block` needs to drive it from the caller.
DRIVE_ON_CALLER = all(
    hasattr(asyncio.SelectorEventLoop, name) for name in ("_run_once", "_write_to_self")
) and hasattr(asyncio, "_set_running_loop")
