"""The pages watching an inspector: one bounded queue of messages each, and the agent each
page shows."""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from typing import Any

Message = dict[str, Any]


class Watcher:
    """One page: its queue of message lists, and the agent it shows (None: none chosen)."""

    __slots__ = ("chosen", "queue")

    def __init__(self, max_batches: int) -> None:
        self.queue: asyncio.Queue[list[Message]] = asyncio.Queue(max_batches)
        self.chosen: int | None = None

    def put(self, message: Message) -> None:
        """Queue `message`; a page that stops reading is told to reload (`resync`) instead of
        holding an ever longer queue."""
        queue = self.queue
        if queue.full():
            while not queue.empty():
                queue.get_nowait()
            queue.put_nowait([{"type": "resync"}])
        else:
            queue.put_nowait([message])


class Watchers:
    """The pages watching."""

    def __init__(self, max_batches: int = 256) -> None:
        self._watchers: set[Watcher] = set()
        self._max = max_batches

    def __len__(self) -> int:
        return len(self._watchers)

    def shown(self) -> set[int]:
        """The agents the pages show."""
        return {w.chosen for w in self._watchers if w.chosen is not None}

    def join(self) -> Watcher:
        """A new page."""
        watcher = Watcher(self._max)
        self._watchers.add(watcher)
        return watcher

    def leave(self, watcher: Watcher) -> None:
        """A page went away."""
        self._watchers.discard(watcher)

    def push_changes(self, message: Message, touched: Collection[int]) -> None:
        """Send a `changed` message (its `agents` rows and `gone` ids) to every page, marked
        `chosen` for a page whose agent is among `touched` (it then fetches that agent again);
        a page it has nothing for is not sent it."""
        news = bool(message["agents"] or message["gone"])
        for watcher in self._watchers:
            if watcher.chosen is not None and watcher.chosen in touched:
                watcher.put({**message, "chosen": True})
            elif news:
                watcher.put(message)
