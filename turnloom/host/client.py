"""The Python client: `turnloom.connect(host, port)` gives an engine whose agents have exactly
the embedded API, the same `turnloom.Agent` class over a wire agent instead of an in-process
one (docs/reference/host.md#embedded-and-remote).

How a blocking `send_message` / `resume` "returns at the next pause or completion" over the
wire: the server writes a request's reply before anything the turn does afterwards, so once the
Ack is in, the next `NodeEvent` paused or `TurnComplete` of that agent is the answer. The
waiter is registered while the Ack is being read, so no event can slip past it.

The module is longer than 400 lines because that ordering argument is the whole of it: the
requests that register waiters and the event routing that settles them (steps, queued messages,
completions) are kept in one file so each can be checked against the other.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from ..engine.durable.store.slots import SlotInfo
from ..engine.graph.builder import GraphDescription
from ..engine.graph.fields import params_to_mapping
from ..engine.graph.params import NodeParams
from ..engine.inference.info import ModelInfo
from ..engine.support.guards import brief
from ..engine.support.logs import get_logger
from ..engine.turns.exchanges import normalize_tool_results
from ..engine.turns.results import (
    MessageEvent,
    MessageFate,
    PauseInfo,
    Step,
    ToolResult,
    TurnResult,
)
from ..protocol.codes import rejected, too_deep
from ..protocol.errors import ErrorCode, TurnloomError
from ..protocol.graph_codec import graph_to_wire, node_type_of, params_from_wire, to_plain
from ..protocol.records import (
    message_from_wire,
    model_info_from_wire,
    pause_from_wire,
    result_from_wire,
    slot_from_wire,
    tool_call_from_wire,
    tool_results_to_wire,
)
from ..states import InputPolicy, Rejection
from .api import AsyncAgentAPI, AsyncEngineAPI
from .connection import Connection
from .dispatch import CallbackDispatch
from .loop_thread import wait_limit
from .reconnect import Reopen, reconnect

log = get_logger("turnloom.client")


class RemoteAsyncAgent(AsyncAgentAPI):
    """An agent on a server, driven with coroutines on the client's loop (the API of
    `AsyncAgent`). Its events arrive as frames and go through the same `CallbackDispatch`
    as embedded events, so callbacks and registered tools behave the same."""

    def __init__(self, conn: Connection, agent_id: int, resume_token: str | None = None) -> None:
        self._conn = conn
        self._agent_id = agent_id
        #: A durable agent's secret: with it, `attach_agent` takes the agent over from any
        #: later session (None for an agent that ends with its session).
        self.resume_token = resume_token
        self.dispatch = CallbackDispatch(self._send_batch)
        #: Callers waiting for the next pause or completion, and for the next completion.
        self._steps: list[asyncio.Future[Step]] = []
        #: Callers of a queued message (`enqueue` policy), oldest first: each joins `_steps`
        #: when the server says its turn started.
        self._queued: list[asyncio.Future[Step]] = []
        self._completions: list[asyncio.Future[TurnResult | None]] = []
        self._last_result: TurnResult | None = None
        #: The pause the agent stands at, as last reported (None while running or idle).
        self._pause: PauseInfo | None = None
        self._destroyed = False
        self._input_policy = InputPolicy.REJECT

    @property
    def agent_id(self) -> int:
        """The server-wide id of this agent."""
        return self._agent_id

    @property
    def last_result(self) -> TurnResult | None:
        """The completion of the agent's last finished turn (as last reported)."""
        return self._last_result

    # --- events ------------------------------------------------------------------------------

    def on_frame(self, frame: dict[str, Any]) -> None:
        """Route one event frame of this agent to the callbacks and the waiters."""
        kind = frame["type"]
        try:
            if kind == "AnswerText":
                text, delta, final = frame["text"], frame["is_delta"], frame["is_final"]
                self._notify("on_answer_text", text, delta, final)
            elif kind == "TurnComplete":
                self._completed(result_from_wire(frame))
            elif frame.get("event") == "paused":
                self._paused(pause_from_wire(frame))
            elif frame.get("event") == "resumed":
                self._pause = None
                self._notify("on_resumed", frame["node_name"], frame["resume_node"])
            elif frame.get("event") == "tool_call":
                self._notify("on_tool_call", tool_call_from_wire(frame))
            elif frame.get("event") == "message":
                self._message(message_from_wire(frame))
            elif kind == "AgentDetached":
                self._conn.sinks.pop(self._agent_id, None)
                message = f"agent {self._agent_id} was attached by another session"
                self.fail(TurnloomError(ErrorCode.InvalidAgentId, message))
            else:
                log.warning(
                    "client.unknown_event", agent_id=self._agent_id, kind=brief(frame.get("event"))
                )
        except (KeyError, TypeError, ValueError) as exc:
            log.warning("client.bad_event", agent_id=self._agent_id, error=str(exc))

    def _notify(self, method: str, *args: Any) -> None:
        # As AgentCore.notify: a failing host callback never breaks the client.
        try:
            getattr(self.dispatch, method)(self._agent_id, *args)
        except Exception:
            log.exception("listener.failed", agent_id=self._agent_id, callback=method)

    def _message(self, event: MessageEvent) -> None:
        # While messages wait, every turn that starts plainly is the oldest one's: the agent
        # is busy until the queue is empty (interrupt and merge report their own fates).
        if event.fate is MessageFate.STARTED and self._queued:
            self._steps.append(self._queued.pop(0))
        elif event.fate is MessageFate.DROPPED and self._queued:
            message = f"agent {self._agent_id} was destroyed while the message waited in its queue"
            self._queued.pop(0).set_exception(
                TurnloomError(ErrorCode.AgentAlreadyDestroyed, message)
            )
        self._notify("on_message", event)

    def _paused(self, info: PauseInfo) -> None:
        self._pause = info
        self.dispatch.auto_resume = None
        self._notify("on_paused", info, bool(self._steps or self._completions))
        auto = self.dispatch.auto_resume
        if auto is None:
            self._settle(Step(pause=info))
        else:
            # Registered tools are resuming: callers wait on through the resume, as embedded,
            # unless it is refused (then the pause is theirs, with the batch kept).
            auto.add_done_callback(lambda done: self._auto_answered(done, info))

    def _auto_answered(self, done: asyncio.Future[bool], info: PauseInfo) -> None:
        accepted = not done.cancelled() and done.exception() is None and done.result()
        if not accepted and self._pause is info:
            self._settle(Step(pause=info))

    def _completed(self, result: TurnResult) -> None:
        self._pause = None
        self._last_result = result
        self._notify("on_turn_complete", result)
        self._settle(Step(result=result))
        completions, self._completions = self._completions, []
        for future in completions:
            if not future.done():
                future.set_result(result)

    def _settle(self, step: Step) -> None:
        steps, self._steps = self._steps, []
        for future in steps:
            if not future.done():
                future.set_result(step)

    def fail(self, error: TurnloomError) -> None:
        """Fail every waiter: the answer it waits for will not come."""
        waiters: list[asyncio.Future[Any]] = [*self._steps, *self._queued, *self._completions]
        self._steps, self._queued, self._completions = [], [], []
        for future in waiters:
            if not future.done():
                future.set_exception(error)

    # --- requests ----------------------------------------------------------------------------

    def _check_alive(self, operation: str) -> None:
        if self._destroyed:
            raise self._gone(operation)

    def _gone(self, operation: str) -> TurnloomError:
        return TurnloomError(
            ErrorCode.AgentAlreadyDestroyed,
            f"agent {self._agent_id} was destroyed; {operation} refused",
        )

    async def _call(self, operation: str, message: dict[str, Any], on_reply: Any = None) -> Any:
        self._check_alive(operation)
        message["agent_id"] = self._agent_id
        return await self._conn.request(message, on_reply)

    async def _step_call(
        self, operation: str, message: dict[str, Any], batch: list[ToolResult] | None = None
    ) -> Step:
        step: asyncio.Future[Step] = self._conn.loop.create_future()

        def accepted(frame: dict[str, Any]) -> None:
            if batch is not None:
                self.dispatch.drop_batch(batch)
            if self._destroyed:  # a load took the id meanwhile: its step is the new face's
                step.set_exception(self._gone(operation))
                return
            # The lists are read now, not before the call: a completion meanwhile replaces them.
            (self._queued if frame.get("queued") else self._steps).append(step)

        await self._call(operation, message, accepted)
        # A queued caller that gives up keeps its place in `_queued` (its message still waits
        # on the server, and started events are matched to callers in order).
        return await self._waiting(step, self._steps)

    @staticmethod
    async def _waiting(future: asyncio.Future[Any], waiters: list[Any]) -> Any:
        try:
            return await future
        except asyncio.CancelledError:
            if future in waiters:  # a caller that gave up no longer counts as waiting
                waiters.remove(future)
            raise

    def _send_batch(self, batch: list[ToolResult]) -> asyncio.Future[Any]:
        """The dispatch's hook: resume with registered tools' results, answered later."""
        message = {
            "type": "ResumeAgent",
            "agent_id": self._agent_id,
            "resume_node": "",
            "tool_results": tool_results_to_wire(batch),
        }
        return self._conn.request(message)

    async def send_message(self, text: str) -> Step:
        """Start a turn; return at its first pause or at its completion."""
        return await self._step_call("send_message", {"type": "SendMessage", "text": text})

    async def resume(self, resume_node: str = "", tool_results: Sequence[Any] = ()) -> Step:
        """Resume the paused turn, plainly or jumping to `resume_node`; return at the next step."""
        self._check_alive("resume")
        try:  # the batch's shape, as embedded; whether it fits the pause is the server's call
            batch = normalize_tool_results(tool_results, f"agent {self._agent_id}: resume")
        except Rejection as rejection:
            raise rejected("resume", self._agent_id, rejection) from None
        message = {
            "type": "ResumeAgent",
            "resume_node": resume_node,
            "tool_results": tool_results_to_wire(batch),
        }
        return await self._step_call("resume", message)

    async def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Change a node's mutable params (while idle or paused)."""
        message: dict[str, Any] = {"type": "ChangeAgentParam", "node_name": node_name}
        try:
            if isinstance(params, Mapping):
                message["params"] = to_plain(params)
            elif isinstance(params, NodeParams):
                message["node_type"] = node_type_of(params)
                message["params"] = params_to_mapping(params)
            else:  # the server refuses it (3007), naming what it got
                message["node_type"] = type(params).__name__
                message["params"] = {}
        except RecursionError:
            raise too_deep("change_params") from None
        await self._call("change_params", message)

    async def save(self, slot: str) -> SlotInfo:
        """Save the agent into the server store's `slot`, at rest (3004 while a turn runs)."""
        message = {"type": "SaveSlot", "slot": slot}
        return await self._call("save", message, slot_from_wire)

    async def set_input_policy(self, policy: InputPolicy | str) -> None:
        """What a message does while a turn is open (while idle or paused)."""
        value = policy.value if isinstance(policy, InputPolicy) else policy
        await self._call("set_input_policy", {"type": "SetInputPolicy", "input_policy": value})
        self._input_policy = InputPolicy(value)

    @property
    def input_policy(self) -> InputPolicy:
        """What a message does while a turn is open, as this client last set it."""
        return self._input_policy

    async def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params."""

        def params_of(frame: dict[str, Any]) -> NodeParams:
            return params_from_wire(node_name, frame["node_type"], frame["params"])

        message = {"type": "GetAgentParam", "node_name": node_name}
        return await self._call("get_params", message, params_of)

    async def cancel(self) -> bool:
        """Cancel the open turn; False if there was none."""
        reply = await self._call("cancel", {"type": "Cancel"})
        return bool(reply["cancelled"])

    async def destroy(self) -> None:
        """Cancel any open turn and destroy the agent."""

        def destroyed(frame: dict[str, Any]) -> None:
            self._destroyed = True
            self._conn.sinks.pop(self._agent_id, None)

        await self._call("destroy", {"type": "DestroyAgent"}, destroyed)

    async def wait(self) -> Step:
        """Wait until the turn is paused or finished (returns at once if it already is)."""

        def step_of(frame: dict[str, Any]) -> Step | asyncio.Future[Step]:
            if frame["state"] == "idle":
                last = frame.get("last_result")
                return Step(result=result_from_wire(last)) if last else Step()
            if frame["state"] == "paused" and frame.get("pause"):
                return Step(pause=pause_from_wire(frame["pause"]))
            future: asyncio.Future[Step] = self._conn.loop.create_future()
            self._steps.append(future)
            return future

        got = await self._call("wait", {"type": "GetAgentState"}, step_of)
        return got if isinstance(got, Step) else await self._waiting(got, self._steps)

    async def wait_complete(self) -> TurnResult | None:
        """Wait until the open turn ends, through any pauses; the last result if none is open."""

        def result_of(frame: dict[str, Any]) -> Any:
            if frame["state"] == "idle":
                last = frame.get("last_result")
                return result_from_wire(last) if last else None
            future: asyncio.Future[TurnResult | None] = self._conn.loop.create_future()
            self._completions.append(future)
            return future

        got = await self._call("wait_complete", {"type": "GetAgentState"}, result_of)
        if isinstance(got, asyncio.Future):
            return await self._waiting(got, self._completions)
        return got

    async def retry_paused_tool_batch(self) -> Step:
        """Resume again with the kept batch; return at the next step."""
        batch = self.dispatch.kept()
        message = {
            "type": "ResumeAgent",
            "resume_node": "",
            "tool_results": tool_results_to_wire(batch),
        }
        return await self._step_call("retry_paused_tool_batch", message, batch)


class AsyncRemoteEngine(AsyncEngineAPI):
    """A session with a turnloom server, on the running asyncio loop (see `connect_async`)."""

    def __init__(self, conn: Connection, ready: Mapping[str, Any], reopen: Reopen) -> None:
        self._conn = conn
        self.reopen = reopen  #: opens a new session with the same server
        #: This engine's durable agents by id: `reconnect` takes them to the new session.
        self.durable: dict[int, RemoteAsyncAgent] = {}
        self.session_id: int = ready["session_id"]
        self.protocol_version: int = ready["protocol_version"]

    async def reconnect(self) -> list[int]:
        """A new session, this engine's durable agents attached to it (`host/reconnect.py`)."""
        return await reconnect(self)

    async def __aenter__(self) -> AsyncRemoteEngine:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
        durable: bool = False,
        input_policy: InputPolicy | str = InputPolicy.REJECT,
    ) -> RemoteAsyncAgent:
        """Send `graph` to the server and create an agent over it (3003/3007/3008 if bad).
        `durable` (a server with a store): the agent outlives this session; keep its
        `resume_token` to `attach_agent` it later. `input_policy`: what a message does while
        a turn is open."""
        if not isinstance(graph, GraphDescription):
            raise TurnloomError(
                ErrorCode.InvalidParamValue,
                f"graph must be a GraphDescription, got {type(graph).__name__}",
            )

        def created(frame: dict[str, Any]) -> RemoteAsyncAgent:
            agent = RemoteAsyncAgent(self._conn, frame["agent_id"], frame.get("resume_token"))
            agent._input_policy = InputPolicy(getattr(input_policy, "value", input_policy))
            self._conn.sinks[agent.agent_id] = agent
            if agent.resume_token:
                self.durable[agent.agent_id] = agent
            return agent

        try:
            wire = graph_to_wire(graph)
        except RecursionError:
            raise too_deep("create_agent") from None
        message = {
            "type": "CreateAgent",
            "graph": wire,
            "enable_diagnostics": enable_diagnostics,
            "max_steps_per_turn": max_steps_per_turn,
        }
        if durable:
            message["durable"] = True
        if input_policy != InputPolicy.REJECT:  # only then: older servers never see the key
            message["input_policy"] = str(getattr(input_policy, "value", input_policy))
        return await self._conn.request(message, created)

    def _adopt(self, frame: dict[str, Any]) -> RemoteAsyncAgent:
        """The agent a LoadSlot or ForkAgent made in this session."""
        agent = RemoteAsyncAgent(self._conn, frame["agent_id"])
        agent._input_policy = InputPolicy(frame.get("input_policy", "reject"))
        old = self._conn.sinks.get(agent.agent_id)
        if isinstance(old, RemoteAsyncAgent):  # replaced: the old face's agent is gone
            old._destroyed = True
            old.fail(old._gone("waiting for a step"))
        self._conn.sinks[agent.agent_id] = agent
        return agent

    async def load(self, slot: str, *, replace: int | None = None) -> RemoteAsyncAgent:
        """An agent of this session from the server store's save `slot`, or in place of this
        session's agent `replace` (docs/reference/durability.md#save-slots)."""
        message = {"type": "LoadSlot", "slot": slot, "replace_agent_id": replace}
        return await self._conn.request(message, self._adopt)

    async def fork(self, source: RemoteAsyncAgent | str) -> RemoteAsyncAgent:
        """A new agent of this session going on from one of its agents, or from a slot."""
        message: dict[str, Any] = {"type": "ForkAgent"}
        if isinstance(source, str):
            message["slot"] = source
        else:
            message["agent_id"] = source.agent_id
        return await self._conn.request(message, self._adopt)

    async def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """The server store's save slots (of one agent, or all), newest first."""

        def listed(frame: dict[str, Any]) -> list[SlotInfo]:
            return [slot_from_wire(item) for item in frame["slots"]]

        return await self._conn.request({"type": "ListSlots", "agent_id": agent_id}, listed)

    async def delete_slot(self, slot: str) -> bool:
        """Remove a save slot; False if there was none."""
        message = {"type": "DeleteSlot", "slot": slot}
        return await self._conn.request(message, lambda frame: bool(frame["deleted"]))

    async def attach_agent(self, agent_id: int, resume_token: str) -> RemoteAsyncAgent:
        """Take over a durable agent (from a closed session, a restarted server, or another
        session, which loses it); it stands where it stood: `wait()` gives its step. 3001 if
        the id or the token is wrong."""

        def attached(frame: dict[str, Any]) -> RemoteAsyncAgent:
            agent = self._conn.sinks.get(frame["agent_id"])  # already here: the same face
            if not isinstance(agent, RemoteAsyncAgent):
                agent = RemoteAsyncAgent(self._conn, frame["agent_id"], resume_token)
            pause, last = frame.get("pause"), frame.get("last_result")
            agent._pause = pause_from_wire(pause) if pause else None
            agent._last_result = result_from_wire(last) if last else None
            agent._input_policy = InputPolicy(frame.get("input_policy", "reject"))
            self._conn.sinks[agent.agent_id] = self.durable[agent.agent_id] = agent
            return agent

        message = {"type": "AttachAgent", "agent_id": agent_id, "resume_token": resume_token}
        return await self._conn.request(message, attached)

    async def list_models(self) -> list[ModelInfo]:
        """The models the server offers, sorted by name (`ListModels`)."""

        def listed(frame: dict[str, Any]) -> list[ModelInfo]:
            return [model_info_from_wire(item) for item in frame["models"]]

        return await self._conn.request({"type": "ListModels"}, listed)

    async def aclose(self, timeout: float = 5.0) -> None:
        """Destroy the session's agents (their open turns end cancelled, callbacks included),
        then close the connection. Durable agents are not destroyed: they wait on the server
        for an `attach_agent`."""
        limit = wait_limit(timeout, "aclose")
        agents = [
            a
            for a in self._conn.sinks.values()
            if isinstance(a, RemoteAsyncAgent) and a.resume_token is None
        ]
        if agents and self._conn.error is None:
            destroying = asyncio.gather(*(a.destroy() for a in agents), return_exceptions=True)
            try:
                await asyncio.wait_for(destroying, limit)
            except TimeoutError:
                log.warning("client.close_timeout", agents=len(agents))
        await self._conn.close(limit)
