"""The durable agent: an `AgentCore` that writes its snapshot to the engine's store whenever it
comes to rest (docs/reference/durability.md#when-an-agent-is-written).

Only engines with a store make these, so an engine without one runs the plain `AgentCore` and
pays nothing. The writes, each a whole snapshot replacing the last:

* the turn paused: before the host is told (`on_paused`), so a pause the host saw is stored;
* the turn completed: after the dialog and last result are booked, before the host is told;
* params changed; the agent created or restored;
* destroyed: the stored snapshot is deleted.

The writes at a pause and at a completion are grouped: the snapshot goes to the store's write
queue (`store.write_queue`), which writes every agent that came to rest in the same loop
iteration at once, and only then is the host told (its callbacks, its frames, the calls that
wait for the step, `wait` included). The other writes are made at once.

Never per token: streaming text and tool-call events write nothing. A resume writes nothing
either: until the resumed turn pauses or completes, its last pause is the state to return to.
A failing write is logged (`store.write_failed`) and the turn goes on; the store then holds the
agent's previous complete write.

With a shared store a write also carries the pause deadline, so any worker can fire it;
a write refused because another worker holds the agent now (`LeaseLost`) ends this copy
(`EngineCore.lease_lost`). An agent marked `release_at_rest` is let go (`EngineCore.evict`) as
soon as it has been written at a pause or a completion: a server's agent no session holds.
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from ...states import InputPolicy, TurnState
from ..graph.params import NodeParams
from ..support.logs import get_logger
from ..turns.agent import KEPT_STATUSES, AgentCore
from ..turns.results import Step, TurnResult
from ..turns.turn import Turn
from .dialog_parts import StoredDialog, split_snapshot
from .head import HeadPacker
from .packed_dialog import PackedDialog, packed_snapshot
from .snapshot import absolute_offset, pause_deadline
from .store.base import Store
from .store.write_queue import WriteQueue, write_queue

log = get_logger("turnloom.store")

#: What a pause tells once its write is in (`DurableAgentCore.tell`): the turn, its pause's
#: number, the `on_paused` arguments and the waiters to settle.
_PausedTold = tuple[Turn, int, tuple[Any, ...], "list[asyncio.Future[Step]] | None"]


class DurableAgentCore(AgentCore):
    """An agent written through to `store` (None once its engine closes: it then writes no
    more, and its stored snapshot stays for the next engine)."""

    __slots__ = ("head", "packed_dialog", "release_at_rest", "store", "stored_dialog", "writes")

    store: Store | None
    #: Let go of the agent once it is written at rest (a shared store's agent nobody holds).
    release_at_rest: bool
    #: The store's write queue once this agent has used it (kept when the store is let go, so
    #: a destroy can still write what is queued before the agent goes).
    writes: WriteQueue | None
    #: A long dialog as packed by the last write (the next packs only what joined it since),
    #: for a store that takes whole snapshots.
    packed_dialog: PackedDialog | None
    #: What the store holds of the dialog, for one that keeps it apart (None: not known).
    stored_dialog: StoredDialog | None
    #: Packs the snapshot's head for such a store (made at its first write).
    head: HeadPacker | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.writes = None
        self.packed_dialog = None
        self.stored_dialog = None
        self.head = None

    def save(self) -> None:
        """Write the agent's snapshot to its store now, with whatever else is queued there (a
        failure is logged, not raised)."""
        writes = self._queue_write(None)
        if writes is not None:
            writes.flush()

    def _queue_write(self, told: Any) -> WriteQueue | None:
        """Queue the agent's snapshot for the store's next grouped write, `told` (see `tell`)
        to be told once it is in; the queue, or None if there is no store or the snapshot
        failed (logged)."""
        store = self.store
        if store is None:
            return None
        writes = self.writes
        if writes is None or writes.store is not store:
            writes = self.writes = write_queue(store, self.runtime.loop, self.runtime.rests_told)
            self.stored_dialog = None  # another store: what it holds is not known
        try:
            if store.keeps_dialog_apart:
                head = self.head
                if head is None:
                    head = self.head = HeadPacker()
                document, after = split_snapshot(self, self.stored_dialog, head)
                # The paused turn's deadline as the head holds it (a completion's has none).
                deadline = head.deadline if store.shared else None
                writes.put(self.agent_id, document, deadline, self, after, told)
            else:
                deadline = None
                if store.shared and self.turn.pause is not None:  # a completion's turn has none
                    deadline = pause_deadline(self.turn, absolute_offset(self.runtime.clock))
                whole, self.packed_dialog = packed_snapshot(self, self.packed_dialog)
                writes.put(self.agent_id, whole, deadline, self, None, told)
        except Exception:
            log.exception("store.write_failed", agent_id=self.agent_id)
            return None
        return writes

    def write_done(self, kept: StoredDialog | None, written: bool) -> None:
        """Its queued write is in (`written`) or not: `kept` is what the store holds of its
        dialog once it is. Not written (failed, or refused), the store may hold either side of
        it, so the next write carries the dialog whole."""
        self.stored_dialog = kept if written else None

    def write_refused(self) -> None:
        """Its write was refused: another worker holds it now, and this copy ends."""
        self.runtime.lease_lost(self)

    def tell(self, told: Any) -> None:
        """Its write is in (or failed): tell the host what waited for it. `told` is what the
        rest recorded, a tuple rather than a bound callable (one is made at every rest of
        every durable agent): a pause's `(turn, pause_seq, args, waiters)` or a completion's
        `(turn, result)`; or a callable (an event that came while the write was on its way);
        or a list of those, in order."""
        kind = told.__class__
        if kind is tuple:
            if len(told) == 2:
                self._tell_completed(told)
            else:
                self._tell_paused(told)
        elif kind is list:
            for item in told:
                try:
                    self.tell(item)
                except Exception:  # the next ones are still told
                    log.exception("store.after_write_failed", agent_id=self.agent_id)
        else:
            told()

    def _flush(self) -> None:
        if self.writes is not None:
            self.writes.flush()

    def write_queued(self) -> None:
        """Write the agent's rest now if it waits for its store's grouped write (and the rest
        of that group with it), and tell the host of it: called before an answer that reads
        the agent's state, which must not tell of a rest the store does not hold yet."""
        writes = self.writes
        if writes is not None and writes.holds(self.agent_id):
            writes.flush()

    def saved_at_rest(self) -> None:
        """Written at a pause or a completion: let go now if so marked."""
        if self.release_at_rest and self.store is not None:
            self.runtime.loop.call_soon(self._release_if_still_marked)

    def _release_if_still_marked(self) -> None:
        # Not if a session attached it meanwhile (that clears the mark).
        if self.release_at_rest:
            self.runtime.evict(self)

    def unload(self) -> None:
        """Leave this engine's memory as the agent stands, at rest (idle or paused): a paused
        turn's timers and stall watch are let go without ending it, nothing is written or told.
        The stored snapshot is the agent from now on, for whichever worker takes it next."""
        self._flush()  # its last rest first: the lease is released next
        turn = self.turn
        for timer in turn.timers:
            timer.cancel()
        turn.timers = ()
        if turn.pause is not None:
            self.runtime.stall_watch.ended(turn.pause)
            turn.pause = None
        self.store = None
        self.destroyed = True
        self.runtime.forget(self.agent_id)
        self._drop_kept()
        self.let_go_of_dialog()

    def _drop_kept(self) -> None:
        # What the writes keep refers to the dialog: dropped first, so that a long dialog is
        # taken apart a step per loop iteration (`let_go_of_dialog`), not freed all at once
        # with this object later.
        self.stored_dialog = self.packed_dialog = None

    def notify(self, method: str, *args: Any) -> None:
        """At a pause: queue the snapshot, and tell the host once it is written. Any other
        event of an agent whose snapshot is on its way (queued or in flight) waits behind it,
        so events keep their order."""
        if method == "on_paused":
            turn = self.turn
            # The caller settles the turn's waiters right after this: they are settled after
            # the write instead (`_tell_paused`).
            waiters, turn.waiters = turn.waiters, None
            if self._queue_write((turn, turn.pause_seq, args, waiters)) is not None:
                return
            turn.waiters = waiters
        else:
            writes = self.writes
            # Queued, or in flight in a group written off the loop: either way not stored yet.
            if writes is not None and writes.holds(self.agent_id):
                writes.then(self.agent_id, partial(AgentCore.notify, self, method, *args))
                return
        AgentCore.notify(self, method, *args)

    def _tell_paused(self, told: _PausedTold) -> None:
        """The pause is stored: tell the host, then settle the waiters as the executor's
        `_pause` does (unless the host's callback resumed it at once: registered tools)."""
        turn, seq, args, waiters = told
        # The step is made only for waiters: a server's turns have none (its frames tell).
        step = None
        if waiters:
            step = Step(pause=args[0])
            pause = turn.pause
            if pause is not None and pause.seq == seq:  # still parked there
                turn.waiters = waiters + (turn.waiters or [])
            else:  # resumed before the write was in: the pause is what they were owed
                for waiter in waiters:
                    if not waiter.done():
                        waiter.set_result(step)
        if self.release_at_rest:
            self.saved_at_rest()
        AgentCore.notify(self, "on_paused", *args)
        pause = turn.pause
        if turn.waiters and pause is not None and pause.seq == seq:
            turn.settle_waiters(step or Step(pause=args[0]))

    def turn_completed(self, turn: Turn, result: TurnResult) -> None:
        """Book the completion, queue the snapshot, and tell the host once it is written (as
        `AgentCore.turn_completed` does at once)."""
        # AgentCore's three booking lines, repeated rather than split into a hook there: the
        # plain agent's completion stays one call.
        if result.status in KEPT_STATUSES:
            self.dialog.append(turn.interaction)
        self.turn = Turn()
        self.last_result = result
        told = (turn, result)
        if self._queue_write(told) is None:
            self._tell_completed(told)
        if self.queue:
            # The next waiting message starts now, as on an agent without a store: a message
            # sent before the completion is stored meets its turn, not an idle agent it would
            # start ahead of those waiting. What the turn tells the host waits behind that
            # write (`notify`), and its snapshot (taken above) still holds the message.
            self.start_queued()

    def _tell_completed(self, told: tuple[Turn, TurnResult]) -> None:
        turn, result = told
        if self.release_at_rest:
            self.saved_at_rest()
        AgentCore.notify(self, "on_answer_text", result.text, False, True)
        AgentCore.notify(self, "on_turn_complete", result)
        idle = self.turn
        # The step is made only for waiters: a server's turns have none (its frames tell).
        settle_idle = idle is not turn and idle.waiters and idle.state is TurnState.IDLE
        if turn.waiters or settle_idle:
            step = Step(result=result)
            turn.settle_waiters(step)
            if settle_idle:
                idle.settle_waiters(step)  # `wait` calls made while the write was on its way

    def wait(self) -> Step | None:
        """As `AgentCore.wait`, but None (wait) while the agent's last rest is on its way to
        the store, queued or in flight: no step reaches the host before it is stored. (The
        step it waits for is then the one after that rest: a message that was waiting has
        already started its turn, `turn_completed`.)"""
        if self.writes is not None and self.writes.holds(self.agent_id):
            self.check_alive("wait")
            return None
        return super().wait()

    def set_params(self, node_name: str, proposed: NodeParams) -> None:
        """Change the params, then save."""
        super().set_params(node_name, proposed)
        self.save()

    def set_input_policy(self, policy: InputPolicy | str) -> None:
        """Change the input policy, then save (a restored agent keeps it)."""
        super().set_input_policy(policy)
        self.save()

    def send_message(
        self, text: str, waiter: asyncio.Future[Step] | None = None, inline: bool = False
    ) -> Turn:
        """As `AgentCore.send_message`; a message queued behind a paused turn is saved with it
        (nothing else would write the agent until the game resumes it): at once, as a change
        of params is, or with the pause's own write if that is still on its way. Behind a
        running turn, the turn's next rest writes it."""
        queued = len(self.queue or ())
        turn = super().send_message(text, waiter, inline)
        if len(self.queue or ()) > queued and turn.state is TurnState.PAUSED:
            writes = self.writes
            if writes is not None and writes.holds(self.agent_id):
                self._queue_write(None)  # replaces the snapshot on its way, or follows it
            else:
                self.save()
        return turn

    def destroy(self) -> None:
        """Destroy the agent and delete its stored snapshot (the cancel writes nothing)."""
        self.check_alive("destroy")  # before the store is let go
        self._flush()  # what is queued is written, and told, before the agent goes
        if self.destroyed:  # by a callback told just now
            return
        store, self.store = self.store, None
        self._drop_kept()
        super().destroy()
        if store is not None:
            try:
                store.delete(self.agent_id)
            except Exception:
                log.exception("store.delete_failed", agent_id=self.agent_id)
