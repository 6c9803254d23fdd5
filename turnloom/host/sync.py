"""The blocking face of the host API: the engine loop lives on a background thread.

A blocking call runs the loop on the calling thread until it is answered (see `LoopThread`);
each call has an `*_async` form that returns a `concurrent.futures.Future` instead. Callbacks
run on whichever thread runs the loop at that moment, one at a time: a blocking call made from
a callback would wait for the thread it blocks, so it raises at once instead
(docs/reference/host.md#blocking-calls-from-callbacks).
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..engine.durable.store import Store
from ..engine.graph.builder import GraphDescription
from ..engine.graph.params import NodeParams
from ..engine.inference.base import ModelBackend
from ..engine.inference.info import ModelInfo
from ..engine.support.clock import Clock
from ..engine.turns.results import Step, TurnResult
from ..engine.turns.runtime import EngineSettings
from ..states import InputPolicy
from .aio import AsyncEngine
from .api import AsyncAgentAPI, AsyncEngineAPI
from .dispatch import CallbackDispatch, DispatchFace
from .durable import DurableAgentFace, DurableEngineFace
from .loop_thread import LoopThread
from .observing import ObservedEngineFace


class Agent(DurableAgentFace, DispatchFace):
    """An agent of an `Engine` or of a wire connection: blocking calls, `*_async` futures,
    callbacks. The same class either way; only the coroutine agent underneath differs."""

    __slots__ = ("_agent", "_runner")

    def __init__(self, agent: AsyncAgentAPI, runner: LoopThread) -> None:
        self._agent = agent
        self._runner = runner

    @property
    def dispatch(self) -> CallbackDispatch:  # type: ignore[override]
        """The callbacks and tools of the coroutine agent underneath (it gets the events)."""
        return self._agent.dispatch

    @property
    def agent_id(self) -> int:
        """The engine-wide id of this agent."""
        return self._agent.agent_id

    @property
    def last_result(self) -> TurnResult | None:
        """The completion of the agent's last finished turn."""
        return self._agent.last_result

    @property
    def resume_token(self) -> str | None:
        """A durable wire agent's secret: `remote.attach_agent(agent_id, resume_token)` takes
        it over from a later session. None for every other agent."""
        return self._agent.resume_token

    def send_message(self, text: str, *, timeout: float | None = None) -> Step:
        """Start a turn; return at its first pause or at its completion."""
        return self._runner.block(self._agent.send_message(text), "send_message", timeout)

    def send_message_async(self, text: str) -> concurrent.futures.Future[Step]:
        """`send_message` without blocking (with the `enqueue` input policy, the future of a
        queued message resolves once its own turn pauses or ends)."""
        return self._runner.submit(self._agent.send_message(text))

    @property
    def input_policy(self) -> InputPolicy:
        """What a message does while a turn is open (`set_input_policy`)."""
        return self._agent.input_policy

    def set_input_policy(self, policy: InputPolicy | str) -> None:
        """What a message does while a turn is open (docs/reference/turns.md#input-policies):
        `InputPolicy` or its value (3007 otherwise); at rest only (3004 while a turn runs)."""
        self._runner.block(self._agent.set_input_policy(policy), "set_input_policy")

    def set_input_policy_async(self, policy: InputPolicy | str) -> concurrent.futures.Future[None]:
        """`set_input_policy` without blocking."""
        return self._runner.submit(self._agent.set_input_policy(policy))

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

    _runner: LoopThread
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

    def list_models(self) -> list[ModelInfo]:
        """The models graphs may name (embedded: the loaded ones; remote: the server's)."""
        return self._runner.block(self._engine.list_models(), "list_models")

    def close(self) -> None:
        """Cancel every open turn, destroy every agent and stop the loop thread."""
        if self._runner.loop.is_closed():
            return
        if not self._runner.in_loop():
            self._runner.block(self._engine.aclose(), "close")
        self._runner.stop()


class Engine(DurableEngineFace[Agent], ObservedEngineFace, EngineFace):
    """An embedded engine: agents in this process, the engine loop on a background thread.

    `store=` ("game.db", a `redis://` URL or a `Store`) makes its agents durable
    (docs/reference/durability.md).
    """

    _engine: AsyncEngine
    wrap = Agent

    def __init__(
        self,
        models: ModelBackend | Iterable[ModelBackend] | None = None,
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
        store: str | os.PathLike[str] | Store | None = None,
        load_stored: bool = True,
    ) -> None:
        """As `AsyncEngine`'s."""
        self._runner = LoopThread()
        try:
            self._engine = AsyncEngine(
                models, clock=clock, settings=settings, store=store, load_stored=load_stored
            )
            self._runner.block(self._engine.__aenter__(), "Engine")
        except BaseException:  # a bad argument: no thread left behind
            self._runner.stop()
            raise

    def __enter__(self) -> Engine:
        return self

    @property
    def models(self) -> Mapping[str, ModelBackend]:
        """The loaded models by name."""
        return self._engine.models
