"""The one shared `transitions.Machine` that drives every turn, and the legality checks on it.

Built once at import with no models (DESIGN: a Machine per turn costs ~100 µs and ~17 KiB, and
`add_model` per turn slows down as the model list grows). Events are fired on plain objects
that carry a `state` attribute, via `machine.events[name].trigger(obj)`. The states are the
`TurnState` members themselves, so `turn.state` is always a `TurnState`.
"""

from __future__ import annotations

from typing import Any, Protocol

from transitions import Machine

from .rejections import IllegalTransition
from .table import INITIAL_STATE, TRANSITIONS, Transition, Trigger, TurnState


class StatefulTurn(Protocol):
    """What the machine needs of a turn: its state, and the condition attributes of the table."""

    state: TurnState

    @property
    def has_timeout_exit(self) -> bool:
        """Whether the current pause has somewhere to go when it times out."""
        ...


def transition_specs(
    rows: tuple[Transition, ...] = TRANSITIONS, *, by_value: bool = True
) -> list[dict[str, Any]]:
    """The table in the dict form `transitions.Machine` accepts.

    `by_value` names states by their values (the diagrams' machine, on plain strings); otherwise
    by the enum members (the runtime machine).
    """
    specs: list[dict[str, Any]] = []
    for row in rows:
        spec: dict[str, Any] = {
            "trigger": row.trigger.value,
            "source": [s.value if by_value else s for s in row.sources],
            "dest": row.dest.value if by_value else row.dest,
        }
        if row.condition is not None:
            key = "unless" if row.condition.startswith("!") else "conditions"
            spec[key] = row.condition.lstrip("!")
        specs.append(spec)
    return specs


STATE_NAMES: list[str] = [s.value for s in TurnState]

#: The runtime machine. `auto_transitions=False`: `to_<state>` triggers would bypass the table.
MACHINE = Machine(
    model=None,
    states=TurnState,
    transitions=transition_specs(by_value=False),
    initial=INITIAL_STATE,
    auto_transitions=False,
    send_event=False,
)

# Which states each trigger is legal in, read from the table and looked up before firing, so a
# rejection is a cheap set test rather than an exception raised and caught inside `transitions`.
_LEGAL: dict[Trigger, frozenset[TurnState]] = {
    trigger: frozenset(s for row in TRANSITIONS if row.trigger is trigger for s in row.sources)
    for trigger in Trigger
}
_EVENTS = {trigger: MACHINE.events[trigger.value] for trigger in Trigger}


def is_legal(state: TurnState, trigger: Trigger) -> bool:
    """Whether the table has a row for `trigger` in `state`."""
    return state in _LEGAL[trigger]


def check(turn: StatefulTurn, trigger: Trigger, context: str = "") -> None:
    """Raise `IllegalTransition` unless `trigger` is legal in `turn`'s state; change nothing.

    `context` (e.g. "agent 3: resume") prefixes the message, so a host error names the
    operation as well as the trigger and the state.
    """
    if turn.state not in _LEGAL[trigger]:
        raise IllegalTransition(str(trigger), str(turn.state), context)


def fire(turn: StatefulTurn, trigger: Trigger) -> TurnState:
    """Fire `trigger` on `turn` and return its new state; raise `IllegalTransition` if illegal.

    A rejected trigger leaves `turn.state` untouched (R-S2).
    """
    check(turn, trigger)
    _EVENTS[trigger].trigger(turn)
    return turn.state
