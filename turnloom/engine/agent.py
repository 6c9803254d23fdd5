"""An agent: one conversation over a compiled graph, with at most one open turn.

Every operation runs on the engine loop, checks the agent's state first and raises a
`Rejection` before touching anything, so a refused call changes nothing (R-E1).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import structlog

from . import executor
from .exchanges import check_batch
from .graph import CompiledGraph
from .params import NodeParams, check_mutation, params_from_mapping
from .projection import Interaction
from .rejections import (
    AgentBusy,
    AgentDestroyed,
    AgentNotPaused,
    InvalidParamValue,
    UnknownNode,
)
from .results import AgentListener, Step, TurnResult, normalize_tool_results
from .turn import Turn

if TYPE_CHECKING:
    from .core import EngineCore

log = structlog.get_logger("turnloom.agent")


class AgentCore:
    """The engine-side agent. Hosts reach it through `turnloom.Engine` or the wire server."""

    __slots__ = (
        "_rng",
        "agent_id",
        "call_seq",
        "destroyed",
        "dialog",
        "enable_diagnostics",
        "engine",
        "graph",
        "last_result",
        "listener",
        "max_steps",
        "node_state",
        "params",
        "turn",
    )

    def __init__(
        self,
        engine: EngineCore,
        agent_id: int,
        graph: CompiledGraph,
        listener: AgentListener,
        *,
        enable_diagnostics: bool,
        max_steps_per_turn: int,
    ) -> None:
        self.engine = engine
        self.agent_id = agent_id
        self.graph = graph
        self.listener = listener
        self.enable_diagnostics = enable_diagnostics
        self.max_steps = max_steps_per_turn
        # Shared with the graph until the first change_params (copy on write): agents are many.
        self.params: Mapping[str, NodeParams] = graph.nodes
        self.dialog: list[Interaction] = []
        self.turn: Turn | None = None
        self.last_result: TurnResult | None = None
        self.destroyed = False
        self.node_state: dict[str, dict[str, Any]] = {}
        self._rng: random.Random | None = None
        self.call_seq = 0

    @property
    def rng(self) -> random.Random:
        """The agent's random source, seeded by its id so runs repeat.

        Made on first use: a `Random` is ~2.5 KiB and most agents never need one.
        """
        if self._rng is None:
            self._rng = random.Random(self.agent_id)
        return self._rng

    # --- events out --------------------------------------------------------------------------

    def notify(self, method: str, *args: Any) -> None:
        """Call a listener method; a failing host callback never breaks the engine."""
        try:
            getattr(self.listener, method)(self.agent_id, *args)
        except Exception:
            log.exception("listener.failed", agent_id=self.agent_id, callback=method)

    # --- operations --------------------------------------------------------------------------

    def _check_alive(self, operation: str) -> None:
        if self.destroyed:
            raise AgentDestroyed(f"agent {self.agent_id} was destroyed; {operation} refused")

    def _describe_turn(self) -> str:
        return f"turn {self.turn.turn_id} is {self.turn.state}" if self.turn else "no open turn"

    def send_message(self, text: str) -> Turn:
        """Start a turn for the user message `text` (3004 while a turn is open)."""
        self._check_alive("send_message")
        if not isinstance(text, str):
            raise InvalidParamValue(f"message must be a string, got {type(text).__name__}")
        if self.turn is not None:
            raise AgentBusy(f"agent {self.agent_id}: send_message refused, {self._describe_turn()}")
        turn = Turn(self.engine.next_turn_id(), Interaction(text), self.enable_diagnostics)
        self.turn = turn
        executor.start(self, turn)
        return turn

    def _node(self, node_name: str, operation: str) -> NodeParams:
        params = self.params.get(node_name) if isinstance(node_name, str) else None
        if params is None:
            raise UnknownNode(
                f"agent {self.agent_id}: {operation}: node {node_name!r} is not in the graph "
                f"(nodes: {sorted(self.params)})"
            )
        return params

    def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Replace a node's mutable params, whole (a params object) or some fields (a mapping)."""
        self._check_alive("change_params")
        if self.turn is not None and self.turn.state != "paused":
            raise AgentBusy(
                f"agent {self.agent_id}: change_params refused, {self._describe_turn()}"
            )
        current = self._node(node_name, "change_params")
        if isinstance(params, Mapping):
            proposed = params_from_mapping(type(current), params, base=current)
        else:
            proposed = copy.deepcopy(params)
        check_mutation(node_name, current, proposed)
        if self.params is self.graph.nodes:
            self.params = dict(self.graph.nodes)
        assert isinstance(self.params, dict)
        self.params[node_name] = proposed
        log.debug("params.changed", agent_id=self.agent_id, node=node_name)

    def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params (edit it and pass it to `change_params`)."""
        self._check_alive("get_params")
        return copy.deepcopy(self._node(node_name, "get_params"))

    def resume(self, resume_node: str = "", tool_results: Sequence[Any] = ()) -> Turn:
        """Resume the paused turn via its pending exit, or jump to `resume_node`."""
        self._check_alive("resume")
        turn = self.turn
        if turn is None or turn.state != "paused" or turn.pause is None:
            raise AgentNotPaused(f"agent {self.agent_id}: resume refused, {self._describe_turn()}")
        if resume_node:
            self._node(resume_node, "resume")  # UnknownNode leaves the turn paused
        settings = self.engine.settings
        results = check_batch(
            self.agent_id,
            turn.pause.info,
            normalize_tool_results(tool_results),
            max_result_bytes=settings.max_tool_result_bytes,
            max_batch_bytes=settings.max_tool_batch_bytes,
        )
        executor.resume(self, turn, resume_node, results)
        return turn

    def cancel(self) -> bool:
        """End the open turn `cancelled`; False (not an error) when there is none."""
        self._check_alive("cancel")
        if self.turn is None:
            return False
        executor.cancel(self, self.turn)
        return True

    def destroy(self) -> None:
        """Cancel any open turn and refuse every later operation (3002)."""
        self._check_alive("destroy")
        if self.turn is not None:
            executor.cancel(self, self.turn)
        self.destroyed = True
        self.engine.forget(self.agent_id)

    def wait(self) -> Step | None:
        """The step the agent stands at now, or None if its turn is running (then wait)."""
        self._check_alive("wait")
        turn = self.turn
        if turn is None:
            return Step(result=self.last_result) if self.last_result else Step()
        if turn.state == "paused" and turn.pause is not None:
            return Step(pause=turn.pause.info)
        return None
