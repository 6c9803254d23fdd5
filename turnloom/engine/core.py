"""The engine core: the runtime (models, clock, settings, loop) and the agents it hosts."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable

from .agent import AgentCore
from .backends.base import ModelBackend
from .clock import Clock
from .graph import GraphDescription, compile_graph
from .guards import brief
from .logs import get_logger
from .params import NodeParams, ToolCallParams
from .rejections import InvalidParamValue, UnknownAgent
from .results import AgentListener
from .runtime import EngineSettings, Runtime

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
    ) -> None:
        super().__init__(models, clock=clock, settings=settings, error_code_of=error_code_of)
        self.agents: dict[int, AgentCore] = {}
        self._agent_ids = itertools.count(1)

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
            or not 1 <= max_steps_per_turn <= MAX_STEPS_PER_TURN
        ):
            raise InvalidParamValue(
                f"max_steps_per_turn must be an int in 1 … {MAX_STEPS_PER_TURN}, "
                f"got {brief(max_steps_per_turn)}"
            )
        compiled = compile_graph(graph, self._model_error)
        agent = AgentCore(
            self,
            next(self._agent_ids),
            compiled,
            listener,
            enable_diagnostics=bool(enable_diagnostics),
            max_steps_per_turn=max_steps_per_turn,
            on_destroyed=self.forget,
        )
        self.agents[agent.agent_id] = agent
        log.debug("agent.created", agent_id=agent.agent_id, nodes=len(compiled.nodes))
        return agent

    def agent(self, agent_id: int) -> AgentCore:
        """The live agent with this id (3001 if there is none)."""
        agent = self.agents.get(agent_id)
        if agent is None:
            raise UnknownAgent(f"no agent with id {brief(agent_id)}")
        return agent

    def forget(self, agent_id: int) -> None:
        """Drop a destroyed agent."""
        self.agents.pop(agent_id, None)
