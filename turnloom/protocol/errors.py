"""The error codes (docs/reference/errors.md#error-codes) and the one exception hierarchy hosts
catch.

Every error is a `TurnloomError` carrying `code` (an `ErrorCode`) and `message`. Each code has
its own class, grouped by family, so a host can catch exactly what it handles:

    TurnloomError
    ├── ClientError         1xxx  ConnectionFailed, ConnectionDropped, Timeout
    ├── ServerError         2xxx  ServerShuttingDown, SessionNotReady, SessionLimitExceeded,
    │                             Unauthorized
    ├── AgentError          3xxx  InvalidAgentId, AgentAlreadyDestroyed, GraphCompilationFailed,
    │                             AgentBusy, UnknownNode, ParamNotMutable, InvalidParamValue,
    │                             InvalidExitTarget, AgentNotPaused, InvalidToolResults
    ├── InferenceError      4xxx  InferenceFailed, InferenceTimeout, MaxStepsExceeded
    └── ProtocolError       5xxx  MalformedMessage, UnknownMessageType, FrameTooLarge,
                                  ProtocolVersionMismatch

`TurnloomError(code, message)` builds the class of `code`, so an error decoded from the wire
is caught by the same `except AgentBusy:` as one raised in process.
"""

from __future__ import annotations

import enum
from typing import Any


class ErrorCode(enum.IntEnum):
    """Every error code turnloom uses."""

    ConnectionFailed = 1001
    ConnectionDropped = 1002
    Timeout = 1003
    ServerShuttingDown = 2001
    SessionNotReady = 2002
    #: A per-session or per-server limit of the wire server was reached.
    SessionLimitExceeded = 2003
    #: The server requires an auth key and the session's was missing or wrong.
    Unauthorized = 2004
    InvalidAgentId = 3001
    AgentAlreadyDestroyed = 3002
    GraphCompilationFailed = 3003
    AgentBusy = 3004
    UnknownNode = 3005
    ParamNotMutable = 3006
    InvalidParamValue = 3007
    InvalidExitTarget = 3008
    AgentNotPaused = 3012
    InvalidToolResults = 3016
    InferenceFailed = 4001
    InferenceTimeout = 4002
    MaxStepsExceeded = 4003
    MalformedMessage = 5001
    UnknownMessageType = 5002
    FrameTooLarge = 5003
    ProtocolVersionMismatch = 5004


class TurnloomError(Exception):
    """An operation failed: `code` says which way (an `ErrorCode`), `message` says in words."""

    def __new__(cls, code: int, message: str) -> TurnloomError:
        target = _CLASS_OF_CODE.get(code, cls) if cls in _DISPATCHING else cls
        return super().__new__(target)

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code, message)
        self.code = ErrorCode(code)
        self.message = message

    def __str__(self) -> str:
        return f"[{int(self.code)}] {self.message}"

    def __reduce__(self) -> tuple[Any, ...]:
        return (TurnloomError, (int(self.code), self.message))


class ClientError(TurnloomError):
    """1xxx: the client could not reach the server, lost it, or gave up waiting."""


class ConnectionFailed(ClientError):
    """1001: the server could not be reached, or did not open a session."""


class ConnectionDropped(ClientError):
    """1002: the connection broke; what was waiting on it will not be answered."""


class Timeout(ClientError):
    """1003: a blocking call got no answer within its timeout."""


class ServerError(TurnloomError):
    """2xxx: the server or the session refused the request as a whole."""


class ServerShuttingDown(ServerError):
    """2001: the server is shutting down."""


class SessionNotReady(ServerError):
    """2002: a request arrived before ConfigureSession."""


class SessionLimitExceeded(ServerError):
    """2003: a per-session or per-server limit or quota was reached."""


class Unauthorized(ServerError):
    """2004: the server requires an auth key; the one given was missing or wrong (the message
    never repeats it)."""


class AgentError(TurnloomError):
    """3xxx: an agent operation was refused; the agent is exactly as it was."""


class InvalidAgentId(AgentError):
    """3001: no agent has this id (in this session)."""


class AgentAlreadyDestroyed(AgentError):
    """3002: the agent was destroyed."""


class GraphCompilationFailed(AgentError):
    """3003: the graph cannot become an agent (empty, duplicate names, bad start, no model…)."""


class AgentBusy(AgentError):
    """3004: the agent's turn is open where the operation needs it idle (or paused)."""


class UnknownNode(AgentError):
    """3005: a node name that is not in the agent's graph."""


class ParamNotMutable(AgentError):
    """3006: a change touches a structural field, fixed at agent creation."""


class InvalidParamValue(AgentError):
    """3007: a value has the wrong type or is out of range."""


class InvalidExitTarget(AgentError):
    """3008: an exit names a node that is not in the graph."""


class AgentNotPaused(AgentError):
    """3012: a resume arrived while the agent's turn was not paused."""


class InvalidToolResults(AgentError):
    """3016: a tool_results batch does not fit the pending calls; the turn stays paused."""


class InferenceError(TurnloomError):
    """4xxx: a turn ended with status `error`; the agent stays usable."""


class InferenceFailed(InferenceError):
    """4001: the model failed while generating."""


class InferenceTimeout(InferenceError):
    """4002: a generation outlived its node's time budget."""


class MaxStepsExceeded(InferenceError):
    """4003: the turn walked more nodes than `max_steps_per_turn`."""


class ProtocolError(TurnloomError):
    """5xxx: a frame could not be taken as a request."""


class MalformedMessage(ProtocolError):
    """5001: the frame is not a valid message."""


class UnknownMessageType(ProtocolError):
    """5002: the message type is not one the server knows."""


class FrameTooLarge(ProtocolError):
    """5003: the frame is over the size limit."""


class ProtocolVersionMismatch(ProtocolError):
    """5004: client and server speak different protocol versions."""


_CLASS_OF_CODE: dict[int, type[TurnloomError]] = {
    code: cls
    for cls in (
        ConnectionFailed,
        ConnectionDropped,
        Timeout,
        ServerShuttingDown,
        SessionNotReady,
        SessionLimitExceeded,
        Unauthorized,
        InvalidAgentId,
        AgentAlreadyDestroyed,
        GraphCompilationFailed,
        AgentBusy,
        UnknownNode,
        ParamNotMutable,
        InvalidParamValue,
        InvalidExitTarget,
        AgentNotPaused,
        InvalidToolResults,
        InferenceFailed,
        InferenceTimeout,
        MaxStepsExceeded,
        MalformedMessage,
        UnknownMessageType,
        FrameTooLarge,
        ProtocolVersionMismatch,
    )
    for code in (ErrorCode[cls.__name__],)
}
# `TurnloomError(code, …)` and a family's `AgentError(code, …)` pick the code's own class.
_DISPATCHING = frozenset(
    {TurnloomError, ClientError, ServerError, AgentError, InferenceError, ProtocolError}
)


def error_class(code: int) -> type[TurnloomError]:
    """The class of errors with `code`."""
    return _CLASS_OF_CODE.get(code, TurnloomError)
