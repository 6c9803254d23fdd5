"""An event loop on a daemon thread, and the bridge that runs coroutines on it.

The embedded engine runs its core here, the wire client its connection, a background server
its listener. Callbacks run on this thread, so `block` refuses to wait on it (R-H3): a blocking
call made from a callback would wait for the very thread it blocks.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import math
import numbers
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from ..engine.guards import brief
from ..protocol.errors import ErrorCode, TurnloomError

T = TypeVar("T")


class BlockingCallInCallback(RuntimeError):
    """A blocking call was made on the engine's loop thread (from a callback)."""


def wait_limit(timeout: Any, name: str) -> float | None:
    """The seconds `name()` may wait for its answer: None or `math.inf` = no limit.

    Checked before the call is handed to the loop, so a refused timeout leaves the call undone
    (R-E1): TypeError for a non-number, ValueError for a negative, NaN or too-large one.
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


class LoopThread:
    """An asyncio loop running forever on its own daemon thread."""

    def __init__(self, name: str = "turnloom-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def on_loop_thread(self) -> bool:
        """Whether the caller runs on the loop thread (in a callback)."""
        return threading.current_thread() is self.thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the loop; a future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def block(self, coro: Coroutine[Any, Any, T], name: str, timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait (BlockingCallInCallback on the loop thread, 1003).

        `timeout` is checked first (see `wait_limit`): a refused one runs nothing.
        """
        try:
            timeout = wait_limit(timeout, name)
        except (TypeError, ValueError):
            coro.close()
            raise
        if self.on_loop_thread():
            coro.close()
            raise BlockingCallInCallback(
                f"{name}() blocks until its answer arrives on the loop thread "
                f"{self.thread.name!r}, but it was called on that thread (from a callback), "
                f"which would then never answer it; use {name}_async() from callbacks"
            )
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TurnloomError(
                ErrorCode.Timeout, f"{name}() got no answer within {timeout} s"
            ) from None

    def stop(self) -> None:
        """Stop the loop and join its thread."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.on_loop_thread():
            self.thread.join()
            self.loop.close()
