"""The durable agent: an `AgentCore` that writes its snapshot to the engine's store whenever it
comes to rest (SPEC R-R3).

Only engines with a store make these, so an engine without one runs the plain `AgentCore` and
pays nothing (R-R7). The writes, each a whole snapshot replacing the last:

* the turn paused: before the host is told (`on_paused`), so a pause the host saw is stored;
* the turn completed: after the dialog and last result are booked, before the host is told;
* params changed; the agent created or restored;
* destroyed: the stored snapshot is deleted.

Never per token: streaming text and tool-call events write nothing. A resume writes nothing
either: until the resumed turn pauses or completes, its last pause is the state to return to.
A failing write is logged (`store.write_failed`) and the turn goes on; the store then holds the
agent's previous complete write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .agent import KEPT_STATUSES, AgentCore
from .logs import get_logger
from .params import NodeParams
from .results import Step, TurnResult
from .snapshot import take_snapshot
from .store.base import Store
from .turn import Turn

log = get_logger("turnloom.store")


class DurableAgentCore(AgentCore):
    """An agent written through to `store` (None once its engine closes: it then writes no
    more, and its stored snapshot stays for the next engine)."""

    __slots__ = ("store",)

    store: Store | None

    def save(self) -> None:
        """Write the agent's snapshot to its store (a failure is logged, not raised)."""
        store = self.store
        if store is None:
            return
        try:
            store.save(self.agent_id, take_snapshot(self))
        except Exception:
            log.exception("store.write_failed", agent_id=self.agent_id)

    def notify(self, method: str, *args: Any) -> None:
        """Save at a pause, before the host hears of it."""
        if method == "on_paused":
            self.save()
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
        self.notify("on_answer_text", result.text, False, True)
        self.notify("on_turn_complete", result)
        turn.settle_waiters(Step(result=result))

    def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Change the params, then save."""
        super().change_params(node_name, params)
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
