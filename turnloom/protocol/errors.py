"""Error codes (SPEC §4), `TurnloomError`, and the one table from rejections to codes."""

from __future__ import annotations

import enum

from ..engine import rejections as r
from ..engine import results
from ..states import IllegalTransition, Rejection


class ErrorCode(enum.IntEnum):
    """Every error code of the contract."""

    ConnectionFailed = 1001
    ConnectionDropped = 1002
    Timeout = 1003
    ServerShuttingDown = 2001
    SessionNotReady = 2002
    #: beyond the seeds: a per-session or per-server limit of the wire server was reached.
    SessionLimitExceeded = 2003
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

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"[{int(code)}] {message}")
        self.code = ErrorCode(code)
        self.message = message


#: The single table from engine rejections and turn failures to error codes.
CODES: dict[type[BaseException], ErrorCode] = {
    r.UnknownAgent: ErrorCode.InvalidAgentId,
    r.AgentDestroyed: ErrorCode.AgentAlreadyDestroyed,
    r.GraphCompilationFailed: ErrorCode.GraphCompilationFailed,
    r.AgentBusy: ErrorCode.AgentBusy,
    r.UnknownNode: ErrorCode.UnknownNode,
    r.ParamNotMutable: ErrorCode.ParamNotMutable,
    r.InvalidParamValue: ErrorCode.InvalidParamValue,
    r.InvalidExitTarget: ErrorCode.InvalidExitTarget,
    r.AgentNotPaused: ErrorCode.AgentNotPaused,
    r.InvalidToolResults: ErrorCode.InvalidToolResults,
    results.InferenceFailed: ErrorCode.InferenceFailed,
    results.InferenceTimeout: ErrorCode.InferenceTimeout,
    results.MaxStepsExceeded: ErrorCode.MaxStepsExceeded,
}


def code_for(exc: BaseException) -> ErrorCode:
    """The code of a rejection or turn failure (by class, most specific first)."""
    for cls in type(exc).__mro__:
        if cls in CODES:
            return CODES[cls]
    if isinstance(exc, results.TurnFailure):
        return ErrorCode.InferenceFailed
    raise LookupError(f"no error code for {type(exc).__name__}")


def to_error(rejection: Rejection) -> TurnloomError:
    """The host-facing error for a rejection."""
    if isinstance(rejection, IllegalTransition):
        # The engine checks state before firing; a raw illegal trigger is an engine bug.
        raise AssertionError(f"unmapped state rejection: {rejection.message}") from rejection
    return TurnloomError(code_for(rejection), rejection.message)
