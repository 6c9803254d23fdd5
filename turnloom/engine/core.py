"""The engine core: the runtime (models, clock, settings, loop) and the agents it hosts.

With a store (SPEC §11) its agents are `DurableAgentCore`s, written through to it, and
`restore_stored` brings back every stored agent when the engine starts. Without one, agents
are plain `AgentCore`s and nothing here costs a turn anything (R-R7).
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from .agent import AgentCore
from .agent_tags import checked_tags
from .backends.base import ModelBackend
from .clock import Clock
from .dialog_data import dialog_from_messages
from .durable import DurableAgentCore
from .graph import CompiledGraph, GraphDescription, compile_graph
from .guards import brief
from .logs import get_logger
from .params import NodeParams, ToolCallParams
from .rejections import InvalidParamValue, UnknownAgent
from .restore import SnapshotPlan, read_snapshot
from .results import AgentListener
from .revive import apply_snapshot, watch_stall
from .runtime import EngineSettings, Runtime
from .store.base import Store

log = get_logger("turnloom.engine")

#: The most nodes one turn may walk (a loop in the graph ends 4003 past its own limit; this
#: bounds the limit itself, like every other number an agent takes).
MAX_STEPS_PER_TURN = 1_000_000


class EngineCore(Runtime):
    """Hosts agents and their models. Every method runs on the engine loop."""

    def __init__(
        self,
        models: Iterable[ModelBackend],
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
        error_code_of: Callable[[BaseException], int | None] = lambda exc: None,
        store: Store | None = None,
    ) -> None:
        super().__init__(models, clock=clock, settings=settings, error_code_of=error_code_of)
        self.agents: dict[int, AgentCore] = {}
        #: The largest agent id given so far: new ids continue past it, restored ones too.
        self._last_agent_id = 0
        #: Ids of stored agents this engine could not restore: never given to another agent.
        self._held_ids: set[int] = set()
        #: Where agents are written through; None = agents live in memory only.
        self.store = store

    def _model_error(self, node: str, model: str, params: NodeParams) -> str | None:
        backend = self.models.get(model)
        if backend is None:
            return f"model '{model}' is not loaded (loaded: {sorted(self.models)})"
        if isinstance(params, ToolCallParams):
            reason = backend.tool_support_error()
            if reason:
                return f"ToolCall node needs a model whose chat template renders tools: {reason}"
        return None

    def _durable(self, durable: bool | None, operation: str) -> bool:
        if durable is None:
            return self.store is not None
        if durable and self.store is None:
            raise InvalidParamValue(f"{operation}: a durable agent needs an engine with a store")
        return bool(durable)

    def _new_agent(
        self,
        agent_id: int,
        graph: CompiledGraph,
        listener: AgentListener,
        enable_diagnostics: bool,
        max_steps_per_turn: int,
        durable: bool,
    ) -> AgentCore:
        cls = DurableAgentCore if durable else AgentCore
        agent = cls(
            self,
            agent_id,
            graph,
            listener,
            enable_diagnostics=enable_diagnostics,
            max_steps_per_turn=max_steps_per_turn,
        )
        if isinstance(agent, DurableAgentCore):
            agent.store = self.store
        self.agents[agent_id] = agent
        self._last_agent_id = max(self._last_agent_id, agent_id)
        return agent

    def _next_agent_id(self) -> int:
        # Past every id given or restored, so a new agent never takes a stored agent's id.
        return self._last_agent_id + 1

    def create_agent(
        self,
        graph: GraphDescription,
        listener: AgentListener,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
        dialog: Sequence[Any] | None = None,
        tags: Mapping[str, str] | None = None,
        durable: bool | None = None,
    ) -> AgentCore:
        """Validate `graph` and create an agent over it (3003, 3007, 3008 on a bad graph).

        `dialog` seeds its conversation (chat messages, see `dialog_data`; 3007 if malformed);
        `tags` label it (`agent_tags`). `durable`: written through to the store (the default
        when the engine has one); False keeps this one in memory only.
        """
        if not isinstance(graph, GraphDescription):
            raise InvalidParamValue(f"graph must be a GraphDescription, got {type(graph).__name__}")
        if (
            not isinstance(max_steps_per_turn, int)
            or isinstance(max_steps_per_turn, bool)
            or not 1 <= max_steps_per_turn <= MAX_STEPS_PER_TURN
        ):
            raise InvalidParamValue(
                f"max_steps_per_turn must be an int in 1 … {MAX_STEPS_PER_TURN}, "
                f"got {brief(max_steps_per_turn)}"
            )
        seeded = None if dialog is None else dialog_from_messages(dialog, "create_agent")
        labels = checked_tags(tags, "create_agent")
        stored = self._durable(durable, "create_agent")
        compiled = compile_graph(graph, self._model_error)
        agent = self._new_agent(
            self._next_agent_id(),
            compiled,
            listener,
            bool(enable_diagnostics),
            max_steps_per_turn,
            stored,
        )
        agent.tags = labels
        if seeded:
            agent.dialog = seeded
        log.debug("agent.created", agent_id=agent.agent_id, nodes=len(compiled.nodes))
        if isinstance(agent, DurableAgentCore):
            agent.save()
        return agent

    def restore(
        self, snapshot: Any, listener: AgentListener, *, durable: bool | None = None
    ) -> AgentCore:
        """An agent from a snapshot (bytes or its `to_dict` form), nothing created if refused.

        It keeps the snapshot's id when no live agent has it, else gets a new one. A paused
        turn's deadline keeps its absolute time: one already past fires at once. `durable` as
        for `create_agent`.
        """
        stored = self._durable(durable, "restore")
        plan = read_snapshot(snapshot, self._model_error)
        taken = plan.agent_id in self.agents or plan.agent_id in self._held_ids
        agent_id = self._next_agent_id() if taken else plan.agent_id
        agent = self._restore(agent_id, plan, listener, stored)
        watch_stall(agent)
        if isinstance(agent, DurableAgentCore):
            agent.save()
        return agent

    def _restore(
        self, agent_id: int, plan: SnapshotPlan, listener: AgentListener, durable: bool
    ) -> AgentCore:
        agent = self._new_agent(
            agent_id, plan.graph, listener, plan.enable_diagnostics, plan.max_steps, durable
        )
        apply_snapshot(agent, plan)
        if plan.max_turn_id:
            # Turn ids stay unique in the engine: new ones continue past the restored ones.
            upcoming = next(self._turn_ids)
            self._turn_ids = itertools.count(max(upcoming, plan.max_turn_id + 1))
        log.debug("agent.restored", agent_id=agent_id, paused=plan.turn is not None)
        return agent

    def restore_stored(self, listener_for: Callable[[], AgentListener]) -> list[AgentCore]:
        """Bring back every agent in the store, under its own id (on engine start).

        A stored snapshot this engine cannot restore (say, its model is gone) is logged and
        left in the store untouched; the others come back.
        """
        if self.store is None:
            return []
        restored = []
        # Restoring allocates millions of objects that all live on: the cyclic collector would
        # walk the growing heap again and again (most of the time, at 100,000 agents) to find
        # nothing. It is off for the loop, and back on after.
        collecting = gc.isenabled()
        gc.disable()
        try:
            for agent_id, document in self.store.load_all():
                if agent_id in self.agents:
                    continue
                try:
                    plan = read_snapshot(document, self._model_error)
                except Exception as exc:
                    log.error("store.restore_failed", agent_id=agent_id, reason=str(exc))
                    # Its row stays; no new agent may take its id and overwrite it.
                    self._held_ids.add(agent_id)
                    self._last_agent_id = max(self._last_agent_id, agent_id)
                    continue
                restored.append(self._restore(agent_id, plan, listener_for(), True))
        finally:
            if collecting:
                gc.enable()
        # The stall watch keeps its pauses in the order they began; handed over in that order,
        # each goes to its end in constant time.
        paused = [agent for agent in restored if agent.turn.pause is not None]
        paused.sort(key=lambda agent: agent.turn.pause.started_at)  # type: ignore[union-attr]
        for agent in paused:
            watch_stall(agent)
        log.info("store.restored", agents=len(restored))
        return restored

    def agent(self, agent_id: int) -> AgentCore:
        """The live agent with this id (3001 if there is none)."""
        agent = self.agents.get(agent_id)
        if agent is None:
            raise UnknownAgent(f"no agent with id {brief(agent_id)}")
        return agent

    def forget(self, agent_id: int) -> None:
        """Drop a destroyed agent."""
        self.agents.pop(agent_id, None)

    def close(self) -> None:
        """Cancel every open turn and destroy every agent; stored agents stay stored (their
        writes stop first), and the store is closed."""
        store, self.store = self.store, None
        for agent in list(self.agents.values()):
            if isinstance(agent, DurableAgentCore):
                agent.store = None
            agent.destroy()
        if store is not None:
            store.close()
