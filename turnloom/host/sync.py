"""The blocking face of the host API: the engine loop runs on a background thread.

Every call is handed to the loop and waited for; each has an `*_async` form that returns a
`concurrent.futures.Future` instead. Callbacks run on the loop thread, so a blocking call made
from a callback would wait for the thread it blocks: it raises at once instead (R-H3).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from ..engine.backends.base import ModelBackend
from ..engine.clock import Clock
from ..engine.core import EngineSettings
from ..engine.graph import GraphDescription
from ..engine.params import NodeParams
from ..engine.results import Step, TurnResult
from ..protocol.errors import ErrorCode, TurnloomError
from .aio import AsyncAgentAPI, AsyncEngine, AsyncEngineAPI
from .dispatch import (
    AnswerTextCallback,
    PausedCallback,
    ResumedCallback,
    ToolCallEventCallback,
    ToolCallWithIdCallback,
    ToolHandler,
    TurnCompleteCallback,
)

T = TypeVar("T")


class BlockingCallInCallback(RuntimeError):
    """A blocking call was made on the engine's loop thread (from a callback)."""


class _LoopThread:
    """An event loop on a daemon thread, and the bridge that runs coroutines on it.

    The embedded engine runs its core here; the wire client runs its connection here. Either
    way callbacks run on this thread, so `block` refuses to wait on it (R-H3).
    """

    def __init__(self, name: str = "turnloom-loop") -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def on_loop_thread(self) -> bool:
        """Whether the caller runs on the loop thread (in a callback)."""
        return threading.current_thread() is self.thread

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Run `coro` on the loop; a future of its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def block(self, coro: Coroutine[Any, Any, T], name: str, timeout: float | None = None) -> T:
        """Run `coro` on the loop and wait (BlockingCallInCallback on the loop thread, 1003)."""
        if self.on_loop_thread():
            coro.close()
            raise BlockingCallInCallback(
                f"{name}() blocks until its answer arrives on the loop thread "
                f"{self.thread.name!r}, but it was called on that thread (from a callback), "
                f"which would then never answer it; use {name}_async() from callbacks"
            )
        future = self.submit(coro)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TurnloomError(
                ErrorCode.Timeout, f"{name}() got no answer within {timeout} s"
            ) from None

    def stop(self) -> None:
        """Stop the loop and join its thread."""
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        if not self.on_loop_thread():
            self.thread.join()
            self.loop.close()


class Agent:
    """An agent of an `Engine` or of a wire connection: blocking calls, `*_async` futures,
    callbacks. The same class either way; only the coroutine agent underneath differs."""

    __slots__ = ("_agent", "_runner")

    def __init__(self, agent: AsyncAgentAPI, runner: _LoopThread) -> None:
        self._agent = agent
        self._runner = runner

    @property
    def agent_id(self) -> int:
        """The engine-wide id of this agent."""
        return self._agent.agent_id

    @property
    def last_result(self) -> TurnResult | None:
        """The completion of the agent's last finished turn."""
        return self._agent.last_result

    def send_message(self, text: str, *, timeout: float | None = None) -> Step:
        """Start a turn; return at its first pause or at its completion."""
        return self._runner.block(self._agent.send_message(text), "send_message", timeout)

    def send_message_async(self, text: str) -> concurrent.futures.Future[Step]:
        """`send_message` without blocking."""
        return self._runner.submit(self._agent.send_message(text))

    def resume(
        self,
        resume_node: str = "",
        tool_results: Sequence[Any] = (),
        *,
        timeout: float | None = None,
    ) -> Step:
        """Resume the paused turn, plainly or jumping to `resume_node`; return at the next step."""
        return self._runner.block(self._agent.resume(resume_node, tool_results), "resume", timeout)

    def resume_async(
        self, resume_node: str = "", tool_results: Sequence[Any] = ()
    ) -> concurrent.futures.Future[Step]:
        """`resume` without blocking."""
        return self._runner.submit(self._agent.resume(resume_node, tool_results))

    def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Change a node's mutable params (while idle or paused)."""
        self._runner.block(self._agent.change_params(node_name, params), "change_params")

    def change_params_async(
        self, node_name: str, params: NodeParams | Mapping[str, Any]
    ) -> concurrent.futures.Future[None]:
        """`change_params` without blocking."""
        return self._runner.submit(self._agent.change_params(node_name, params))

    def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params."""
        return self._runner.block(self._agent.get_params(node_name), "get_params")

    def get_params_async(self, node_name: str) -> concurrent.futures.Future[NodeParams]:
        """`get_params` without blocking."""
        return self._runner.submit(self._agent.get_params(node_name))

    def cancel(self) -> bool:
        """Cancel the open turn; False if there was none."""
        return self._runner.block(self._agent.cancel(), "cancel")

    def cancel_async(self) -> concurrent.futures.Future[bool]:
        """`cancel` without blocking."""
        return self._runner.submit(self._agent.cancel())

    def destroy(self) -> None:
        """Cancel any open turn and destroy the agent."""
        self._runner.block(self._agent.destroy(), "destroy")

    def destroy_async(self) -> concurrent.futures.Future[None]:
        """`destroy` without blocking."""
        return self._runner.submit(self._agent.destroy())

    def wait(self, *, timeout: float | None = None) -> Step:
        """Block until the turn is paused or finished (at once if it already is)."""
        return self._runner.block(self._agent.wait(), "wait", timeout)

    def wait_async(self) -> concurrent.futures.Future[Step]:
        """`wait` without blocking."""
        return self._runner.submit(self._agent.wait())

    def wait_complete(self, *, timeout: float | None = None) -> TurnResult | None:
        """Block until the open turn ends, through any pauses (a pause may time out)."""
        return self._runner.block(self._agent.wait_complete(), "wait_complete", timeout)

    def wait_complete_async(self) -> concurrent.futures.Future[TurnResult | None]:
        """`wait_complete` without blocking."""
        return self._runner.submit(self._agent.wait_complete())

    def set_on_paused(self, callback: PausedCallback | None) -> None:
        """`callback(node_name, pending_exit)` when a turn pauses."""
        self._agent.set_on_paused(callback)

    def set_on_resumed(self, callback: ResumedCallback | None) -> None:
        """`callback(node_name, resume_node)` when a paused turn goes on."""
        self._agent.set_on_resumed(callback)

    def set_on_answer_text(self, callback: AnswerTextCallback | None) -> None:
        """`callback(text, is_delta, is_final)` for each piece of reply text."""
        self._agent.set_on_answer_text(callback)

    def set_on_turn_complete(self, callback: TurnCompleteCallback | None) -> None:
        """`callback(result)` once per turn, when it ends."""
        self._agent.set_on_turn_complete(callback)

    def set_on_tool_call_with_id(self, callback: ToolCallWithIdCallback | None) -> None:
        """`callback(call_id, tool_name, arguments_json)` for each notified tool call."""
        self._agent.set_on_tool_call_with_id(callback)

    def set_on_tool_call_event(self, callback: ToolCallEventCallback | None) -> None:
        """`callback(ToolCallEvent)` for each notified tool call."""
        self._agent.set_on_tool_call_event(callback)

    def register_tool(self, name: str, handler: ToolHandler | None) -> None:
        """Run `handler(call)` when a pausing ToolCall pauses on `name`, then resume (R-T8)."""
        self._agent.register_tool(name, handler)

    def has_paused_tool_batch(self) -> bool:
        """Whether an automatic resume with registered tools' results was refused and kept."""
        return self._agent.has_paused_tool_batch()

    def retry_paused_tool_batch(self, *, timeout: float | None = None) -> Step:
        """Resume again with the kept batch; return at the next step."""
        return self._runner.block(
            self._agent.retry_paused_tool_batch(), "retry_paused_tool_batch", timeout
        )

    def retry_paused_tool_batch_async(self) -> concurrent.futures.Future[Step]:
        """`retry_paused_tool_batch` without blocking."""
        return self._runner.submit(self._agent.retry_paused_tool_batch())


class EngineFace:
    """The blocking face of an engine, embedded or remote: create agents, close, `with`."""

    _runner: _LoopThread
    _engine: AsyncEngineAPI

    def __enter__(self) -> EngineFace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
    ) -> Agent:
        """Validate `graph` and create an agent over it (3003/3007/3008 on a bad graph)."""
        agent = self._runner.block(
            self._engine.create_agent(
                graph, enable_diagnostics=enable_diagnostics, max_steps_per_turn=max_steps_per_turn
            ),
            "create_agent",
        )
        return Agent(agent, self._runner)

    def close(self) -> None:
        """Cancel every open turn, destroy every agent and stop the loop thread."""
        if self._runner.loop.is_closed():
            return
        if not self._runner.on_loop_thread():
            self._runner.block(self._engine.aclose(), "close")
        self._runner.stop()


class Engine(EngineFace):
    """An embedded engine: agents in this process, the engine loop on a background thread."""

    _engine: AsyncEngine

    def __init__(
        self,
        models: ModelBackend | Iterable[ModelBackend] | None = None,
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
    ) -> None:
        self._runner = _LoopThread()
        self._engine = AsyncEngine(models, clock=clock, settings=settings)
        self._runner.block(self._engine.__aenter__(), "Engine")

    def __enter__(self) -> Engine:
        return self

    @property
    def models(self) -> Mapping[str, ModelBackend]:
        """The loaded models by name."""
        return self._engine.models
