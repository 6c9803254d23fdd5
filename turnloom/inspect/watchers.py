"""The pages watching an inspector: one bounded queue of messages each."""

from __future__ import annotations

import asyncio
from typing import Any

Message = dict[str, Any]


class Watchers:
    """The pages watching, each a queue of message lists; a page that stops reading gets told
    to reload (`resync`) instead of holding an ever longer queue."""

    def __init__(self, max_batches: int = 256) -> None:
        self._queues: set[asyncio.Queue[list[Message]]] = set()
        self._max = max_batches

    def __len__(self) -> int:
        return len(self._queues)

    def join(self) -> asyncio.Queue[list[Message]]:
        """A new page's queue."""
        queue: asyncio.Queue[list[Message]] = asyncio.Queue(self._max)
        self._queues.add(queue)
        return queue

    def leave(self, queue: asyncio.Queue[list[Message]]) -> None:
        """A page went away."""
        self._queues.discard(queue)

    def push(self, message: Message) -> None:
        """Send `message` to every page."""
        for queue in self._queues:
            if queue.full():
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait([{"type": "resync"}])
            else:
                queue.put_nowait([message])
