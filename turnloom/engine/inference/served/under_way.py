"""What a served model has under way: its generations and scorings, counted so that a host can
wait until none is (`ServedModel.wait_idle`)."""

from __future__ import annotations

import threading


class UnderWay:
    """A count of requests under way and a wait for it to reach zero, on the model's lock
    (taken from the engine loop and from a host's thread)."""

    __slots__ = ("_count", "_idle")

    def __init__(self, lock: threading.Lock) -> None:
        self._count = 0
        self._idle = threading.Condition(lock)

    def begin(self) -> None:
        """One more is under way."""
        with self._idle:
            self._count += 1

    def end(self) -> None:
        """One is over (a cancelled one once its stream is closed and its record kept)."""
        with self._idle:
            self._count -= 1
            self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until none is under way; False if `timeout` seconds passed first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._count == 0, timeout)
