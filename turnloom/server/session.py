"""One connection = one session: its frames in, its agents' events and replies out
(docs/protocol.md#2-session-lifecycle).

A session is an `asyncio.Protocol`: every request is handled synchronously inside
`data_received`, so what a request causes at once (a `resumed` event, the completion of a
cancelled turn) is written before its reply, and everything a turn does later comes after it.
Clients rely on that order to know which pause or completion answers a send or a resume.
Nothing here runs as a task: a parked session costs its buffers and its agents, no coroutine.
The exception is a frame too costly to answer in one go (a large body; a request about a heavy
node): `intake` takes it over several loop iterations, and the session's later frames wait.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any, Protocol

from ..engine.core import EngineCore
from ..engine.support.logs import get_logger
from ..engine.turns.agent import AgentCore
from ..protocol.errors import ErrorCode, TurnloomError
from ..protocol.frames import (
    PROTOCOL_VERSION,
    FrameDecoder,
    FrameError,
    LargeBody,
    encode_frame,
)
from ..protocol.messages import error_response
from .answers import BY_NODE, SessionAnswers
from .attach import DETACHED, attachable
from .auth import AuthKey
from .intake import ANSWER_BUDGET_S, LARGE_BODY_BYTES, Intake
from .limits import ServerLimits
from .quotas import SessionQuota

log = get_logger("turnloom.server")


class SessionHost(Protocol):
    """What a session needs of its server (`turnloom.server.Server` is one)."""

    limits: ServerLimits
    shutting_down: bool
    #: The key sessions must present in ConfigureSession; None = no authentication.
    auth: AuthKey | None
    #: The open sessions by id (an attach takes an agent from the one holding it).
    sessions: dict[int, Session]
    #: The sessions with frames waiting for their loop iteration's write (`Session.send`), in
    #: the order they queued them (the keys; the values are None).
    unsent: dict[Session, None]

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


def send_unsent(server: SessionHost) -> None:
    """Write now the frames every session of `server` queued for its iteration's write."""
    unsent = server.unsent
    while unsent:
        session = next(iter(unsent))
        del unsent[session]
        session._flush()


class Session(asyncio.Protocol, SessionAnswers):
    """A client connection: its agents, its configuration, its outgoing bytes."""

    def __init__(self, server: SessionHost, session_id: int) -> None:
        self.server = server
        self.session_id = session_id
        self.limits = server.limits
        self.decoder = FrameDecoder(self.limits.max_frame_bytes)
        #: Large frames, taken over several loop iterations (the later ones wait for them).
        self.intake = Intake(self)
        #: The client is behind on reading its frames (reading is paused until it catches up).
        self.writing_paused = False
        self.transport: asyncio.Transport | None = None
        self._abort_timer: asyncio.TimerHandle | None = None
        #: Frames of this loop iteration, written together: one syscall for a reply and the
        #: events around it, instead of one each.
        self._pending: list[bytes] = []
        self._flush_handle: asyncio.Handle | None = None
        #: A turn ended while this read was answered (a cancel, a destroy): its frames wait
        #: for the iteration's flush, after its stopped task has unwound.
        self.turn_ended = False
        self.configured = False
        self.closed = False
        self.agents: dict[int, AgentCore] = {}
        #: Recently destroyed agent ids, so a late request gets 3002 rather than 3001 (bounded).
        self.destroyed: OrderedDict[int, None] = OrderedDict()
        #: Logged with every event of the session (a dict, not a bound logger: a bound logger
        #: would keep the output stream of the moment it was bound).
        self.context: dict[str, Any] = {"session_id": session_id}
        self.quota = SessionQuota(self.limits, server.engine_core.clock.now)
        #: ConfigureSessions refused for their auth key; at MAX_AUTH_FAILURES the session ends.
        self.auth_failures = 0
        self._configure_timer: asyncio.TimerHandle | None = None

    @property
    def engine_core(self) -> EngineCore:
        """The engine core of the session's server."""
        return self.server.engine_core

    @property
    def shutting_down(self) -> bool:
        """Whether the session's server is shutting down (requests are answered 2001)."""
        return self.server.shutting_down

    @property
    def auth(self) -> AuthKey | None:
        """The key this session must present (the server's), or None."""
        return self.server.auth

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
        if self.server.auth is not None:
            self._configure_timer = asyncio.get_running_loop().call_later(
                self.limits.configure_timeout_s, self._configure_expired
            )
        self.send(
            {
                "type": "SessionReady",
                "protocol_version": PROTOCOL_VERSION,
                "session_id": self.session_id,
                "max_frame_bytes": self.limits.max_frame_bytes,
                "max_agents": self.limits.max_agents_per_session,
                # Lets a client say "this server needs a key" rather than guess from a 2004.
                "auth_required": self.server.auth is not None,
            }
        )

    def data_received(self, data: bytes) -> None:
        """Decode frames and answer each one, in order, for up to `ANSWER_BUDGET_S`: the rest
        wait, undecoded, for the next loop iteration (`Intake.defer`). Never raises: asyncio
        would close the connection, so one frame would end the session."""
        if self.intake.busy:  # behind a large frame: these bytes wait their turn
            self.intake.hold(data)
            return
        decoder = self.decoder
        decoder.push(data)
        self.turn_ended = False
        until = time.perf_counter() + ANSWER_BUDGET_S
        while not self.closed and (item := decoder.pull(LARGE_BODY_BYTES)) is not None:
            if isinstance(item, LargeBody):
                self.intake.start(item)
                break
            if type(item) is dict and item.get("type") in BY_NODE and self.needs_stages(item):
                self.intake.start_frame(item)
                break
            self.answer(item)
            if decoder.buffered and time.perf_counter() > until:
                self.intake.defer()
                break
        if self._pending and not self.turn_ended:
            # The replies go out now, not after the walks they started have run (those walks'
            # events follow in this iteration's flush): about 10 us off a resume's ack. Not
            # when a turn ended meanwhile: the client then hears of it only once the turn's
            # task (its generation, say) has seen its cancellation, as before.
            self._flush()

    def answer(self, item: dict[str, Any] | FrameError) -> None:
        """Answer one frame, or the framing error that stands for it."""
        try:
            if isinstance(item, FrameError):
                log.info("frame.refused", code=int(item.code), message=item.message, **self.context)
                self.send(error_response(item.code, item.message, item.request_id))
            else:
                self.handle(item)
        except Exception as exc:
            # `handle` answers every request itself; this is the net for what it did not
            # foresee. The frame's request_id may be what failed, so the answer has none.
            log.exception("frame.failed", **self.context)
            self.send(
                error_response(
                    ErrorCode.MalformedMessage,
                    f"the frame could not be processed ({type(exc).__name__})",
                    None,
                )
            )

    def connection_lost(self, exc: Exception | None) -> None:
        """End the session: cancel its turns, destroy its agents (durable ones are kept)."""
        self.closed = True
        if self._abort_timer is not None:
            self._abort_timer.cancel()
            self._abort_timer = None
        self.configured_in_time()
        self.release()
        self.server.forget(self)
        log.info("session.closed", error=str(exc) if exc else None, **self.context)

    def configured_in_time(self) -> None:
        """The session is configured (or gone): disarm the configure deadline."""
        if self._configure_timer is not None:
            self._configure_timer.cancel()
            self._configure_timer = None

    def _configure_expired(self) -> None:
        self._configure_timer = None
        if self.configured or self.closed:
            return
        log.warning(
            "session.configure_timeout", timeout_s=self.limits.configure_timeout_s, **self.context
        )
        self.send(
            error_response(
                ErrorCode.Unauthorized,
                f"session closed: not authenticated within {self.limits.configure_timeout_s} s",
                None,
            )
        )
        self.close()

    def pause_writing(self) -> None:
        """The client is behind on reading: stop reading its requests."""
        # Backpressure: a client that does not read its replies gets no more requests read.
        self.writing_paused = True
        if self.transport is not None and not self.closed:
            self.transport.pause_reading()

    def resume_writing(self) -> None:
        """The client caught up: read its requests again."""
        self.writing_paused = False
        # Behind a large frame, reading stays paused: the intake resumes it when done.
        if self.transport is not None and not self.closed and not self.intake.busy:
            self.transport.resume_reading()

    def send(self, message: dict[str, Any]) -> None:
        """Queue one frame for this loop iteration's write (dropped once the session closes)."""
        if self.closed or self.transport is None:
            return
        self.send_encoded(self.encoded(message))

    def encoded(self, message: dict[str, Any], in_pieces: bool = False) -> bytes:
        """The frame of `message`, or of the notice that it could not be sent (any thread;
        `in_pieces`: see `encode_frame`)."""
        try:
            return encode_frame(message, self.limits.max_frame_bytes, in_pieces)
        except (FrameError, TypeError, ValueError, OverflowError, RecursionError) as error:
            return self._unsendable(message, error)

    def send_encoded(self, data: bytes) -> None:
        """`send` for a frame already encoded (`encoded`)."""
        if self.closed or self.transport is None:
            return
        self._pending.append(data)
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)
            self.server.unsent[self] = None

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
            self.server.unsent.pop(self, None)
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
        """Destroy every agent of the session (cancelling its open turn), except its durable
        agents: they are let go as they are, for a later `AttachAgent`; with a shared
        store, out of this worker's memory too (at once, or when their turn comes to rest)."""
        agents, self.agents = self.agents, {}
        kept = 0
        engine = self.engine_core
        for core in agents.values():
            if attachable(core):
                core.listener = DETACHED
                kept += 1
                if engine.leases is not None:  # a shared store: any worker may take it now
                    engine.evict(core)
            elif not core.destroyed:
                core.destroy()
        if agents:
            log.info("session.agents_released", agents=len(agents), kept=kept, **self.context)

    def take_over(self, agent_id: int) -> None:
        """Take a durable agent from the other session holding it, if one does: that session
        gets an `AgentDetached` event, and 3001 for the agent from then on."""
        for other in list(self.server.sessions.values()):
            if other is not self and agent_id in other.agents:
                other.lose(agent_id)

    def lose(self, agent_id: int, reason: str = "attached elsewhere") -> None:
        """Another session attached this agent (or another worker holds it now): forget it
        here, and say so."""
        self.agents.pop(agent_id, None)
        log.info("agent.detached", agent_id=agent_id, reason=reason, **self.context)
        self.send({"type": "AgentDetached", "agent_id": agent_id, "reason": reason})

    # --- requests ----------------------------------------------------------------------------
