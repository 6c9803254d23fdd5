"""Pausing and resuming: what pauses, plain and jump resumes, timeouts, stall warnings, paused time
and races (docs/reference/pauses.md)."""

from __future__ import annotations

import asyncio

import pytest
import structlog

import turnloom as tl
from tests.helpers import Recorder, graph_of

Code = tl.ErrorCode


def gate_graph(**gate: object) -> tl.GraphDescription:
    """gate ⏸ → say 'after'; 'other' and 'late' as jump / timeout targets."""
    return graph_of(
        ("gate", tl.PauseParams(default_exit="say", **gate)),  # type: ignore[arg-type]
        ("say", tl.CannedResponseParams(lines=["after"])),
        ("other", tl.CannedResponseParams(lines=["jumped"])),
        ("late", tl.CannedResponseParams(lines=["too late"])),
    )


def test_pause_node_pauses_after_it_exits_and_reports_node_and_exit(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    rec = Recorder(agent)
    step = agent.send_message("hi")
    assert step.paused and step.result is None
    assert step.pause == tl.PauseInfo("gate", "default", "say", 0)
    assert rec.events == [("paused", "gate", "default")]


def test_plain_resume_continues_via_the_pending_exit(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    rec = Recorder(agent)
    agent.send_message("hi")
    result = agent.resume().result
    assert result is not None and result.status == tl.TurnStatus.SUCCESS
    assert result.text == "after" and result.pause_count == 1
    assert ("resumed", "gate", "") in rec.events


def test_jump_resume_goes_to_the_named_node(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    agent.send_message("hi")
    result = agent.resume("other").result
    assert result is not None and result.text == "jumped"


def test_jump_to_unknown_node_is_3005_and_the_turn_stays_paused(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    agent.send_message("hi")
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume("nope")
    assert info.value.code == Code.UnknownNode and "'nope'" in info.value.message
    assert agent.wait().pause == tl.PauseInfo("gate", "default", "say", 0)
    assert agent.resume().result.text == "after"  # type: ignore[union-attr]  # safe to retry


def test_results_on_a_pause_node_are_3016_and_stay_paused(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    agent.send_message("hi")
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume(tool_results=[tl.ToolResult("c00000000", "{}")])
    assert info.value.code == Code.InvalidToolResults
    assert "c00000000" in info.value.message and "expected call ids []" in info.value.message
    assert agent.wait().paused
    assert agent.resume(tool_results=[]).result.text == "after"  # type: ignore[union-attr]


@pytest.mark.parametrize("phase", ["idle", "finished"])
def test_resume_when_not_paused_is_3012(engine: tl.Engine, phase: str) -> None:
    agent = engine.create_agent(gate_graph())
    if phase == "finished":
        agent.send_message("hi")
        agent.resume()
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume()
    assert info.value.code == Code.AgentNotPaused


def test_params_changed_while_paused_are_seen_later_in_the_same_turn(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    agent.send_message("hi")
    agent.change_params("say", tl.CannedResponseParams(lines=["changed while paused"]))
    assert agent.resume().result.text == "changed while paused"  # type: ignore[union-attr]


def test_send_while_paused_is_3004(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    agent.send_message("hi")
    with pytest.raises(tl.TurnloomError) as info:
        agent.send_message("again")
    assert info.value.code == Code.AgentBusy and "paused" in info.value.message


def test_zero_timeout_waits_forever_until_cancelled(
    engine: tl.Engine, clock: tl.VirtualClock
) -> None:
    agent = engine.create_agent(gate_graph())
    rec = Recorder(agent)
    agent.send_message("hi")
    clock.advance(10 * 24 * 3600)
    assert agent.wait().paused
    assert agent.cancel() is True
    assert rec.results[-1].status == tl.TurnStatus.CANCELLED


def test_timeout_with_exit_continues_from_it(engine: tl.Engine, clock: tl.VirtualClock) -> None:
    agent = engine.create_agent(
        gate_graph(pause_timeout_ms=2000, timeout_exit="late"), enable_diagnostics=True
    )
    rec = Recorder(agent)
    agent.send_message("hi")
    clock.advance(1.999)
    assert agent.wait().paused
    clock.advance(0.001)
    result = agent.wait_complete(timeout=5)
    assert result is not None and result.status == tl.TurnStatus.SUCCESS
    assert result.text == "too late"
    assert result.paused_duration_s == pytest.approx(2.0)
    assert result.debug_info["nodes"][0]["exit_route"] == "timeout"  # type: ignore[index]
    assert ("resumed", "gate", "late") in rec.events


def test_timeout_without_exit_ends_pause_timed_out_and_keeps_the_interaction(
    engine: tl.Engine, clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    g = graph_of(
        ("hello", tl.CannedResponseParams(lines=["hello"], default_exit="gate")),
        ("gate", tl.PauseParams(pause_timeout_ms=500, default_exit="")),
        ("echo", tl.GenerateParams()),
    )
    agent = engine.create_agent(g)
    rec = Recorder(agent)
    agent.send_message("first")
    clock.advance(0.5)
    result = agent.wait_complete(timeout=5)
    assert result is not None and result.status == tl.TurnStatus.PAUSE_TIMED_OUT
    assert result.text == "hello" and rec.finals() == ["hello"]
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume()
    assert info.value.code == Code.AgentNotPaused
    # The partial interaction is in the dialog: the next model call sees it.
    step = agent.send_message("second")
    assert step.paused  # pauses again at gate; jump to the Generate node
    agent.resume("echo")
    chat = mock_model.requests[-1].messages
    assert chat[:3] == [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "second"},
    ]


def test_resume_beats_the_timer_and_the_timer_is_then_a_no_op(
    engine: tl.Engine, clock: tl.VirtualClock
) -> None:
    agent = engine.create_agent(gate_graph(pause_timeout_ms=1000))
    rec = Recorder(agent)
    agent.send_message("hi")
    assert agent.resume().result.text == "after"  # type: ignore[union-attr]
    clock.advance(5)
    assert [r.status for r in rec.results] == [tl.TurnStatus.SUCCESS]
    assert clock.pending() == 0


def test_timer_beats_the_resume_which_gets_3012(engine: tl.Engine, clock: tl.VirtualClock) -> None:
    agent = engine.create_agent(gate_graph(pause_timeout_ms=1000))
    agent.send_message("hi")
    clock.advance(1)
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume()
    assert info.value.code == Code.AgentNotPaused
    assert agent.wait().result.status == tl.TurnStatus.PAUSE_TIMED_OUT  # type: ignore[union-attr]


def test_two_racing_resumes_one_wins_the_other_gets_3012(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    agent.send_message("hi")
    futures = [agent.resume_async() for _ in range(2)]
    outcomes = []
    for f in futures:
        try:
            outcomes.append(f.result(5).result.text)  # type: ignore[union-attr]
        except tl.TurnloomError as err:
            outcomes.append(int(err.code))
    assert sorted(map(str, outcomes)) == ["3012", "after"]


def test_a_turn_may_pause_many_times_and_paused_time_is_excluded(
    engine: tl.Engine, clock: tl.VirtualClock
) -> None:
    g = graph_of(
        ("p1", tl.PauseParams(default_exit="p2")),
        ("p2", tl.PauseParams(default_exit="p3")),
        ("p3", tl.PauseParams(default_exit="")),
    )
    agent = engine.create_agent(g, enable_diagnostics=True)
    step = agent.send_message("hi")
    for expected in ("p1", "p2", "p3"):
        assert step.pause is not None and step.pause.node_name == expected
        clock.advance(60)
        step = agent.resume()
    result = step.result
    assert result is not None and result.pause_count == 3
    assert result.paused_duration_s == pytest.approx(180.0)
    info = result.debug_info
    assert info is not None and info["pause_count"] == 3
    assert info["paused_duration_s"] == pytest.approx(180.0)
    for entry in info["nodes"]:
        assert entry["_type"] == "PauseNode" and "diagnostics" not in entry
        assert entry["duration_s"] < 0.05  # not the 60 s the pause was held


def test_stall_warning_once_per_pause(clock: tl.VirtualClock, mock_model: tl.MockModel) -> None:
    settings = tl.EngineSettings(pause_stall_warn_ms=15_000)
    with tl.Engine(mock_model, clock=clock, settings=settings) as engine:
        agent = engine.create_agent(gate_graph())
        agent.send_message("hi")
        with structlog.testing.capture_logs() as logs:
            clock.advance(14.9)
            assert not [e for e in logs if e["event"] == "pause.stalled"]
            clock.advance(60)
        stalled = [e for e in logs if e["event"] == "pause.stalled"]
        assert len(stalled) == 1
        assert stalled[0]["agent_id"] == agent.agent_id and stalled[0]["node"] == "gate"
        assert stalled[0]["log_level"] == "warning"


def test_no_stall_warning_when_the_timeout_comes_first(
    clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    settings = tl.EngineSettings(pause_stall_warn_ms=15_000)
    with tl.Engine(mock_model, clock=clock, settings=settings) as engine:
        agent = engine.create_agent(gate_graph(pause_timeout_ms=5000))
        agent.send_message("hi")
        with structlog.testing.capture_logs() as logs:
            clock.advance(30)
        assert not [e for e in logs if e["event"] == "pause.stalled"]


def test_cancel_of_a_paused_turn(engine: tl.Engine, clock: tl.VirtualClock) -> None:
    agent = engine.create_agent(gate_graph(pause_timeout_ms=1000))
    rec = Recorder(agent)
    agent.send_message("hi")
    assert agent.cancel() is True
    clock.advance(2)  # the cancelled pause's timer must not fire
    assert [r.status for r in rec.results] == [tl.TurnStatus.CANCELLED]
    assert rec.finals() == [""]
    assert agent.cancel() is False  # nothing to cancel: not an error
    assert agent.send_message("again").paused  # the agent is usable


def test_paused_turn_holds_no_task() -> None:
    """A parked turn is data and timers only: nothing runs on the loop while it waits."""

    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(gate_graph())
            before = len(asyncio.all_tasks())
            await agent.send_message("hi")
            assert len(asyncio.all_tasks()) == before

    asyncio.run(main())
