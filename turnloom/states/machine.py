"""The one shared `transitions.Machine` that drives every turn, and the legality checks on it.

Built once at import with no models (DESIGN: a Machine per turn costs ~100 µs and ~17 KiB, and
`add_model` per turn slows down as the model list grows). Events are fired on plain objects
that carry a `state` attribute. The states are the `TurnState` members themselves, so
`turn.state` is always a `TurnState`.

How a trigger is fired (the hot path: five per turn). `Event.trigger(obj)` costs ~9 µs: it
builds an `EventData` and a `partial`, goes through the machine's queue check, runs seven
callback chains and emits about eight `logging` calls. This machine has no callbacks at all
(checked below at import), so `fire` does what is left of that work and nothing else: it takes
the `transitions.Transition` objects the machine holds for (trigger, current state), evaluates
their conditions on the turn the way `transitions.Condition.check` does, and applies the first
that holds with the machine's own `set_state`. tests/states/test_table.py fires every
trigger in every state both ways and checks they agree.
"""

from __future__ import annotations

from typing import Any, Protocol

from transitions import Machine, State

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


def _no_callbacks(machine: Machine) -> bool:
    """Whether nothing in `machine` has a callback, so firing may skip the callback chains."""
    hooks = (
        "prepare_event",
        "before_state_change",
        "after_state_change",
        "finalize_event",
        "on_exception",
        "on_final",
    )
    return (
        not any(getattr(machine, hook) for hook in hooks)
        and not any(state.on_enter or state.on_exit for state in machine.states.values())
        and not any(
            t.prepare or t.before or t.after
            for event in machine.events.values()
            for ts in event.transitions.values()
            for t in ts
        )
    )


if not _no_callbacks(MACHINE):
    raise RuntimeError("the turn machine gained callbacks, which fire() would skip")

#: A route: the destination `State` of one of the machine's transitions, and its conditions as
#: (turn attribute, value it must have) pairs, in the machine's order.
_Route = tuple[State, tuple[tuple[str, bool], ...]]


def _route(transition: Any) -> _Route:
    """A `transitions.Transition` of the machine as a route (the table has no internal
    transitions, and names its conditions by turn attribute)."""
    conditions = tuple((c.func, c.target) for c in transition.conditions)
    if transition.dest is None or not all(isinstance(name, str) for name, _ in conditions):
        raise TypeError(f"the turn machine has a transition fire() cannot take: {transition!r}")
    return MACHINE.states[transition.dest], conditions


#: The machine's transitions by trigger, then by source state.
_ROUTES: dict[Trigger, dict[TurnState, tuple[_Route, ...]]] = {
    trigger: {
        source: tuple(
            _route(t) for t in MACHINE.events[trigger.value].transitions.get(source.name, ())
        )
        for source in _LEGAL[trigger]
    }
    for trigger in Trigger
}
_set_state = MACHINE.set_state


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

    A rejected trigger leaves `turn.state` untouched (docs/reference/turns.md#rejections).
    """
    routes = _ROUTES[trigger].get(turn.state)
    if routes is None:
        raise IllegalTransition(str(trigger), str(turn.state))
    for dest, conditions in routes:
        # As `transitions.Condition.check` does for a property: its value must equal the target.
        if not conditions or all(getattr(turn, name) == target for name, target in conditions):
            _set_state(dest, turn)
            return turn.state
    # The table's rows for one trigger and source have complementary conditions.
    raise AssertionError(f"no transition of '{trigger}' applies in state '{turn.state}'")
