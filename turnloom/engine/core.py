"""The engine core: models, clock, settings and the agents it hosts, on one event loop."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import structlog

from .agent import AgentCore
from .backends.base import ModelBackend
from .clock import Clock, LoopClock
from .graph import GraphDescription, compile_graph
from .params import NodeParams, ToolCallParams
from .rejections import InvalidParamValue, UnknownAgent
from .results import AgentListener

log = structlog.get_logger("turnloom.engine")


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Engine-wide limits and timings."""

    #: Warn once when a pause outlives this (R-P6); 0 disables the warning.
    pause_stall_warn_ms: int = 15_000
    #: Largest single tool result, in bytes of UTF-8 (R-T7).
    max_tool_result_bytes: int = 64 * 1024
    #: Largest tool_results batch, in bytes of UTF-8 (R-T7).
    max_tool_batch_bytes: int = 512 * 1024


class EngineCore:
    """Hosts agents and their models. Every method runs on the engine loop."""

    def __init__(
        self,
        models: Iterable[ModelBackend],
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
        error_code_of: Callable[[BaseException], int | None] = lambda exc: None,
    ) -> None:
        self.models: dict[str, ModelBackend] = {m.name: m for m in models}
        self.clock = clock or LoopClock()
        self.settings = settings or EngineSettings()
        self.error_code_of = error_code_of
        self.agents: dict[int, AgentCore] = {}
        self._agent_ids = itertools.count(1)
        self._turn_ids = itertools.count(1)
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach the engine (and its clock) to the loop it runs on."""
        self.loop = loop
        self.clock.bind(loop)

    def next_turn_id(self) -> int:
        """A turn id unique in this engine."""
        return next(self._turn_ids)

    def _model_error(self, node: str, model: str, params: NodeParams) -> str | None:
        backend = self.models.get(model)
        if backend is None:
            return f"model '{model}' is not loaded (loaded: {sorted(self.models)})"
        if isinstance(params, ToolCallParams):
            reason = backend.tool_support_error()
            if reason:
                return f"ToolCall node needs a model whose chat template renders tools: {reason}"
        return None

    def create_agent(
        self,
        graph: GraphDescription,
        listener: AgentListener,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
    ) -> AgentCore:
        """Validate `graph` and create an agent over it (3003, 3007, 3008 on a bad graph)."""
        if not isinstance(graph, GraphDescription):
            raise InvalidParamValue(f"graph must be a GraphDescription, got {type(graph).__name__}")
        if (
            not isinstance(max_steps_per_turn, int)
            or isinstance(max_steps_per_turn, bool)
            or max_steps_per_turn < 1
        ):
            raise InvalidParamValue(
                f"max_steps_per_turn must be an int >= 1, got {max_steps_per_turn!r}"
            )
        compiled = compile_graph(graph, self._model_error)
        agent = AgentCore(
            self,
            next(self._agent_ids),
            compiled,
            listener,
            enable_diagnostics=bool(enable_diagnostics),
            max_steps_per_turn=max_steps_per_turn,
        )
        self.agents[agent.agent_id] = agent
        log.debug("agent.created", agent_id=agent.agent_id, nodes=len(compiled.nodes))
        return agent

    def agent(self, agent_id: int) -> AgentCore:
        """The live agent with this id (3001 if there is none)."""
        agent = self.agents.get(agent_id)
        if agent is None:
            raise UnknownAgent(f"no agent with id {agent_id!r}")
        return agent

    def forget(self, agent_id: int) -> None:
        """Drop a destroyed agent."""
        self.agents.pop(agent_id, None)
