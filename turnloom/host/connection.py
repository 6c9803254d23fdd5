"""The client's end of one session: frames out, replies matched to requests, events routed.

Everything runs on the client's loop. A reply is handed to its request's `on_reply` inside
`data_received`, before any later frame is read, so a caller can start listening for the
events that follow a reply without missing one.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from ssl import SSLContext, create_default_context
from typing import Any, Protocol

from ..engine.support.guards import brief
from ..engine.support.logs import get_logger
from ..protocol.errors import ErrorCode, TurnloomError
from ..protocol.frames import (
    MAX_FRAME_BYTES,
    PROTOCOL_VERSION,
    FrameDecoder,
    FrameError,
    encode_frame,
)
from ..protocol.messages import EVENTS, REPLIES

log = get_logger("turnloom.client")

#: Runs on the loop thread when a request's successful reply arrives; its return value is
#: the request's result.
OnReply = Callable[[dict[str, Any]], Any]


class EventSink(Protocol):
    """Where the events of one agent go."""

    def on_frame(self, frame: dict[str, Any]) -> None:
        """An AnswerText, NodeEvent or TurnComplete of this agent."""

    def fail(self, error: TurnloomError) -> None:
        """The agent's waiters will never be answered (the connection is gone)."""


def error_of(frame: dict[str, Any]) -> TurnloomError:
    """The `TurnloomError` an `ErrorResponse` frame carries."""
    code, message = frame.get("code"), str(frame.get("message", ""))
    try:
        return TurnloomError(code, message)  # type: ignore[arg-type]
    except (ValueError, TypeError):  # a code this client does not know
        return TurnloomError(ErrorCode.MalformedMessage, f"server error {brief(code)}: {message}")


def client_context(option: SSLContext | bool | None) -> SSLContext | None:
    """The TLS context a client connects with: the caller's own, a default one (the system's
    trust store, host name checked) for `True`, none (plain TCP) for `None` or `False`."""
    if option is None or option is False:
        return None
    if option is True:
        return create_default_context()
    if isinstance(option, SSLContext):
        return option
    raise TypeError(f"ssl must be an ssl.SSLContext, True or None, got {type(option).__name__}")


def check_auth_key(auth_key: object) -> None:
    """Refuse (TypeError) an auth key that is not a string, before anything is sent; the
    message never shows the value."""
    if auth_key is not None and not isinstance(auth_key, str):
        raise TypeError(f"auth_key must be a str or None, got {type(auth_key).__name__}")


class Connection(asyncio.Protocol):
    """One session to a server, seen from the client."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        #: The frame limit, both ways; SessionReady tells the server's.
        self.max_frame_bytes = MAX_FRAME_BYTES
        self.decoder = FrameDecoder(self.max_frame_bytes)
        self.transport: asyncio.Transport | None = None
        self.ready: asyncio.Future[dict[str, Any]] = self.loop.create_future()
        self.lost: asyncio.Future[None] = self.loop.create_future()
        self.sinks: dict[int, EventSink] = {}
        #: Why requests are refused without being sent (closing or closed), if they are.
        self.error: TurnloomError | None = None
        self._pending: dict[int, tuple[asyncio.Future[Any], OnReply | None]] = {}
        self._ids = itertools.count(1)

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        timeout: float | None,
        *,
        ssl: SSLContext | None = None,
        auth_key: str | None = None,
    ) -> tuple[Connection, dict[str, Any]]:
        """Connect (over TLS with `ssl`), read SessionReady, configure the session with
        `auth_key` if given (1001 when that fails, 2004 when the server refuses the key, 5004
        when it speaks another version)."""
        loop = asyncio.get_running_loop()
        where = f"{host}:{port}"
        try:
            connecting = loop.create_connection(cls, host, port, ssl=ssl)
            _, conn = await asyncio.wait_for(connecting, timeout)
        except (OSError, TimeoutError) as exc:  # ssl.SSLError is an OSError
            raise TurnloomError(
                ErrorCode.ConnectionFailed, f"cannot connect to {where}: {exc or 'timed out'}"
            ) from None
        try:
            ready = await asyncio.wait_for(asyncio.shield(conn.ready), timeout)
            hello = {
                "type": "ConfigureSession",
                "protocol_version": PROTOCOL_VERSION,
                "client_name": "turnloom-python",
            }
            if auth_key is not None:
                hello["auth_key"] = auth_key
            await asyncio.wait_for(conn.request(hello), timeout)
        except TimeoutError:
            conn.abort()
            raise TurnloomError(
                ErrorCode.ConnectionFailed, f"{where} did not open a session within {timeout} s"
            ) from None
        except TurnloomError as error:
            conn.abort()
            if error.code == ErrorCode.ConnectionDropped:
                raise TurnloomError(
                    ErrorCode.ConnectionFailed, f"{where} closed the connection: {error.message}"
                ) from None
            raise
        return conn, ready

    # --- asyncio.Protocol --------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """The connection is up (SessionReady comes next)."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        """Decode frames and hand each to its request or agent, in order."""
        for item in self.decoder.feed(data):
            if isinstance(item, FrameError):
                log.warning("client.bad_frame", code=int(item.code), message=item.message)
                continue
            try:
                self._receive(item)
            except Exception:
                # A frame this client cannot read (an odd agent_id, say) must not raise out of
                # data_received: asyncio would drop the connection and every agent on it.
                log.exception("client.unreadable_frame", frame_type=brief(item.get("type")))

    def connection_lost(self, exc: Exception | None) -> None:
        """Fail every pending request and waiter with 1002."""
        why = f"connection to the server was lost ({exc or 'closed'})"
        if self.error is not None and self.error.code != ErrorCode.ConnectionDropped:
            why += f" after: {self.error.message}"
        self.error = error = TurnloomError(ErrorCode.ConnectionDropped, why)
        pending, self._pending = self._pending, {}
        for future, _ in pending.values():
            if not future.done():
                future.set_exception(error)
        if not self.ready.done():
            self.ready.set_exception(error)
        for sink in list(self.sinks.values()):
            sink.fail(error)
        self.sinks.clear()
        if not self.lost.done():
            self.lost.set_result(None)

    # --- frames in ---------------------------------------------------------------------------

    def _receive(self, frame: dict[str, Any]) -> None:
        kind = frame["type"]
        request_id = frame.get("request_id")
        if kind in EVENTS:
            sink = self.sinks.get(frame.get("agent_id"))  # type: ignore[arg-type]
            if sink is not None:
                sink.on_frame(frame)
        elif kind in REPLIES and request_id is not None:
            self._reply(request_id, frame)
        elif kind == "SessionReady":
            limit = frame.get("max_frame_bytes")
            if isinstance(limit, int) and limit > 0:
                self.max_frame_bytes = self.decoder.max_bytes = limit
            if not self.ready.done():
                self.ready.set_result(frame)
        elif kind == "ErrorResponse":
            self._notice(frame)
        else:
            log.warning("client.unexpected_frame", frame_type=kind)

    def _reply(self, request_id: int, frame: dict[str, Any]) -> None:
        entry = self._pending.pop(request_id, None)
        if entry is None:
            log.warning("client.unexpected_reply", request_id=request_id, frame_type=frame["type"])
            return
        future, on_reply = entry
        if future.done():  # the caller gave up waiting (a timeout)
            return
        if frame["type"] == "ErrorResponse":
            future.set_exception(error_of(frame))
            return
        try:
            future.set_result(on_reply(frame) if on_reply is not None else frame)
        except Exception as exc:  # a reply this client cannot read
            future.set_exception(exc)

    def _notice(self, frame: dict[str, Any]) -> None:
        """An ErrorResponse that answers no request: shutdown, limits, an unsendable event."""
        error = error_of(frame)
        log.warning("client.server_notice", code=int(error.code), message=error.message)
        if error.code in (ErrorCode.ServerShuttingDown, ErrorCode.SessionLimitExceeded):
            self.error = error
        sink = self.sinks.get(frame.get("agent_id"))  # type: ignore[arg-type]
        if sink is not None:
            sink.fail(error)
        if not self.ready.done() and self.error is error:
            self.ready.set_exception(error)

    # --- frames out --------------------------------------------------------------------------

    def request(
        self, message: dict[str, Any], on_reply: OnReply | None = None
    ) -> asyncio.Future[Any]:
        """Send a request; the future gets `on_reply(reply)` or the `TurnloomError` it met."""
        future: asyncio.Future[Any] = self.loop.create_future()
        if self.error is not None or self.transport is None:
            future.set_exception(
                self.error or TurnloomError(ErrorCode.ConnectionDropped, "not connected")
            )
            return future
        request_id = next(self._ids)
        message["request_id"] = request_id
        try:
            data = encode_frame(message, self.max_frame_bytes)
        except FrameError as error:
            future.set_exception(TurnloomError(error.code, error.message))
            return future
        except (TypeError, ValueError, OverflowError) as exc:
            future.set_exception(
                TurnloomError(
                    ErrorCode.InvalidParamValue,
                    f"{message['type']} cannot be sent: a value is not plain data ({exc})",
                )
            )
            return future
        self._pending[request_id] = (future, on_reply)
        self.transport.write(data)
        return future

    def abort(self) -> None:
        """Drop the connection at once."""
        if self.transport is not None:
            self.transport.abort()

    async def close(self, timeout: float | None = 5.0) -> None:
        """Close the session: send EOF and wait for the server to hang up, so that once this
        returns the server has ended the session's turns and destroyed its agents."""
        transport = self.transport
        if transport is None or self.lost.done():
            return
        if transport.can_write_eof():
            transport.write_eof()
        else:
            transport.close()
        try:
            await asyncio.wait_for(asyncio.shield(self.lost), timeout)
        except TimeoutError:
            transport.abort()
