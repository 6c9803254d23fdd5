"""The turn machine's diagrams say what the table says, in words a designer reads."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from turnloom.states import INITIAL_STATE, TERMINAL_STATES, TRANSITIONS, TurnState
from turnloom.states.diagrams import guard_text, turn_machine_dot, turn_machine_mermaid

EDGE = re.compile(r"^  (\w+) --> (\w+): (.+)$")
TERMINAL_MARK = re.compile(r"^  (\w+) --> \[\*\]$")


def _labels_of_table() -> set[tuple[str, str, str]]:
    """(source, dest, trigger with its guard) for every row of the table, in the drawn words."""
    found = set()
    for row in TRANSITIONS:
        label = row.trigger.value
        if row.condition is not None:
            label += f" [{guard_text(row.condition)}]"
        found |= {(s.value, row.dest.value, label) for s in row.sources}
    return found


def test_the_mermaid_edges_are_exactly_the_table_rows() -> None:
    drawn = set()
    for line in turn_machine_mermaid().splitlines():
        if match := EDGE.match(line):
            source, dest, labels = match.groups()
            for label in labels.split(", "):
                # The host operation in parentheses is a reader's aid, not part of the row.
                drawn.add((source, dest, re.sub(r" \(\w+\)", "", label)))
    assert drawn == _labels_of_table()


def test_mermaid_has_a_titled_front_matter_and_marks_start_and_terminal_states() -> None:
    text = turn_machine_mermaid()
    assert text.startswith("---\ntitle: Turn states\n---\nstateDiagram-v2\n")
    assert f"  [*] --> {INITIAL_STATE.value}" in text.splitlines()
    ended = {m.group(1) for line in text.splitlines() if (m := TERMINAL_MARK.match(line))}
    assert ended == {s.value for s in TERMINAL_STATES}


def test_no_state_is_styled_as_the_current_one() -> None:
    # transitions' drawings fill the initial state red as the model's "current" state.
    for text in (turn_machine_mermaid(), turn_machine_dot()):
        assert "darksalmon" not in text and "color=red" not in text and "s_active" not in text


def test_dot_draws_terminal_states_as_double_circles_and_only_them() -> None:
    dot = turn_machine_dot()
    for state in TurnState:
        line = next(line for line in dot.splitlines() if line.strip().startswith(state.value + " "))
        assert ("doublecircle" in line) == (state in TERMINAL_STATES), line
    assert "__start__ -> idle" in dot


def test_guards_read_as_words() -> None:
    assert guard_text("has_timeout_exit") == "has timeout exit"
    assert guard_text("!has_timeout_exit") == "no timeout exit"
    assert guard_text("!ready") == "not ready"
    for text in (turn_machine_mermaid(), turn_machine_dot()):
        assert "time_out [no timeout exit]" in text
        assert "!" not in text


@pytest.mark.parametrize("draw", [turn_machine_mermaid, turn_machine_dot])
def test_host_operations_are_named_beside_their_triggers(draw: Callable[[], str]) -> None:
    text = draw()
    assert "start (send_message)" in text and "edit (change_params)" in text
