"""The transition table, the shared machine and the diagrams generated from them
(docs/reference/turns.md#transition-table)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from transitions import MachineError

from turnloom.__main__ import write_diagrams
from turnloom.states import (
    MACHINE,
    OPEN_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    IllegalTransition,
    Trigger,
    TurnState,
    check,
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
    turn = SimpleNamespace(state=TurnState.PAUSED, has_timeout_exit=has_exit)
    assert fire(turn, Trigger.TIME_OUT) == dest
    assert turn.state == dest


def test_rejection_names_trigger_and_state_and_changes_nothing() -> None:
    turn = SimpleNamespace(state=TurnState.DONE, has_timeout_exit=False)
    with pytest.raises(IllegalTransition) as info:
        fire(turn, Trigger.RESUME)
    assert info.value.trigger == "resume" and info.value.state == "done"
    assert info.value.message == "can't resume when turn is done"
    assert turn.state == "done"


def test_check_names_the_operation_and_changes_nothing() -> None:
    turn = SimpleNamespace(state=TurnState.RUNNING, has_timeout_exit=False)
    with pytest.raises(IllegalTransition) as info:
        check(turn, Trigger.EDIT, "agent 7: change_params refused")
    assert info.value.message == "agent 7: change_params refused: can't edit when turn is running"
    assert turn.state is TurnState.RUNNING
    check(SimpleNamespace(state=TurnState.PAUSED), Trigger.EDIT)  # legal: no error


def test_the_runtime_machine_keeps_states_as_turn_states() -> None:
    turn = SimpleNamespace(state=TurnState.IDLE, has_timeout_exit=False)
    for trigger in (Trigger.EDIT, Trigger.START, Trigger.PAUSE, Trigger.EDIT):
        fire(turn, trigger)
        assert type(turn.state) is TurnState
    assert turn.state is TurnState.PAUSED


def test_edit_is_a_self_loop_of_idle_and_paused_only() -> None:
    rows = [row for row in TRANSITIONS if row.trigger is Trigger.EDIT]
    assert {(row.sources, row.dest) for row in rows} == {
        ((TurnState.IDLE,), TurnState.IDLE),
        ((TurnState.PAUSED,), TurnState.PAUSED),
    }
    assert "edit" in turn_machine_mermaid() and "edit" in turn_machine_dot()


def test_one_shared_machine_holds_no_turn() -> None:
    for _ in range(100):
        turn = SimpleNamespace(state=TurnState.IDLE, has_timeout_exit=False)
        for trigger in ("start", "pause", "resume", "proceed", "finish"):
            fire(turn, trigger)
    assert MACHINE.models == []
    assert not MACHINE.auto_transitions
    assert not any(name.startswith("to_") for name in MACHINE.events)


def test_is_legal_matches_legal_sources() -> None:
    for trigger in Trigger:
        for state in TurnState:
            assert is_legal(state, trigger) == (state in legal_sources(trigger))
    assert legal_sources(Trigger.CANCEL) == OPEN_STATES


def test_generated_diagrams_are_deterministic_and_mention_every_state() -> None:
    assert turn_machine_mermaid() == turn_machine_mermaid()
    assert turn_machine_dot() == turn_machine_dot()
    for state in TurnState:
        assert state.value in turn_machine_mermaid()
        assert state.value in turn_machine_dot()
    assert "time_out [no timeout exit]" in turn_machine_mermaid()


def test_committed_diagrams_are_up_to_date(tmp_path: Path) -> None:
    for fresh in write_diagrams(tmp_path):
        committed = REPO / "diagrams" / fresh.name
        assert committed.exists(), f"{committed} is missing: run `make diagrams`"
        assert committed.read_text() == fresh.read_text(), (
            f"{committed} is stale: run `make diagrams` and commit it"
        )


@pytest.mark.parametrize("has_exit", [True, False])
@pytest.mark.parametrize("state", list(TurnState))
@pytest.mark.parametrize("trigger", list(Trigger))
def test_fire_agrees_with_the_machines_own_trigger(
    trigger: Trigger, state: TurnState, has_exit: bool
) -> None:
    # `fire` takes a shortcut through the machine (see states/machine.py): it must land where
    # `Event.trigger` lands, and refuse where it refuses, in every state and condition.
    ours = SimpleNamespace(state=state, has_timeout_exit=has_exit)
    theirs = SimpleNamespace(state=state, has_timeout_exit=has_exit)
    try:
        MACHINE.events[trigger.value].trigger(theirs)
    except MachineError:
        with pytest.raises(IllegalTransition):
            fire(ours, trigger)
        assert ours.state is state
    else:
        assert fire(ours, trigger) is theirs.state
        assert ours.state is theirs.state
