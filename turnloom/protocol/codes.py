"""The one table from refused triggers, engine rejections and turn failures to error codes.

The engine says *what* was refused (a `Rejection`: an illegal trigger of the turn machine, or a
failed argument guard) and never a code; this module decides the code
(docs/reference/errors.md#refused-triggers), and turns a rejection into the host-facing
`TurnloomError`, logging it with its code.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..engine.support import rejections as r
from ..engine.support.logs import get_logger
from ..engine.turns import results
from ..engine.turns.observers import TurnObserver, tell
from ..states import IllegalTransition, Rejection, Trigger
from .errors import ErrorCode, TurnloomError

log = get_logger("turnloom.host")


class SessionQuotaExceeded(results.TurnFailure):
    """A generation refused because its session used up a quota (generations or tokens per
    minute): the turn ends `error` with code 2003, the message naming the quota. The server
    raises it; it lives here, below the server, so that the table below can map it."""


#: A host operation's trigger refused by the turn machine -> its code. A refused
#: `cancel` is no error (it answers "nothing to cancel"), so it has no row.
REFUSED_TRIGGER_CODES: dict[Trigger, ErrorCode] = {
    Trigger.START: ErrorCode.AgentBusy,
    Trigger.EDIT: ErrorCode.AgentBusy,
    Trigger.RESUME: ErrorCode.AgentNotPaused,
}

#: Engine rejections (argument guards, agent lifecycle) and turn failures -> their codes.
CODES: dict[type[BaseException], ErrorCode] = {
    r.UnknownAgent: ErrorCode.InvalidAgentId,
    r.HeldElsewhere: ErrorCode.AgentBusy,
    r.QueueFull: ErrorCode.AgentBusy,
    r.AgentDestroyed: ErrorCode.AgentAlreadyDestroyed,
    r.GraphCompilationFailed: ErrorCode.GraphCompilationFailed,
    r.UnknownNode: ErrorCode.UnknownNode,
    r.ParamNotMutable: ErrorCode.ParamNotMutable,
    r.InvalidParamValue: ErrorCode.InvalidParamValue,
    r.InvalidExitTarget: ErrorCode.InvalidExitTarget,
    r.InvalidToolResults: ErrorCode.InvalidToolResults,
    results.InferenceFailed: ErrorCode.InferenceFailed,
    results.InferenceTimeout: ErrorCode.InferenceTimeout,
    results.MaxStepsExceeded: ErrorCode.MaxStepsExceeded,
    SessionQuotaExceeded: ErrorCode.SessionLimitExceeded,
}


def code_for(exc: BaseException) -> ErrorCode:
    """The code of a rejection or turn failure (by class, most specific first)."""
    if isinstance(exc, IllegalTransition):
        # Only host triggers reach a host; an engine trigger refused there means the turn is
        # somewhere the operation cannot act on, which a host sees as busy.
        return REFUSED_TRIGGER_CODES.get(Trigger(exc.trigger), ErrorCode.AgentBusy)
    for cls in type(exc).__mro__:
        if cls in CODES:
            return CODES[cls]
    if isinstance(exc, results.TurnFailure):
        return ErrorCode.InferenceFailed
    raise LookupError(f"no error code for {type(exc).__name__}")


def rejected(
    operation: str,
    agent_id: int | None,
    rejection: Rejection,
    observers: Sequence[TurnObserver] = (),
) -> TurnloomError:
    """Log a rejection with its code and turn it into the host-facing error; the engine's
    `observers` (if given) hear of it."""
    error = TurnloomError(code_for(rejection), rejection.message)
    if observers:
        tell(observers, "rejected", agent_id, operation, int(error.code), rejection.message)
    log.info(
        "rejected",
        operation=operation,
        agent_id=agent_id,
        code=int(error.code),
        message=rejection.message,
    )
    return error


def too_deep(operation: str) -> TurnloomError:
    """The refusal (3007) of an argument nested too deep to read, copy or send: every face
    gives it where Python would raise RecursionError, and nothing has changed by then."""
    return TurnloomError(
        ErrorCode.InvalidParamValue, f"{operation}: an argument is nested too deep to be read"
    )
