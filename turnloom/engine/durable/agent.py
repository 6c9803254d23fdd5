"""The durable agent: an `AgentCore` that writes its snapshot to the engine's store whenever it
comes to rest (docs/reference/durability.md#when-an-agent-is-written).

Only engines with a store make these, so an engine without one runs the plain `AgentCore` and
pays nothing. The writes, each a whole snapshot replacing the last:

* the turn paused: before the host is told (`on_paused`), so a pause the host saw is stored;
* the turn completed: after the dialog and last result are booked, before the host is told;
* params changed; the agent created or restored;
* destroyed: the stored snapshot is deleted.

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

from typing import Any

from ..graph.params import NodeParams
from ..support.logs import get_logger
from ..turns.agent import KEPT_STATUSES, AgentCore
from ..turns.results import Step, TurnResult
from ..turns.turn import Turn
from .snapshot import absolute_offset, pause_deadline, take_snapshot
from .store.base import LeaseLost, Store

log = get_logger("turnloom.store")


class DurableAgentCore(AgentCore):
    """An agent written through to `store` (None once its engine closes: it then writes no
    more, and its stored snapshot stays for the next engine)."""

    __slots__ = ("release_at_rest", "store")

    store: Store | None
    #: Let go of the agent once it is written at rest (a shared store's agent nobody holds).
    release_at_rest: bool

    def save(self) -> None:
        """Write the agent's snapshot to its store (a failure is logged, not raised)."""
        store = self.store
        if store is None:
            return
        try:
            deadline = None
            if store.shared:
                deadline = pause_deadline(self.turn, absolute_offset(self.runtime.clock))
            store.save(self.agent_id, take_snapshot(self), deadline)
        except LeaseLost:
            self.runtime.lease_lost(self)
        except Exception:
            log.exception("store.write_failed", agent_id=self.agent_id)

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
        self.let_go_of_dialog()

    def notify(self, method: str, *args: Any) -> None:
        """Save at a pause, before the host hears of it."""
        if method == "on_paused":
            self.save()
            self.saved_at_rest()
        super().notify(method, *args)

    def turn_completed(self, turn: Turn, result: TurnResult) -> None:
        """Book the completion, save, then tell the host (as `AgentCore.turn_completed`)."""
        # AgentCore's three booking lines, repeated rather than split into a hook there: the
        # plain agent's completion stays one call.
        if result.status in KEPT_STATUSES:
            self.dialog.append(turn.interaction)
        self.turn = Turn()
        self.last_result = result
        self.save()
        self.saved_at_rest()
        self.notify("on_answer_text", result.text, False, True)
        self.notify("on_turn_complete", result)
        turn.settle_waiters(Step(result=result))

    def set_params(self, node_name: str, proposed: NodeParams) -> None:
        """Change the params, then save."""
        super().set_params(node_name, proposed)
        self.save()

    def destroy(self) -> None:
        """Destroy the agent and delete its stored snapshot (the cancel writes nothing)."""
        self.check_alive("destroy")  # before the store is let go
        store, self.store = self.store, None
        super().destroy()
        if store is not None:
            try:
                store.delete(self.agent_id)
            except Exception:
                log.exception("store.delete_failed", agent_id=self.agent_id)
