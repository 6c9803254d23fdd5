"""Every host operation is a trigger of the turn machine on the agent's current turn; the
machine's refusal is what the protocol table maps to 3004 / 3012, and a refused call changes
nothing. Checked state by state, operation by operation, against the operations table of
docs/reference/errors.md#operations-and-states."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.core import EngineCore
from turnloom.engine.turns.agent import AgentCore
from turnloom.engine.turns.results import AgentListener, PauseInfo
from turnloom.engine.turns.turn import OpenPause
from turnloom.protocol.codes import REFUSED_TRIGGER_CODES, code_for, rejected
from turnloom.states import OPERATION_TRIGGERS, IllegalTransition, Rejection, Trigger, TurnState

S = TurnState
Code = tl.ErrorCode

#: The operations table, written out: where each operation is legal; elsewhere its code ("noop"
#: for cancel).
LEGAL_IN: dict[str, set[TurnState]] = {
    "send_message": {S.IDLE},
    "change_params": {S.IDLE, S.PAUSED},
    "resume": {S.PAUSED},
    "cancel": {S.RUNNING, S.PAUSED, S.RESUMING},
}
REFUSED_AS: dict[str, Code | str] = {
    "send_message": Code.AgentBusy,
    "change_params": Code.AgentBusy,
    "resume": Code.AgentNotPaused,
    "cancel": "noop",
}


def test_operations_fire_the_spec_triggers() -> None:
    assert OPERATION_TRIGGERS == {
        "send_message": Trigger.START,
        "change_params": Trigger.EDIT,
        "resume": Trigger.RESUME,
        "cancel": Trigger.CANCEL,
    }


def test_the_protocol_table_maps_refused_triggers_to_the_spec_codes() -> None:
    assert {
        Trigger.START: Code.AgentBusy,
        Trigger.EDIT: Code.AgentBusy,
        Trigger.RESUME: Code.AgentNotPaused,
    } == REFUSED_TRIGGER_CODES
    for operation, trigger in OPERATION_TRIGGERS.items():
        if REFUSED_AS[operation] != "noop":
            refusal = IllegalTransition(trigger.value, "running", f"agent 1: {operation}")
            assert code_for(refusal) == REFUSED_AS[operation]


def test_a_refused_trigger_becomes_a_clean_error_naming_trigger_and_state() -> None:
    refusal = IllegalTransition("resume", "running", "agent 4: resume refused")
    error = rejected("resume", 4, refusal)
    assert isinstance(error, tl.AgentNotPaused) and isinstance(error, tl.AgentError)
    assert error.code == Code.AgentNotPaused
    assert error.message == "agent 4: resume refused: can't resume when turn is running"
    # Engine triggers never reach a host; if one did it is still a clean error, never a crash.
    assert isinstance(rejected("x", 4, IllegalTransition("proceed", "paused")), tl.TurnloomError)


class _Silent(AgentListener):
    pass


@pytest.fixture
def core() -> Iterator[EngineCore]:
    loop = asyncio.new_event_loop()
    engine = EngineCore([tl.MockModel("mock")])
    engine.bind(loop)
    yield engine
    # Walks the legal operations started never ran; end them on their loop before closing it.
    tasks = asyncio.all_tasks(loop)
    for task in tasks:
        task.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    loop.close()


def _agent_in(engine: EngineCore, state: TurnState) -> AgentCore:
    """An agent whose current turn stands in `state` (set directly: the table is under test)."""
    graph = graph_of(
        ("gate", tl.PauseParams(default_exit="answer")),
        ("answer", tl.CannedResponseParams(lines=["ok"])),
    )
    agent = engine.create_agent(graph, _Silent())
    turn = agent.turn
    if state is not S.IDLE:
        turn.begin(engine.next_turn_id(), "hi", False)
    turn.state = state
    if state is S.PAUSED:
        info = PauseInfo("gate", "default", "answer")
        turn.pause = OpenPause(info, "", 0.0, 1, None)
    return agent


def _call(agent: AgentCore, operation: str) -> object:
    if operation == "send_message":
        return agent.send_message("again")
    if operation == "change_params":
        return agent.change_params("answer", {"lines": ["changed"]})
    if operation == "resume":
        return agent.resume()
    return agent.cancel()


@pytest.mark.parametrize("operation", sorted(LEGAL_IN))
@pytest.mark.parametrize("state", list(TurnState), ids=str)
def test_every_operation_in_every_state(core: EngineCore, state: TurnState, operation: str) -> None:
    agent = _agent_in(core, state)
    turn, params = agent.turn, dict(agent.params)
    legal = state in LEGAL_IN[operation]
    if legal:
        _call(agent, operation)
        if operation == "change_params":
            assert agent.turn is turn and turn.state is state  # the edit self-loop
            assert agent.params["answer"].lines == ["changed"]  # type: ignore[attr-defined]
        return
    expected = REFUSED_AS[operation]
    if expected == "noop":
        assert _call(agent, operation) is False
    else:
        with pytest.raises(Rejection) as info:
            _call(agent, operation)
        assert isinstance(info.value, IllegalTransition)
        assert info.value.trigger == OPERATION_TRIGGERS[operation].value
        assert info.value.state == state.value
        assert code_for(info.value) == expected
        assert operation in info.value.message and state.value in info.value.message
    # Nothing changed.
    assert agent.turn is turn and turn.state is state
    assert dict(agent.params) == params


def test_argument_guards_run_only_for_a_legal_trigger(core: EngineCore) -> None:
    # change_params on an unknown node: 3005 when legal (paused), 3004 when the turn is running.
    paused, running = _agent_in(core, S.PAUSED), _agent_in(core, S.RUNNING)
    with pytest.raises(Rejection) as info:
        paused.change_params("ghost", {})
    assert code_for(info.value) == Code.UnknownNode
    with pytest.raises(Rejection) as info:
        running.change_params("ghost", {})
    assert code_for(info.value) == Code.AgentBusy
    # resume to an unknown node while idle: 3012, not 3005.
    with pytest.raises(Rejection) as info:
        _agent_in(core, S.IDLE).resume("ghost")
    assert code_for(info.value) == Code.AgentNotPaused


def test_a_finished_turn_leaves_a_fresh_idle_turn(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph_of(("answer", tl.CannedResponseParams(lines=["ok"]))))
    assert agent.send_message("hi").result is not None
    assert agent.wait() == tl.Step(result=agent.last_result)
    agent.change_params("answer", {"lines": ["again"]})  # idle: the edit is legal
    assert agent.send_message("hi").result.text == "again"  # type: ignore[union-attr]


def test_host_errors_are_classes_by_code(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph_of(("gate", tl.PauseParams())))
    with pytest.raises(tl.AgentNotPaused) as not_paused:
        agent.resume()
    assert not_paused.value.code == Code.AgentNotPaused
    assert "can't resume when turn is idle" in not_paused.value.message
    agent.send_message("hi")
    with pytest.raises(tl.AgentBusy) as busy:
        agent.send_message("again")
    assert "can't start when turn is paused" in busy.value.message
    with pytest.raises(tl.UnknownNode):
        agent.resume("ghost")
    with pytest.raises(tl.AgentError):
        agent.change_params("gate", {"pause_timeout_ms": 5})  # 3006, still an AgentError


def test_turnloom_error_builds_the_class_of_its_code() -> None:
    error = tl.TurnloomError(3016, "bad batch")
    assert type(error) is tl.InvalidToolResults and error.code == Code.InvalidToolResults
    assert str(error) == "[3016] bad batch"
    for code in Code:
        cls = type(tl.TurnloomError(code, "m"))
        assert cls.__name__ == code.name and issubclass(cls, tl.TurnloomError)
    import pickle

    again = pickle.loads(pickle.dumps(error))
    assert type(again) is tl.InvalidToolResults and again.message == "bad batch"


def test_check_of_a_namespace_turn_is_the_same_rule() -> None:
    # The engine asks the same function the tests of the table ask.
    from turnloom.states import check

    with pytest.raises(IllegalTransition):
        check(SimpleNamespace(state=S.RESUMING), Trigger.EDIT)
