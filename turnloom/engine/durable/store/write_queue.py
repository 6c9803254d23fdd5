"""Snapshots waiting for their store's next grouped write, and what waits for each write.

A durable agent that comes to rest (its turn paused or completed) puts its snapshot here
instead of writing it at once, with what it would have told the host after the write. The
first snapshot put asks the loop for one flush (`call_soon`); by the time it runs, every agent
that came to rest in between has put its own, and all of them go to the store in one
`Store.save_many` (one SQLite transaction, one Redis script call). Then, agent by agent, what
waited runs: the host hears of a pause or a completion only once its snapshot is stored.

A second rest of the same agent before the flush replaces its snapshot (the newer state is
the one to keep) and keeps what waited for the first. Before anything that waited runs, each
agent (its `Writer`) hears whether its write is in (a write that only carries what changed,
`parts.SplitWrite`, depends on what the store holds). A write refused because another worker
holds the agent then runs the writer's `write_refused` first; a write that fails is logged
(`store.write_failed`) and what waited runs all the same, as when each write was its own.

What waits for a write is the writer's own record of what to tell (`Writer.tell`: for a
durable agent, the pause or the completion it has yet to report), handed back to it once the
group is in: one call per write, no callback object made per write. Once a group written in
a loop callback of its own is told, `after_told` runs: a server sends what the tells queued
for its clients there and then, not in the loop's next iteration behind the requests that
arrived meanwhile (their clients' next requests would wait with them).

Where a group is written: on the loop, at once, unless the store's writes spend their time waiting
rather than computing (an fsync at every commit, a Redis across the network): then a large group is
written by a thread of its own while the loop goes on (`OFF_LOOP_FROM`, `OFF_LOOP_WAIT_S`). A store
that can send a group ahead of its answer (`Store.send_ahead`: Redis) has it sent at once and the
answer read in a callback of the loop's next pass: what the loop has left to do in this pass (the
server's replies to its hosts) runs while the store writes, and the group is told as soon as that
is done, before anything that came in since. Handing a group to a thread and back costs the loop
more than the write itself when the write is a few hundred microseconds of CPU (SQLite in WAL mode,
a local Redis): two thread switches, the GIL taken back after every step of the write, and replies
held back until the group is in while the loop has nothing else to do.

This runs at every rest of every durable agent, so a write's record is a plain list (no
object with an `__init__` to run) and nothing is called that need not be.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import Any, Protocol

from ...support.logs import get_logger
from .parts import SplitWrite

log = get_logger("turnloom.store")

#: From how many writes a group may go off the loop (for a store that `writes_off_loop` and
#: waits, `OFF_LOOP_WAIT_S`): a smaller one is written on the loop, at once. Handing a group to
#: the writing thread and back pays off only if the loop has other work meanwhile: a busy
#: worker's groups are large (64 agents at once: about 30), one agent's lone rest is not.
OFF_LOOP_FROM = 8
#: How long a group's write must wait (its time less the CPU it used: an fsync, a network round
#: trip) to count as waiting; the groups go off the loop while most of them wait (a running
#: share over the groups written on the loop, so that a rare long one, such as SQLite's
#: checkpoint now and then, does not send them). While groups go off the loop, one in
#: `_MEASURE_EVERY` is written on the loop to measure again. 0: every large group goes off.
OFF_LOOP_WAIT_S = 0.0005
_MEASURE_EVERY = 32
#: The weight of the latest group in the running share of groups that waited.
_WAIT_WEIGHT = 0.125


class Store(Protocol):
    """What the queue needs of its store (`base.Store`, which holds its queue)."""

    queued: WriteQueue | None

    def save_many(
        self, writes: Sequence[tuple[int, bytes | SplitWrite, float | None]]
    ) -> list[int]:
        """Write them all; the ids refused."""

    def send_ahead(self, writes: Sequence[tuple[int, bytes | SplitWrite, float | None]]) -> bool:
        """Start writing them all without waiting; False: nothing started."""

    def read_sent(self) -> list[int]:
        """Finish the writes started: the ids refused."""


class Writer(Protocol):
    """Whoever queues a write (a durable agent): told how it went."""

    def write_done(self, kept: Any, written: bool) -> None:
        """Its write is in (`written`), or not (failed or refused); `kept` as given to `put`."""

    def write_refused(self) -> None:
        """Its write was refused: another worker holds the agent now."""

    def tell(self, told: Any) -> None:
        """Its write is in (or failed, or was refused): run what waited for it, `told`: what
        `put` was given, or an action `then` was, or a list of those in order."""


# A queued write's record, a list (made at every rest of every durable agent): the write as the
# store takes it (agent id, snapshot, deadline), its writer, what the writer keeps once it is in,
# and what waits for it (the writer's `told` record; a list once `then` added callables).
_AS_STORED, _WRITER, _KEPT, _TOLD = range(4)


class WriteQueue:
    """The snapshots one store has yet to write, flushed once per loop iteration.

    For a store whose writes can go off the loop (`Store.writes_off_loop`: file writes or a
    network round trip, made without the GIL) and whose writes wait (`OFF_LOOP_WAIT_S`: the
    loop would sit idle meanwhile), a large group (`OFF_LOOP_FROM`) is written by a thread of
    its own, one group at a time: the loop goes on meanwhile, and what comes to rest meanwhile
    is the next group, written once the one in flight is in. Ordering is kept: a group is told
    (its writers, then what waited) on the loop when it is in, before the next one is sent; an
    event of an agent whose write is in flight waits behind it as behind a queued one. A group
    sent ahead (`Store.send_ahead`) is in flight the same way until its answer is read, on the
    loop's next pass."""

    def __init__(
        self,
        store: Store,
        loop: asyncio.AbstractEventLoop,
        after_told: Callable[[], None] | None = None,
    ) -> None:
        """`after_told`: run once the writers of a group written in a loop callback of its own
        have been told (a server sends what they queued for their hosts at once)."""
        self.store = store
        self.loop = loop
        self.after_told = after_told
        #: The writes waiting, by agent id.
        self.pending: dict[int, list[Any]] = {}
        #: The group being written off the loop (empty when none is).
        self.flying: dict[int, list[Any]] = {}
        self._flight: Future[Collection[int]] | None = None
        #: Whether the group in flight (`flying`) was sent ahead, its answer read on the loop.
        self._sent = False
        self._thread: ThreadPoolExecutor | None = None
        self._flush_scheduled = False
        self._off_loop = getattr(store, "writes_off_loop", False)
        self._ahead = getattr(store, "sends_ahead", False)
        #: The share of the groups written on the loop that waited (running, 0 to 1).
        self.waiting = 0.0
        #: Groups sent off the loop since one was written on it (and measured).
        self._sent_off = 0

    def put(
        self,
        agent_id: int,
        document: bytes | SplitWrite,
        deadline: float | None,
        writer: Writer,
        kept: Any = None,
        told: Any = None,
    ) -> None:
        """Queue the agent's snapshot (replacing one it queued before) for the next flush; the
        `writer` is told how it went (with `kept`), then given `told` back (`Writer.tell`) once
        it is written (`told` None: nothing waits)."""
        queued = self.pending.get(agent_id)
        if queued is not None:
            waited = queued[_TOLD]
            if waited is not None and queued[_WRITER] is not writer:
                # Another object for the same agent (one restored in its place): what waited
                # is the first one's to run.
                waited = partial(queued[_WRITER].tell, waited)
            queued[_AS_STORED] = (agent_id, document, deadline)
            queued[_WRITER], queued[_KEPT] = writer, kept
            if told is not None:
                waited = told if waited is None else _joined(waited, told)
            queued[_TOLD] = waited
            return
        self.pending[agent_id] = [(agent_id, document, deadline), writer, kept, told]
        # `_in_flight()` inline: this runs at every rest of every durable agent.
        if not self._flush_scheduled and self._flight is None and not self._sent:
            self._flush_scheduled = True
            self.loop.call_soon(self._scheduled_flush)

    def then(self, agent_id: int, action: Callable[[], None]) -> bool:
        """Run `action` once the agent's latest snapshot is written (queued or in flight);
        False (and nothing done) if it has none on the way."""
        queued = self.pending.get(agent_id) or self.flying.get(agent_id)
        if queued is None:
            return False
        waited = queued[_TOLD]
        queued[_TOLD] = action if waited is None else _joined(waited, action)
        return True

    def holds(self, agent_id: int) -> bool:
        """Whether the agent has a snapshot on its way to the store (queued or in flight)."""
        return agent_id in self.pending or agent_id in self.flying

    def _in_flight(self) -> bool:
        return self._flight is not None or self._sent

    def _scheduled_flush(self) -> None:
        self._flush_scheduled = False
        if self._in_flight():  # the group in flight sends this one once it is in
            return
        self._write_pending()
        if self.after_told is not None:
            self.after_told()

    def _write_pending(self) -> None:
        """Write the queued group: off the loop if the store's writes wait (and the group is
        large), else at once."""
        off = self._off_loop and len(self.pending) >= OFF_LOOP_FROM
        if off and OFF_LOOP_WAIT_S > 0:  # 0: every large group, unmeasured
            off = self.waiting > 0.5 and self._sent_off < _MEASURE_EVERY
        if off:
            self._sent_off += 1
            self._send()
        elif not (self._ahead and self._send_ahead()):
            self.flush()

    def _send_ahead(self) -> bool:
        """Send the queued group ahead of its answer, read on the loop's next pass, if the
        store can (`Store.send_ahead`); whether it was sent."""
        if not self.pending:
            return True  # nothing to write
        writes = [queued[_AS_STORED] for queued in self.pending.values()]
        try:
            sent = self.store.send_ahead(writes)
        except Exception:  # written (or failed) as any group is, at once
            log.exception("store.send_failed", agent_ids=list(self.pending))
            return False
        if sent:
            self.flying, self.pending, self._sent = self.pending, {}, True
            self.loop.call_soon(self._read_sent)
        return sent

    def _read_sent(self) -> None:
        """Read the answer to the group sent ahead and tell it (unless a flush did), then
        write what queued meanwhile."""
        if not self._sent:
            return
        self._told_sent()
        if self.pending and not self._flush_scheduled and not self._in_flight():
            self._write_pending()
        if self.after_told is not None:
            self.after_told()

    def _told_sent(self) -> None:
        """Tell the group sent ahead how its write went, once its answer is read; how long
        the read waited counts as a group written on the loop does (`waiting`)."""
        batch, self.flying, self._sent = self.flying, {}, False
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            refused = self.store.read_sent()
        except Exception as exc:
            self._told(batch, (), exc)
            return
        self._measured(started, cpu)
        self._told(batch, refused, None)

    def _send(self) -> None:
        """Hand the queued group to the writing thread."""
        if not self.pending:
            return
        batch, self.pending = self.pending, {}
        writes = [queued[_AS_STORED] for queued in batch.values()]
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="turnloom-store")
        self.flying = batch
        flight = self._flight = self._thread.submit(self.store.save_many, writes)
        flight.add_done_callback(self._landed_elsewhere)

    def _landed_elsewhere(self, flight: Future[Collection[int]]) -> None:
        # On the writing thread: the rest is the loop's. A closed loop: whoever closes the
        # store flushes, and tells what was in flight then.
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(self._landed, flight)

    def _landed(self, flight: Future[Collection[int]]) -> None:
        if flight is not self._flight:  # already told by a flush that waited for it
            return
        batch, self.flying, self._flight = self.flying, {}, None
        self._told(batch, *_outcome(flight))
        if self.pending and not self._flush_scheduled and not self._in_flight():
            self._write_pending()
        if self.after_told is not None:
            self.after_told()

    def flush(self) -> None:
        """Write now every snapshot on its way (the group in flight is waited for first), and
        run what waited for each."""
        flight = self._flight
        if flight is not None:
            batch, self.flying, self._flight = self.flying, {}, None
            concurrent.futures.wait([flight])
            self._told(batch, *_outcome(flight))
        if self._sent:
            self._told_sent()
        if not self.pending:
            return
        # Taken whole first: what runs after the write may queue again (a registered tool that
        # resumes a pause at once), and that goes to the next flush.
        batch, self.pending = self.pending, {}
        writes = [queued[_AS_STORED] for queued in batch.values()]
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            refused = self.store.save_many(writes)
        except Exception as exc:
            self._told(batch, (), exc)
            return
        self._measured(started, cpu)
        self._told(batch, refused, None)

    def _measured(self, started: float, cpu: float) -> None:
        """Count a group written on the loop since `started` (`cpu`: the thread's time then)
        into the share of groups that waited."""
        waited = time.perf_counter() - started - (time.thread_time() - cpu) >= OFF_LOOP_WAIT_S
        self.waiting += (waited - self.waiting) * _WAIT_WEIGHT
        self._sent_off = 0

    def stop(self) -> None:
        """Flush, and end the writing thread (a later write starts another)."""
        self.flush()
        if self._thread is not None:
            self._thread.shutdown()
            self._thread = None

    @staticmethod
    def _told(
        batch: dict[int, list[Any]], refused: Collection[int], error: BaseException | None
    ) -> None:
        """Tell the writers of a written group how it went (the ids `refused`, or the write
        failed with `error`), then hand each what waited for its write."""
        items = batch.values()
        # Every agent learns what its store holds before anything runs that may write again
        # (a callback that makes another agent pause, and so flush, at once).
        if error is None and not refused:  # every write is in: most groups
            for queued in items:
                queued[_WRITER].write_done(queued[_KEPT], True)
            for queued in items:
                told = queued[_TOLD]
                if told is not None:
                    try:
                        queued[_WRITER].tell(told)
                    except Exception:  # one agent's failure must not keep the others' hosts waiting
                        log.exception("store.after_write_failed", agent_id=queued[_AS_STORED][0])
            return
        if error is not None:
            log.error("store.write_failed", agent_ids=list(batch), exc_info=error)
        refused = set(refused)
        for agent_id, queued in batch.items():
            queued[_WRITER].write_done(queued[_KEPT], error is None and agent_id not in refused)
        for agent_id, queued in batch.items():
            writer = queued[_WRITER]
            if agent_id in refused:
                try:
                    writer.write_refused()
                except Exception:
                    log.exception("store.after_write_failed", agent_id=agent_id)
            told = queued[_TOLD]
            if told is not None:
                try:
                    writer.tell(told)
                except Exception:
                    log.exception("store.after_write_failed", agent_id=agent_id)


def _joined(waited: Any, more: Any) -> list[Any]:
    """What waits for a write, `more` after `waited`: a list of what `Writer.tell` is given."""
    if waited.__class__ is list:
        waited.append(more)
        return waited
    return [waited, more]


def _outcome(flight: Future[Collection[int]]) -> tuple[Collection[int], BaseException | None]:
    error = flight.exception()
    return ((), error) if error is not None else (flight.result(), None)


def write_queue(
    store: Store, loop: asyncio.AbstractEventLoop, after_told: Callable[[], None] | None = None
) -> WriteQueue:
    """The write queue of `store` on `loop` (made on first use, with `after_told`: see
    `WriteQueue`; one on another loop, left from an engine that used the store before, is
    flushed and replaced)."""
    queue = store.queued
    if queue is None or queue.loop is not loop:
        if queue is not None:
            queue.stop()
        queue = store.queued = WriteQueue(store, loop, after_told)
    return queue
