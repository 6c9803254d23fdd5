"""The transition table, the shared machine and the diagrams generated from them (SPEC §3, R-V1)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from turnloom.__main__ import write_diagrams
from turnloom.states import (
    MACHINE,
    OPEN_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    IllegalTransition,
    Trigger,
    TurnState,
    fire,
    is_legal,
    legal_sources,
)
from turnloom.states.diagrams import turn_machine_dot, turn_machine_mermaid

REPO = Path(__file__).resolve().parents[2]


def test_every_trigger_and_state_appears_in_the_table() -> None:
    assert {row.trigger for row in TRANSITIONS} == set(Trigger)
    reached = {row.dest for row in TRANSITIONS} | {TurnState.IDLE}
    assert reached == set(TurnState)


def test_terminal_states_have_no_way_out() -> None:
    for row in TRANSITIONS:
        assert not TERMINAL_STATES & set(row.sources), row


def test_conditional_rows_are_complementary() -> None:
    rows = [row for row in TRANSITIONS if row.trigger is Trigger.TIME_OUT]
    assert sorted(row.condition or "" for row in rows) == ["!has_timeout_exit", "has_timeout_exit"]
    assert {row.dest for row in rows} == {TurnState.RESUMING, TurnState.PAUSE_TIMED_OUT}


@pytest.mark.parametrize("has_exit, dest", [(True, "resuming"), (False, "pause_timed_out")])
def test_time_out_follows_the_condition(has_exit: bool, dest: str) -> None:
    turn = SimpleNamespace(state="paused", has_timeout_exit=has_exit)
    assert fire(turn, Trigger.TIME_OUT) == dest
    assert turn.state == dest


def test_rejection_names_trigger_and_state_and_changes_nothing() -> None:
    turn = SimpleNamespace(state="done", has_timeout_exit=False)
    with pytest.raises(IllegalTransition) as info:
        fire(turn, Trigger.RESUME)
    assert info.value.trigger == "resume" and info.value.state == "done"
    assert "'resume'" in info.value.message and "'done'" in info.value.message
    assert turn.state == "done"


def test_one_shared_machine_holds_no_turn() -> None:
    for _ in range(100):
        turn = SimpleNamespace(state="idle", has_timeout_exit=False)
        for trigger in ("start", "pause", "resume", "proceed", "finish"):
            fire(turn, trigger)
    assert MACHINE.models == []
    assert not MACHINE.auto_transitions
    assert not any(name.startswith("to_") for name in MACHINE.events)


def test_is_legal_matches_legal_sources() -> None:
    for trigger in Trigger:
        for state in TurnState:
            assert is_legal(state.value, trigger) == (state in legal_sources(trigger))
    assert legal_sources(Trigger.CANCEL) == OPEN_STATES


def test_generated_diagrams_are_deterministic_and_mention_every_state() -> None:
    assert turn_machine_mermaid() == turn_machine_mermaid()
    assert turn_machine_dot() == turn_machine_dot()
    for state in TurnState:
        assert state.value in turn_machine_mermaid()
        assert state.value in turn_machine_dot()
    assert "time_out [!has_timeout_exit]" in turn_machine_mermaid()


def test_committed_diagrams_are_up_to_date(tmp_path: Path) -> None:
    for fresh in write_diagrams(tmp_path):
        committed = REPO / "diagrams" / fresh.name
        assert committed.exists(), f"{committed} is missing: run `make diagrams`"
        assert committed.read_text() == fresh.read_text(), (
            f"{committed} is stale: run `make diagrams` and commit it"
        )
