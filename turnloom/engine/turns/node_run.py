"""Running one node of a turn: the context it sees (`NodeContext`), and the call itself, awaited
by the walk or, for a node that never awaits, run straight on the caller's stack.

Pause and CannedResponse nodes need no model, so their runners never await: the executor runs
the first of them inline (`run_node_inline`) when a face asks for an eager walk, sparing the
turn a task and a loop iteration per hand-off.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any, Protocol, cast

from ...states import TurnState
from ..graph.builder import CompiledGraph
from ..graph.params import CannedResponseParams, NodeParams, PauseParams
from ..inference.base import GenerationProgress, ModelBackend
from ..support.clock import Clock
from .dialog.projection import Interaction
from .nodes import RUNNERS, NodeOutcome
from .nodes.generation_watch import GenerationWatch
from .observers import call_hooks
from .results import InferenceFailed, ToolCallEvent, TurnFailure, TurnResult
from .runtime import GenerationMeter, Runtime
from .turn import Turn

#: The node kinds whose runner never awaits (no model): they can run inline.
INLINE_NODES = (PauseParams, CannedResponseParams)


class TurnOwner(Protocol):
    """What the executor needs of the agent whose turn it walks (`AgentCore` is one)."""

    agent_id: int
    runtime: Runtime
    graph: CompiledGraph
    params: Mapping[str, NodeParams]
    max_steps: int
    dialog: list[Interaction]
    node_state: dict[str, dict[str, Any]] | None

    @property
    def rng(self) -> random.Random:
        """The agent's random source."""
        ...

    def notify(self, method: str, *args: Any) -> None:
        """Tell the agent's listener about an event."""
        ...

    def next_call_id(self) -> str:
        """A call id unique for the agent's lifetime."""
        ...

    def turn_completed(self, turn: Turn, result: TurnResult) -> None:
        """Book a turn's one completion."""
        ...


class _NodeContext:
    """The turn as one node execution sees it (implements `nodes.NodeContext`)."""

    __slots__ = ("agent", "agent_id", "node_name", "turn")

    def __init__(self, agent: TurnOwner, turn: Turn, node_name: str) -> None:
        self.agent = agent
        self.agent_id = agent.agent_id
        self.turn = turn
        self.node_name = node_name

    @property
    def dialog(self) -> Sequence[Interaction]:
        return self.agent.dialog

    @property
    def interaction(self) -> Interaction:
        return self.turn.interaction

    @property
    def clock(self) -> Clock:
        return self.agent.runtime.clock

    @property
    def rng(self) -> random.Random:
        return self.agent.rng

    @property
    def meter(self) -> GenerationMeter | None:
        return self.agent.runtime.meter

    def backend(self, params: NodeParams) -> ModelBackend:
        return self.agent.runtime.models[self.agent.graph.model_for(params)]

    def begin_reply(self) -> None:
        if self.turn.reply_parts:
            self.emit_text("\n")

    def emit_text(self, text: str) -> None:
        if text and self.turn.state is TurnState.RUNNING:
            turn = self.turn
            if turn.reply_parts is None:
                turn.reply_parts = []
            turn.reply_parts.append(text)
            self.agent.notify("on_answer_text", text, True, False)

    def add_reply(self, text: str) -> None:
        self.turn.interaction.messages.append({"role": "assistant", "content": text})

    def add_tokens(self, count: int) -> None:
        self.turn.tokens += count

    def next_call_id(self) -> str:
        return self.agent.next_call_id()

    def emit_tool_call(self, event: ToolCallEvent) -> None:
        turn = self.turn
        if turn.state is TurnState.RUNNING:
            if (log := turn.log) is not None:
                values = (event.node_name, event.call_id, event.tool_name, event.arguments_json)
                log += ("tool_call", self.agent.runtime.log_time(), (*values, event.disposition))
            if hooks := self.agent.runtime.observers.tool_called:
                call_hooks(hooks, "tool_called", self.agent, turn, event)
            self.agent.notify("on_tool_call", event)

    def generation_watch(self, progress: GenerationProgress) -> GenerationWatch | None:
        hooks = self.agent.runtime.observers.generation_ended
        if not hooks and self.turn.log is None:
            return None  # nobody would read the record: nothing to time
        return GenerationWatch(
            hooks, self.agent, self.turn, self.node_name, progress, self.add_tokens
        )

    def node_state(self) -> dict[str, Any]:
        if self.agent.node_state is None:
            self.agent.node_state = {}
        return self.agent.node_state.setdefault(self.node_name, {})


async def run_node(agent: TurnOwner, turn: Turn, node: str, params: NodeParams) -> NodeOutcome:
    """Run `node`; an unforeseen exception of its runner fails the turn 4001, naming it."""
    try:
        return await RUNNERS[type(params)](_NodeContext(agent, turn, node), params)
    except (TurnFailure, asyncio.CancelledError):
        raise
    except Exception as exc:
        raise _node_failed(agent, node, exc) from exc


def run_node_inline(agent: TurnOwner, turn: Turn, node: str, params: NodeParams) -> NodeOutcome:
    """Run a node of an `INLINE_NODES` kind to its end on this stack, as `run_node` would."""
    # The runners are coroutine functions; these never await, so one send runs them out.
    runner = cast(
        Coroutine[Any, Any, NodeOutcome],
        RUNNERS[type(params)](_NodeContext(agent, turn, node), params),
    )
    try:
        runner.send(None)
    except StopIteration as done:
        outcome: NodeOutcome = done.value
        return outcome
    except TurnFailure:
        raise
    except Exception as exc:
        raise _node_failed(agent, node, exc) from exc
    runner.close()
    raise AssertionError(f"node '{node}' awaited: {type(params).__name__} cannot run inline")


def _node_failed(agent: TurnOwner, node: str, exc: Exception) -> InferenceFailed:
    return InferenceFailed(
        f"agent {agent.agent_id}: node '{node}' failed: {type(exc).__name__}: {exc}"
    )
