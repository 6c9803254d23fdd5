"""The one shared `transitions.Machine` that drives every turn.

Built once at import with no models (DESIGN: a Machine per turn costs ~100 µs and ~17 KiB, and
`add_model` per turn slows down as the model list grows). Events are fired on plain objects
that carry a `state` attribute, via `machine.events[name].trigger(obj)`.
"""

from __future__ import annotations

from typing import Any, Protocol

from transitions import Machine

from .rejections import IllegalTransition
from .table import INITIAL_STATE, TRANSITIONS, Transition, Trigger, TurnState


class StatefulTurn(Protocol):
    """What the machine needs of a turn: its state, and the condition attributes of the table."""

    state: str

    @property
    def has_timeout_exit(self) -> bool:
        """Whether the current pause has somewhere to go when it times out."""
        ...


def transition_specs(rows: tuple[Transition, ...] = TRANSITIONS) -> list[dict[str, Any]]:
    """The table in the dict form `transitions.Machine` accepts."""
    specs: list[dict[str, Any]] = []
    for row in rows:
        spec: dict[str, Any] = {
            "trigger": row.trigger.value,
            "source": [s.value for s in row.sources],
            "dest": row.dest.value,
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
    states=STATE_NAMES,
    transitions=transition_specs(),
    initial=INITIAL_STATE.value,
    auto_transitions=False,
    send_event=False,
)

# Which states each trigger is legal in, looked up before firing so a rejection is a cheap dict
# test rather than an exception raised and caught inside `transitions`.
_LEGAL: dict[str, frozenset[str]] = {
    name: frozenset(event.transitions) for name, event in MACHINE.events.items()
}
_EVENTS = {name: MACHINE.events[name] for name in _LEGAL}


def is_legal(state: str, trigger: Trigger | str) -> bool:
    """Whether the table has a row for `trigger` in `state`."""
    return str(trigger) in _LEGAL and state in _LEGAL[str(trigger)]


def fire(turn: StatefulTurn, trigger: Trigger | str) -> str:
    """Fire `trigger` on `turn` and return its new state; raise `IllegalTransition` if illegal.

    A rejected trigger leaves `turn.state` untouched (R-S2).
    """
    name = str(trigger)
    if not is_legal(turn.state, name):
        raise IllegalTransition(name, turn.state)
    _EVENTS[name].trigger(turn)
    return turn.state
