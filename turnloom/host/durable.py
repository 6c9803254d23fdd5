"""The blocking faces of durability (docs/reference/durability.md): snapshots and the dialog on
`Agent`; restore, stored agents and seeded dialogs on `Engine`. Mixed into the classes of
`sync.py`, so that module keeps to the calls every engine has."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from ..engine.durable.migration import Migration
from ..engine.durable.snapshot import AgentSnapshot
from ..engine.durable.store.slots import SlotInfo
from ..engine.graph.builder import GraphDescription
from ..engine.inference.base import ChatMessage
from ..protocol.errors import ErrorCode, TurnloomError
from ..states import InputPolicy
from .aio import AsyncAgent, AsyncEngine
from .api import AsyncAgentAPI
from .loop_thread import LoopThread

T = TypeVar("T")
#: The blocking agent class of the engine face (`Agent`).
A = TypeVar("A")


async def _on_loop(fn: Callable[..., T], *args: Any) -> T:
    return fn(*args)


class DurableAgentFace:
    """Snapshot and dialog, blocking (mixed into `Agent`)."""

    __slots__ = ()

    _agent: AsyncAgentAPI
    _runner: LoopThread

    def snapshot(self, *, timeout: float | None = None) -> AgentSnapshot:
        """The agent as a snapshot (msgpack bytes with a `to_dict()`), while idle or paused:
        3004 while a turn runs. `engine.restore(snapshot)` brings it back."""
        return self._runner.block(self._agent.snapshot(), "snapshot", timeout)

    def snapshot_async(self) -> concurrent.futures.Future[AgentSnapshot]:
        """`snapshot` without blocking."""
        return self._runner.submit(self._agent.snapshot())

    def save(self, slot: str) -> SlotInfo:
        """Save the agent into the engine store's `slot`, at rest (idle or paused; 3004 while a
        turn runs); `engine.load(slot)` and `engine.fork(slot)` bring it back."""
        return self._runner.block(self._agent.save(slot), "save")

    def save_async(self, slot: str) -> concurrent.futures.Future[SlotInfo]:
        """`save` without blocking: an autosave from a callback (`on_paused`), which may not
        block."""
        return self._runner.submit(self._agent.save(slot))

    @property
    def lineage(self) -> list[dict[str, Any]]:
        """Where the agent came from (loaded from a slot, forked), oldest first."""
        return self._embedded("lineage").lineage

    def _embedded(self, operation: str) -> AsyncAgent:
        agent = self._agent
        if not isinstance(agent, AsyncAgent):
            raise TurnloomError(
                ErrorCode.InvalidParamValue,
                f"{operation}: only an embedded agent knows its lineage",
            )
        return agent

    @property
    def tags(self) -> Mapping[str, str]:
        """The labels the agent was created with (read-only; kept in snapshots and stores)."""
        return self._agent.tags

    @property
    def dialog(self) -> list[ChatMessage]:
        """The conversation so far as chat messages (a copy; the open turn is not in it)."""
        return self._runner.block(self._agent.get_dialog(), "dialog")


class DurableEngineFace(Generic[A]):
    """Restore, stored agents and seeded dialogs, blocking (mixed into the embedded `Engine`).

    `wrap` is how the engine face wraps a coroutine agent (as `Agent`).
    """

    _engine: AsyncEngine
    _runner: LoopThread
    wrap: Callable[[AsyncAgent, LoopThread], A]

    def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
        dialog: Sequence[ChatMessage] | None = None,
        tags: Mapping[str, str] | None = None,
        durable: bool | None = None,
        input_policy: InputPolicy | str = InputPolicy.REJECT,
    ) -> A:
        """Validate `graph` and create an agent over it (3003/3007/3008 on a bad graph);
        `dialog` (chat messages, starting with the user's) seeds its conversation, `tags` label
        it. With a store, `durable=False` keeps this agent in memory only. `input_policy`: what
        a message does while a turn is open (docs/reference/turns.md#input-policies)."""
        agent = self._runner.block(
            self._engine.create_agent(
                graph,
                enable_diagnostics=enable_diagnostics,
                max_steps_per_turn=max_steps_per_turn,
                dialog=dialog,
                tags=tags,
                durable=durable,
                input_policy=input_policy,
            ),
            "create_agent",
        )
        return self.wrap(agent, self._runner)

    def restore(
        self,
        snapshot: bytes | Mapping[str, Any],
        *,
        durable: bool | None = None,
        graph: GraphDescription | None = None,
        migrate: Migration | None = None,
    ) -> A:
        """An agent from a snapshot, behaving as the original would have (refused with nothing
        created when the snapshot is cut, foreign or does not fit this engine: 3007 / 3003).
        `graph` and `migrate`: into a patched graph, as `AsyncEngine.restore`."""
        agent = self._runner.block(
            self._engine.restore(snapshot, durable=durable, graph=graph, migrate=migrate),
            "restore",
        )
        return self.wrap(agent, self._runner)

    def load(
        self,
        slot: str,
        *,
        replace: int | None = None,
        graph: GraphDescription | None = None,
        migrate: Migration | None = None,
        durable: bool | None = None,
    ) -> A:
        """An agent from the store's save `slot`: a new one, or in place of the agent `replace`
        (destroyed; the loaded one takes its id). `graph`, `migrate` as for `restore`."""
        agent = self._runner.block(
            self._engine.load(slot, replace=replace, graph=graph, migrate=migrate, durable=durable),
            "load",
        )
        return self.wrap(agent, self._runner)

    def fork(self, source: Any, *, durable: bool | None = None) -> A:
        """A new agent going on independently from `source`: an agent at rest, or a slot's
        name (3007 for anything else, an agent of a remote engine too)."""
        # Anything else goes on to the engine, which refuses it (3007) naming what it got.
        origin = getattr(source, "_agent", source)
        agent = self._runner.block(self._engine.fork(origin, durable=durable), "fork")
        return self.wrap(agent, self._runner)

    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """The store's save slots (of one agent, or all), newest first (3007 for an `agent_id`
        no agent can have)."""
        return self._runner.block(self._engine.slots(agent_id), "slots")

    def delete_slot(self, slot: str) -> bool:
        """Remove a save slot; False if there was none."""
        return self._runner.block(self._engine.delete_slot(slot), "delete_slot")

    def agent(self, agent_id: int) -> A:
        """The live agent with this id, e.g. one the store brought back (3001 if none)."""
        agent = self._runner.block(_on_loop(self._engine.agent, agent_id), "agent")
        return self.wrap(agent, self._runner)

    def agent_ids(self) -> list[int]:
        """The ids of the live agents, ascending (with a store: the restored ones too)."""
        return self._runner.block(_on_loop(self._engine.agent_ids), "agent_ids")
