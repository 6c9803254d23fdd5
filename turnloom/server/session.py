"""One connection = one session (R-W2): its frames in, its agents' events and replies out.

A session is an `asyncio.Protocol`: every request is handled synchronously inside
`data_received`, so what a request causes at once (a `resumed` event, the completion of a
cancelled turn) is written before its reply, and everything a turn does later comes after it.
Clients rely on that order to know which pause or completion answers a send or a resume.
Nothing here runs as a task: a parked session costs its buffers and its agents, no coroutine.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from ..engine.agent import AgentCore
from ..engine.core import EngineCore
from ..engine.fields import params_to_mapping
from ..engine.rejections import AgentDestroyed, InvalidParamValue, UnknownAgent
from ..protocol.codes import rejected
from ..protocol.errors import ErrorCode, TurnloomError
from ..protocol.frames import PROTOCOL_VERSION, FrameDecoder, FrameError, encode_frame
from ..protocol.graph_codec import NODE_TYPES, graph_from_wire, params_from_wire
from ..protocol.messages import OPERATIONS, error_response, parse_request
from ..protocol.records import pause_to_wire, result_to_wire
from ..states import Rejection, TurnState
from .events import SessionEvents
from .limits import ServerLimits

log = structlog.get_logger("turnloom.server")

Handler = Callable[["Session", dict[str, Any]], dict[str, Any]]


class SessionHost(Protocol):
    """What a session needs of its server (`turnloom.server.Server` is one)."""

    limits: ServerLimits
    shutting_down: bool

    @property
    def engine_core(self) -> EngineCore:
        """The engine core whose agents the session creates."""
        ...

    def admit(self, session: Session) -> TurnloomError | None:
        """Register a new session, or the reason it is refused."""
        ...

    def forget(self, session: Session) -> None:
        """Drop a closed session."""
        ...


class Session(asyncio.Protocol, SessionEvents):
    """A client connection: its agents, its configuration, its outgoing bytes."""

    def __init__(self, server: SessionHost, session_id: int) -> None:
        self.server = server
        self.session_id = session_id
        self.limits = server.limits
        self.decoder = FrameDecoder(self.limits.max_frame_bytes)
        self.transport: asyncio.Transport | None = None
        self._abort_timer: asyncio.TimerHandle | None = None
        #: Frames of this loop iteration, written together: one syscall for a reply and the
        #: events around it, instead of one each.
        self._pending: list[bytes] = []
        self._flush_handle: asyncio.Handle | None = None
        self.configured = False
        self.closed = False
        self.agents: dict[int, AgentCore] = {}
        #: Recently destroyed agent ids, so a late request gets 3002 rather than 3001 (bounded).
        self.destroyed: OrderedDict[int, None] = OrderedDict()
        #: Logged with every event of the session (a dict, not a bound logger: a bound logger
        #: would keep the output stream of the moment it was bound).
        self.context: dict[str, Any] = {"session_id": session_id}

    # --- transport ---------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Admit the session and send SessionReady (or refuse it and close)."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.context["peer"] = transport.get_extra_info("peername")
        refusal = self.server.admit(self)
        if refusal is not None:
            self.send(error_response(refusal.code, refusal.message, None))
            self.close()
            return
        log.info("session.opened", **self.context)
        self.send(
            {
                "type": "SessionReady",
                "protocol_version": PROTOCOL_VERSION,
                "session_id": self.session_id,
                "max_frame_bytes": self.limits.max_frame_bytes,
                "max_agents": self.limits.max_agents_per_session,
            }
        )

    def data_received(self, data: bytes) -> None:
        """Decode frames and answer each one, in order."""
        for item in self.decoder.feed(data):
            if self.closed:
                return
            if isinstance(item, FrameError):
                log.info("frame.refused", code=int(item.code), message=item.message, **self.context)
                self.send(error_response(item.code, item.message, item.request_id))
            else:
                self.handle(item)

    def connection_lost(self, exc: Exception | None) -> None:
        """End the session: cancel its turns, destroy its agents."""
        self.closed = True
        if self._abort_timer is not None:
            self._abort_timer.cancel()
            self._abort_timer = None
        self.release()
        self.server.forget(self)
        log.info("session.closed", error=str(exc) if exc else None, **self.context)

    def pause_writing(self) -> None:
        """The client is behind on reading: stop reading its requests."""
        # Backpressure: a client that does not read its replies gets no more requests read.
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        """The client caught up: read its requests again."""
        if self.transport is not None and not self.closed:
            self.transport.resume_reading()

    def send(self, message: dict[str, Any]) -> None:
        """Queue one frame for this loop iteration's write (dropped once the session closes)."""
        if self.closed or self.transport is None:
            return
        try:
            data = encode_frame(message, self.limits.max_frame_bytes)
        except (FrameError, TypeError, ValueError, OverflowError) as error:
            data = self._unsendable(message, error)
        self._pending.append(data)
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        if not self._pending or self.transport is None or self.transport.is_closing():
            self._pending.clear()
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self.transport.write(data)
        if self.transport.get_write_buffer_size() > self.limits.max_outbox_bytes:
            self._overflow()

    def _unsendable(self, message: dict[str, Any], error: Exception) -> bytes:
        # Tell the client which agent lost a frame, so it can fail that agent's waiters rather
        # than wait for a pause or completion that will never arrive.
        log.error(
            "frame.unsendable", frame_type=message.get("type"), error=str(error), **self.context
        )
        code = error.code if isinstance(error, FrameError) else ErrorCode.MalformedMessage
        agent_id = message.get("agent_id")
        notice = error_response(
            code,
            f"the server could not send a {message.get('type')} frame: {str(error)[:200]}",
            message.get("request_id"),
            agent_id=agent_id if isinstance(agent_id, int) else None,
        )
        return encode_frame(notice)

    def _overflow(self) -> None:
        assert self.transport is not None
        size = self.transport.get_write_buffer_size()
        log.warning(
            "session.outbox_full",
            **self.context,
            queued_bytes=size,
            limit=self.limits.max_outbox_bytes,
            hint="the client does not read its frames; the session is closed",
        )
        notice = error_response(
            ErrorCode.SessionLimitExceeded,
            f"session closed: {size} bytes of frames were waiting for the client to read them, "
            f"over the {self.limits.max_outbox_bytes}-byte limit",
            None,
        )
        self.transport.write(encode_frame(notice))
        self.close()

    def close(self) -> None:
        """Stop taking requests, end the session's turns and close the connection."""
        if self.closed:
            return
        self._flush()  # what was queued goes out first (it may close us: an overflow)
        if self.closed:
            return
        self.closed = True
        transport = self.transport
        if transport is not None:
            transport.close()
            # A peer that never reads would keep a closing transport forever.
            self._abort_timer = asyncio.get_running_loop().call_later(
                self.limits.close_timeout_s, transport.abort
            )
        # Not at once: close() may be called from inside an engine callback mid-turn.
        asyncio.get_running_loop().call_soon(self.release)

    def begin_shutdown(self) -> None:
        """Server shutdown: cancel the session's turns (their completions go out), announce
        2001; requests that still arrive are answered 2001 until the connection closes."""
        self.release()
        self.send(error_response(ErrorCode.ServerShuttingDown, "the server is shutting down", None))

    def release(self) -> None:
        """Destroy every agent of the session (cancelling its open turn)."""
        agents, self.agents = self.agents, {}
        for core in agents.values():
            if not core.destroyed:
                core.destroy()
        if agents:
            log.info("session.agents_released", agents=len(agents), **self.context)

    # --- requests ----------------------------------------------------------------------------

    def handle(self, frame: dict[str, Any]) -> None:
        """Answer one request frame with exactly one reply carrying its request_id."""
        request_id = frame.get("request_id")
        kind = frame["type"]
        fields: dict[str, Any] = {}
        try:
            kind, fields = parse_request(frame)
            if self.server.shutting_down:
                raise TurnloomError(ErrorCode.ServerShuttingDown, "the server is shutting down")
            if not self.configured and kind != "ConfigureSession":
                raise TurnloomError(
                    ErrorCode.SessionNotReady,
                    f"{kind} before ConfigureSession; configure the session first",
                )
            reply = HANDLERS[kind](self, fields)
        except (FrameError, TurnloomError) as error:
            reply = error_response(error.code, error.message, request_id)
        except Rejection as rejection:
            refusal = rejected(OPERATIONS[kind], fields.get("agent_id"), rejection)
            reply = error_response(refusal.code, refusal.message, request_id)
        except Exception as exc:
            # Values no check anticipated; the server stays up and the client learns which.
            log.exception("request.failed", request_type=kind, **self.context)
            reply = error_response(
                ErrorCode.MalformedMessage,
                f"{kind} could not be processed: {type(exc).__name__}: {exc}",
                request_id,
            )
        reply["request_id"] = request_id
        self.send(reply)

    def agent(self, fields: dict[str, Any]) -> AgentCore:
        """The session's agent the request names (3001 unknown, 3002 destroyed)."""
        agent_id = fields["agent_id"]
        core = self.agents.get(agent_id)
        if core is not None:
            return core
        if agent_id in self.destroyed:
            raise AgentDestroyed(f"agent {agent_id} was destroyed")
        # Other sessions' agents are unknown here: sessions never see into each other.
        raise UnknownAgent(f"no agent with id {agent_id!r} in this session")

    def configure(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ConfigureSession: check the client's protocol version (5004)."""
        version = fields["protocol_version"]
        if version != PROTOCOL_VERSION:
            raise TurnloomError(
                ErrorCode.ProtocolVersionMismatch,
                f"client speaks protocol version {version}, this server speaks {PROTOCOL_VERSION}",
            )
        self.configured = True
        self.context["client"] = str(fields["client_name"])[:64]
        return {"type": "Ack", "session_id": self.session_id, "protocol_version": version}

    def create_agent(self, fields: dict[str, Any]) -> dict[str, Any]:
        """CreateAgent: compile the graph into a new agent of this session."""
        limit = self.limits.max_agents_per_session
        if len(self.agents) >= limit:
            raise TurnloomError(
                ErrorCode.SessionLimitExceeded,
                f"this session already has {len(self.agents)} agents, its limit; destroy one first",
            )
        steps = fields["max_steps_per_turn"]
        if isinstance(steps, int) and steps > self.limits.max_steps_per_turn:
            raise TurnloomError(
                ErrorCode.SessionLimitExceeded,
                f"max_steps_per_turn {steps} is over this server's limit of "
                f"{self.limits.max_steps_per_turn}",
            )
        core = self.server.engine_core.create_agent(
            graph_from_wire(fields["graph"]),
            self,
            enable_diagnostics=fields["enable_diagnostics"],
            max_steps_per_turn=steps,
        )
        self.agents[core.agent_id] = core
        return {"type": "CreateAgentResponse", "agent_id": core.agent_id}

    def destroy_agent(self, fields: dict[str, Any]) -> dict[str, Any]:
        """DestroyAgent: cancel its open turn and forget it."""
        core = self.agent(fields)
        core.destroy()
        del self.agents[core.agent_id]
        self.destroyed[core.agent_id] = None
        if len(self.destroyed) > self.limits.destroyed_ids_remembered:
            self.destroyed.popitem(last=False)
        return {"type": "Ack", "agent_id": core.agent_id}

    def send_message(self, fields: dict[str, Any]) -> dict[str, Any]:
        """SendMessage: start a turn."""
        core = self.agent(fields)
        turn = core.send_message(fields["text"])
        return {"type": "Ack", "agent_id": core.agent_id, "turn_id": turn.turn_id}

    def resume(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ResumeAgent: resume the paused turn, plainly, by jump, or with tool results."""
        core = self.agent(fields)
        turn = core.resume(fields["resume_node"], fields["tool_results"])
        return {"type": "Ack", "agent_id": core.agent_id, "turn_id": turn.turn_id}

    def change_params(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ChangeAgentParam: a whole params object (with node_type) or some fields (without)."""
        core = self.agent(fields)
        node, node_type, values = fields["node_name"], fields["node_type"], fields["params"]
        if node_type:
            if node_type not in NODE_TYPES:
                raise InvalidParamValue(
                    f"node {node!r}: unknown node type {node_type!r} (known: {sorted(NODE_TYPES)})"
                )
            core.change_params(node, params_from_wire(node, node_type, values))
        else:
            core.change_params(node, values)
        return {"type": "Ack", "agent_id": core.agent_id}

    def get_params(self, fields: dict[str, Any]) -> dict[str, Any]:
        """GetAgentParam: a node's current params."""
        core = self.agent(fields)
        params = core.get_params(fields["node_name"])
        return {
            "type": "AgentParamResponse",
            "agent_id": core.agent_id,
            "node_name": fields["node_name"],
            "node_type": params.node_type,
            "params": params_to_mapping(params),
        }

    def get_state(self, fields: dict[str, Any]) -> dict[str, Any]:
        """GetAgentState: where the agent's turn stands, and its last completion."""
        core = self.agent(fields)
        turn = core.turn
        pause = turn.pause if turn.state is TurnState.PAUSED else None
        return {
            "type": "AgentStateResponse",
            "agent_id": core.agent_id,
            "state": turn.state.value,
            "turn_id": turn.turn_id or None,
            "pause": pause_to_wire(pause.info) if pause is not None else None,
            "last_result": result_to_wire(core.last_result) if core.last_result else None,
        }

    def cancel(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Cancel: end the open turn; `cancelled` is False when there was none."""
        core = self.agent(fields)
        return {"type": "Ack", "agent_id": core.agent_id, "cancelled": core.cancel()}


#: The handler of each request type.
HANDLERS: dict[str, Handler] = {
    "ConfigureSession": Session.configure,
    "CreateAgent": Session.create_agent,
    "DestroyAgent": Session.destroy_agent,
    "SendMessage": Session.send_message,
    "ResumeAgent": Session.resume,
    "ChangeAgentParam": Session.change_params,
    "GetAgentParam": Session.get_params,
    "GetAgentState": Session.get_state,
    "Cancel": Session.cancel,
}
