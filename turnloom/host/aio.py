"""The asyncio face of the host API: the engine core runs on the caller's own event loop."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from ..engine.agent import AgentCore
from ..engine.backends.base import ModelBackend
from ..engine.backends.catalog import DEFAULT_MODEL
from ..engine.backends.llama import LlamaModel
from ..engine.clock import Clock
from ..engine.core import EngineCore, EngineSettings
from ..engine.graph import GraphDescription
from ..engine.params import NodeParams
from ..engine.results import Step, ToolResult, TurnResult
from ..protocol.errors import code_for
from ..states import Rejection
from .dispatch import (
    AnswerTextCallback,
    CallbackDispatch,
    DispatchFace,
    PausedCallback,
    ResumedCallback,
    ToolCallEventCallback,
    ToolCallWithIdCallback,
    ToolHandler,
    TurnCompleteCallback,
    rejected,
)

T = TypeVar("T")


def default_models() -> list[ModelBackend]:
    """The models an engine loads when given none: the catalog's default (loaded on first use)."""
    return [LlamaModel.from_catalog(DEFAULT_MODEL)]


class AsyncAgentAPI(Protocol):
    """The coroutine agent API that the embedded `AsyncAgent` and the wire client's agent both
    offer; the blocking `Agent` wraps either one, which is what makes switching one line."""

    @property
    def agent_id(self) -> int:
        """The engine-wide id of this agent."""

    @property
    def last_result(self) -> TurnResult | None:
        """The completion of the agent's last finished turn."""

    async def send_message(self, text: str) -> Step:
        """Start a turn; return at its first pause or at its completion."""

    async def resume(self, resume_node: str = "", tool_results: Sequence[Any] = ()) -> Step:
        """Resume the paused turn; return at the next step."""

    async def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Change a node's mutable params (while idle or paused)."""

    async def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params."""

    async def cancel(self) -> bool:
        """Cancel the open turn; False if there was none."""

    async def destroy(self) -> None:
        """Cancel any open turn and destroy the agent."""

    async def wait(self) -> Step:
        """Wait until the turn is paused or finished."""

    async def wait_complete(self) -> TurnResult | None:
        """Wait until the open turn ends, through any pauses."""

    def set_on_paused(self, callback: PausedCallback | None) -> None:
        """`callback(node_name, pending_exit)` when a turn pauses."""

    def set_on_resumed(self, callback: ResumedCallback | None) -> None:
        """`callback(node_name, resume_node)` when a paused turn goes on."""

    def set_on_answer_text(self, callback: AnswerTextCallback | None) -> None:
        """`callback(text, is_delta, is_final)` for each piece of reply text."""

    def set_on_turn_complete(self, callback: TurnCompleteCallback | None) -> None:
        """`callback(result)` once per turn, when it ends."""

    def set_on_tool_call_with_id(self, callback: ToolCallWithIdCallback | None) -> None:
        """`callback(call_id, tool_name, arguments_json)` for each notified tool call."""

    def set_on_tool_call_event(self, callback: ToolCallEventCallback | None) -> None:
        """`callback(ToolCallEvent)` for each notified tool call."""

    def register_tool(self, name: str, handler: ToolHandler | None) -> None:
        """Run `handler(call)` when a pausing ToolCall pauses on `name`, then resume."""

    def has_paused_tool_batch(self) -> bool:
        """Whether an automatic resume was refused and its batch kept."""

    async def retry_paused_tool_batch(self) -> Step:
        """Resume again with the kept batch; return at the next step."""


class AsyncEngineAPI(Protocol):
    """What the blocking engine faces need of an engine: create agents, close."""

    async def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
    ) -> AsyncAgentAPI:
        """Validate `graph` and create an agent over it."""

    async def aclose(self) -> None:
        """Cancel every open turn and destroy every agent."""


def _resume_batch(core: AgentCore, batch: list[ToolResult]) -> None:
    """Resume `core`'s paused turn with `batch` (the embedded `CallbackDispatch` hook)."""
    try:
        core.resume("", batch)
    except Rejection as rejection:
        raise rejected("retry_paused_tool_batch", core.agent_id, rejection) from None


class AsyncAgent(DispatchFace):
    """An agent, driven with coroutines on the loop the engine runs on."""

    __slots__ = ("_core", "_dispatch")

    def __init__(self, core: AgentCore, dispatch: CallbackDispatch) -> None:
        self._core = core
        self._dispatch = dispatch

    @property
    def agent_id(self) -> int:
        """The engine-wide id of this agent."""
        return self._core.agent_id

    def _do(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except Rejection as rejection:
            raise rejected(operation, self._core.agent_id, rejection) from None

    async def send_message(self, text: str) -> Step:
        """Start a turn; return at its first pause or at its completion."""
        turn = self._do("send_message", self._core.send_message, text)
        return await turn.add_waiter(self._core.engine.loop)

    async def resume(self, resume_node: str = "", tool_results: Sequence[Any] = ()) -> Step:
        """Resume the paused turn, plainly or jumping to `resume_node`; return at the next step."""
        turn = self._do("resume", self._core.resume, resume_node, tool_results)
        return await turn.add_waiter(self._core.engine.loop)

    async def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Change a node's mutable params (while idle or paused)."""
        self._do("change_params", self._core.change_params, node_name, params)

    async def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params."""
        return self._do("get_params", self._core.get_params, node_name)

    async def cancel(self) -> bool:
        """Cancel the open turn; False if there was none."""
        return self._do("cancel", self._core.cancel)

    async def destroy(self) -> None:
        """Cancel any open turn and destroy the agent."""
        self._do("destroy", self._core.destroy)

    async def wait(self) -> Step:
        """Wait until the turn is paused or finished (returns at once if it already is)."""
        step = self._do("wait", self._core.wait)
        if step is not None:
            return step
        assert self._core.turn is not None
        return await self._core.turn.add_waiter(self._core.engine.loop)

    async def wait_complete(self) -> TurnResult | None:
        """Wait until the open turn ends, through any pauses; the last result if none is open."""
        self._do("wait_complete", self._core.wait)  # 3002 on a destroyed agent
        while (turn := self._core.turn) is not None:
            step = await turn.add_waiter(self._core.engine.loop)
            if step.result is not None:
                return step.result
        return self._core.last_result

    @property
    def last_result(self) -> TurnResult | None:
        """The completion of the agent's last finished turn."""
        return self._core.last_result

    async def retry_paused_tool_batch(self) -> Step:
        """Resume again with the kept batch; return at the next step."""
        self._dispatch.retry()
        assert self._core.turn is not None
        return await self._core.turn.add_waiter(self._core.engine.loop)


class AsyncEngine:
    """An embedded engine on the running asyncio loop: `async with AsyncEngine() as engine:`."""

    def __init__(
        self,
        models: ModelBackend | Iterable[ModelBackend] | None = None,
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
    ) -> None:
        if isinstance(models, ModelBackend):
            models = [models]
        self.core = EngineCore(
            default_models() if models is None else models,
            clock=clock,
            settings=settings,
            error_code_of=lambda exc: int(code_for(exc)),
        )
        self._bound = False

    def _bind(self) -> None:
        if not self._bound:
            self.core.bind(asyncio.get_running_loop())
            self._bound = True

    async def __aenter__(self) -> AsyncEngine:
        self._bind()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def models(self) -> Mapping[str, ModelBackend]:
        """The loaded models by name."""
        return self.core.models

    async def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
    ) -> AsyncAgent:
        """Validate `graph` and create an agent over it."""
        self._bind()
        dispatch = CallbackDispatch()
        try:
            core = self.core.create_agent(
                graph,
                dispatch,
                enable_diagnostics=enable_diagnostics,
                max_steps_per_turn=max_steps_per_turn,
            )
        except Rejection as rejection:
            raise rejected("create_agent", None, rejection) from None
        dispatch.resume_batch = functools.partial(_resume_batch, core)
        return AsyncAgent(core, dispatch)

    async def aclose(self) -> None:
        """Cancel every open turn and destroy every agent."""
        for agent in list(self.core.agents.values()):
            agent.destroy()
