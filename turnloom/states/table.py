"""The turn state machine as data: states and the one table of legal transitions
(docs/reference/turns.md#transition-table).

Everything that knows about turn states reads this module: the runtime machine, the diagrams,
the exhaustive state x trigger tests. Nothing here knows about nodes, models or sockets.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NamedTuple


class TurnState(StrEnum):
    """The states a turn can be in."""

    IDLE = "idle"
    RUNNING = "running"
    PAUSED = "paused"
    RESUMING = "resuming"
    DONE = "done"
    PAUSE_TIMED_OUT = "pause_timed_out"
    CANCELLED = "cancelled"
    FAILED = "failed"


class Trigger(StrEnum):
    """The events fired on a turn: by node execution and by host operations
    (docs/reference/turns.md#what-fires-each-trigger)."""

    START = "start"
    PAUSE = "pause"
    RESUME = "resume"
    PROCEED = "proceed"
    TIME_OUT = "time_out"
    FINISH = "finish"
    FAIL = "fail"
    CANCEL = "cancel"
    #: `change_params`: a self-loop, legal only where a node's params may change.
    EDIT = "edit"
    #: A message for an agent whose turn is open, under the `enqueue` input policy: a
    #: self-loop; the message waits and starts the next turn when this one ends.
    QUEUE = "queue"
    #: ... under `interrupt`: the open turn ends cancelled and the message starts a new turn.
    INTERRUPT = "interrupt"
    #: ... under `merge`: the open turn ends cancelled and a new turn gets both messages.
    MERGE = "merge"


class InputPolicy(StrEnum):
    """What a message does when it arrives while the agent's turn is open (running or paused)
    (docs/reference/turns.md#input-policies)."""

    #: Refused with 3004 AgentBusy; nothing changes.
    REJECT = "reject"
    #: Queued (up to the engine's `max_queued_messages`); it runs as the next turn.
    ENQUEUE = "enqueue"
    #: The open turn is cancelled (its partial reply left out of the dialog); the message
    #: starts a new turn at once.
    INTERRUPT = "interrupt"
    #: As interrupt, and the new turn's user message holds both player messages.
    MERGE = "merge"


class Transition(NamedTuple):
    """One row of the table: `trigger` moves a turn from any of `sources` to `dest`.

    `condition` names a boolean attribute of the turn; a leading ``!`` negates it. Rows that
    share a trigger and sources must have complementary conditions, so exactly one applies.
    """

    trigger: Trigger
    sources: tuple[TurnState, ...]
    dest: TurnState
    condition: str | None = None


S = TurnState
T = Trigger

#: The single source of truth for legal turn transitions.
TRANSITIONS: tuple[Transition, ...] = (
    Transition(T.START, (S.IDLE,), S.RUNNING),
    Transition(T.PAUSE, (S.RUNNING,), S.PAUSED),
    Transition(T.RESUME, (S.PAUSED,), S.RESUMING),
    Transition(T.PROCEED, (S.RESUMING,), S.RUNNING),
    Transition(T.TIME_OUT, (S.PAUSED,), S.RESUMING, "has_timeout_exit"),
    Transition(T.TIME_OUT, (S.PAUSED,), S.PAUSE_TIMED_OUT, "!has_timeout_exit"),
    Transition(T.FINISH, (S.RUNNING,), S.DONE),
    Transition(T.FAIL, (S.RUNNING, S.RESUMING), S.FAILED),
    Transition(T.CANCEL, (S.RUNNING, S.PAUSED, S.RESUMING), S.CANCELLED),
    Transition(T.EDIT, (S.IDLE,), S.IDLE),
    Transition(T.EDIT, (S.PAUSED,), S.PAUSED),
    Transition(T.QUEUE, (S.RUNNING,), S.RUNNING),
    Transition(T.QUEUE, (S.PAUSED,), S.PAUSED),
    Transition(T.QUEUE, (S.RESUMING,), S.RESUMING),
    Transition(T.INTERRUPT, (S.RUNNING, S.PAUSED, S.RESUMING), S.CANCELLED),
    Transition(T.MERGE, (S.RUNNING, S.PAUSED, S.RESUMING), S.CANCELLED),
)

#: The trigger a message fires on an open turn under each input policy (on an idle turn every
#: policy fires `start`). `reject` fires `start` too, which the table refuses there: 3004.
POLICY_TRIGGERS: dict[InputPolicy, Trigger] = {
    InputPolicy.REJECT: T.START,
    InputPolicy.ENQUEUE: T.QUEUE,
    InputPolicy.INTERRUPT: T.INTERRUPT,
    InputPolicy.MERGE: T.MERGE,
}

#: The trigger each host operation fires on the agent's current turn
#: (docs/reference/turns.md#operations-are-triggers).
OPERATION_TRIGGERS: dict[str, Trigger] = {
    "send_message": T.START,
    "change_params": T.EDIT,
    "resume": T.RESUME,
    "cancel": T.CANCEL,
}

#: States a turn never leaves.
TERMINAL_STATES: frozenset[TurnState] = frozenset(
    {S.DONE, S.PAUSE_TIMED_OUT, S.CANCELLED, S.FAILED}
)

#: States in which a turn is open: the agent is busy.
OPEN_STATES: frozenset[TurnState] = frozenset({S.RUNNING, S.PAUSED, S.RESUMING})

INITIAL_STATE = S.IDLE


def legal_sources(trigger: Trigger) -> frozenset[TurnState]:
    """The states in which `trigger` is legal."""
    return frozenset(s for row in TRANSITIONS if row.trigger is trigger for s in row.sources)
