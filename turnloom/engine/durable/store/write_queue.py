"""Snapshots waiting for their store's next grouped write, and what waits for each write.

A durable agent that comes to rest (its turn paused or completed) puts its snapshot here
instead of writing it at once, with what it would have told the host after the write. The
first snapshot put asks the loop for one flush (`call_soon`); by the time it runs, every agent
that came to rest in between has put its own, and all of them go to the store in one
`Store.save_many` (one SQLite transaction, one Redis script call). Then, agent by agent, what
waited runs: the host hears of a pause or a completion only once its snapshot is stored.

A second rest of the same agent before the flush replaces its snapshot (the newer state is
the one to keep) and keeps what waited for the first. A write refused because another worker
holds the agent runs the agent's `refused` first; a write that fails is logged
(`store.write_failed`) and what waited runs all the same, as when each write was its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ...support.logs import get_logger

log = get_logger("turnloom.store")


class Store(Protocol):
    """What the queue needs of its store (`base.Store`, which holds its queue)."""

    queued: WriteQueue | None

    def save_many(self, writes: Sequence[tuple[int, bytes, float | None]]) -> list[int]:
        """Write them all; the ids refused."""


@dataclass(slots=True)
class _Queued:
    document: bytes
    deadline: float | None
    refused: Callable[[], None]
    then: list[Callable[[], None]] = field(default_factory=list)


class WriteQueue:
    """The snapshots one store has yet to write, flushed once per loop iteration."""

    def __init__(self, store: Store, loop: asyncio.AbstractEventLoop) -> None:
        self.store = store
        self.loop = loop
        self._queued: dict[int, _Queued] = {}
        self._flush_scheduled = False

    def put(
        self,
        agent_id: int,
        document: bytes,
        deadline: float | None,
        refused: Callable[[], None],
    ) -> None:
        """Queue the agent's snapshot (replacing one it queued before) for the next flush;
        `refused` runs if the store refuses it (`LeaseLost`)."""
        queued = self._queued.get(agent_id)
        if queued is not None:
            queued.document, queued.deadline, queued.refused = document, deadline, refused
            return
        self._queued[agent_id] = _Queued(document, deadline, refused)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self.loop.call_soon(self._scheduled_flush)

    def then(self, agent_id: int, action: Callable[[], None]) -> bool:
        """Run `action` once the agent's queued snapshot is written; False (and nothing done)
        if it has none queued."""
        queued = self._queued.get(agent_id)
        if queued is None:
            return False
        queued.then.append(action)
        return True

    def holds(self, agent_id: int) -> bool:
        """Whether the agent has a snapshot waiting to be written."""
        return agent_id in self._queued

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        self.flush()

    def flush(self) -> None:
        """Write every queued snapshot in one `save_many`, then run what waited for each."""
        if not self._queued:
            return
        # Taken whole first: what runs after the write may queue again (a registered tool that
        # resumes a pause at once), and that goes to the next flush.
        batch, self._queued = self._queued, {}
        refused: set[int] = set()
        try:
            refused = set(
                self.store.save_many(
                    [(agent_id, item.document, item.deadline) for agent_id, item in batch.items()]
                )
            )
        except Exception:
            log.exception("store.write_failed", agent_ids=list(batch))
        for agent_id, item in batch.items():
            actions = [item.refused, *item.then] if agent_id in refused else item.then
            for action in actions:
                try:
                    action()
                except Exception:  # one agent's failure must not keep the others' hosts waiting
                    log.exception("store.after_write_failed", agent_id=agent_id)


def write_queue(store: Store, loop: asyncio.AbstractEventLoop) -> WriteQueue:
    """The write queue of `store` on `loop` (made on first use; one on another loop, left
    from an engine that used the store before, is flushed and replaced)."""
    queue = store.queued
    if queue is None or queue.loop is not loop:
        if queue is not None:
            queue.flush()
        queue = store.queued = WriteQueue(store, loop)
    return queue
