"""The stall warning's single timer (engine/stall_watch.py): each open pause warned once, on
time; ended pauses never; the timer outlives the last watched pause only until its moment, and
is armed once per stall period, not once per pause (docs/reference/pauses.md#stall-warning)."""

from __future__ import annotations

from types import SimpleNamespace

import structlog

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.turns.stall_watch import StallWatch
from turnloom.engine.turns.turn import OpenPause, Turn
from turnloom.states import TurnState

STALL_MS = 15_000


def gate() -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="reply")),
        ("reply", tl.CannedResponseParams(lines=["done"])),
    )


def stalled(logs: list[dict[str, object]]) -> list[object]:
    return [e["agent_id"] for e in logs if e["event"] == "pause.stalled"]


def test_each_open_pause_is_warned_once_at_its_own_deadline(clock: tl.VirtualClock) -> None:
    settings = tl.EngineSettings(pause_stall_warn_ms=STALL_MS)
    with tl.Engine(tl.MockModel("mock"), clock=clock, settings=settings) as engine:
        agents = [engine.create_agent(gate()) for _ in range(6)]
        for agent in agents:  # paused one second apart
            assert agent.send_message("hi").paused
            clock.advance(1)
        agents[1].resume()
        agents[4].cancel()
        with structlog.testing.capture_logs() as logs:
            clock.advance(STALL_MS / 1000 - 6 + 0.5)  # past the first two deadlines only
            assert stalled(logs) == [agents[0].agent_id]  # agent 1 was resumed
            clock.advance(10)
        assert stalled(logs) == [agents[i].agent_id for i in (0, 2, 3, 5)]
        assert clock.pending() == 0  # every deadline has passed: nothing is left to arm
        with structlog.testing.capture_logs() as logs:
            clock.advance(3600)
        assert stalled(logs) == []  # once per pause
        assert agents[0].resume().result is not None
        assert agents[0].send_message("again").paused  # a new pause is watched anew
        assert clock.pending() == 1
        for i in (0, 2, 3, 5):
            agents[i].resume()
        assert clock.pending() == 1  # no watched pause left: the timer waits for its moment
        with structlog.testing.capture_logs() as logs:
            clock.advance(STALL_MS / 1000)
        assert stalled(logs) == [] and clock.pending() == 0  # ... finds nothing, is not re-armed


def test_turns_one_after_another_arm_the_timer_once(clock: tl.VirtualClock) -> None:
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        agents = [engine.create_agent(gate()) for _ in range(3)]
        watch = engine._engine.core.stall_watch
        assert agents[0].send_message("hi").paused
        timer = watch._timer
        assert timer is not None
        agents[0].resume()
        for _ in range(100):
            for agent in agents:
                agent.send_message("hi")
                agent.resume()
                clock.advance(0.01)
        assert watch._timer is timer and clock.pending() == 1
        with structlog.testing.capture_logs() as logs:
            clock.advance(STALL_MS / 1000 - 3 + 0.001)  # the first pause's moment
        assert stalled(logs) == [] and clock.pending() == 0
        assert agents[1].send_message("late").paused  # armed again, for this pause
        assert watch._timer is not None and watch._timer is not timer
        with structlog.testing.capture_logs() as logs:
            clock.advance(STALL_MS / 1000)
        assert stalled(logs) == [agents[1].agent_id]


def test_closing_the_engine_drops_the_timer(clock: tl.VirtualClock) -> None:
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        agent = engine.create_agent(gate())
        agent.send_message("hi")
        agent.resume()
        assert clock.pending() == 1
    assert clock.pending() == 0


def test_paused_and_resumed_turns_leave_a_bounded_queue(clock: tl.VirtualClock) -> None:
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        parked, busy = engine.create_agent(gate()), engine.create_agent(gate())
        assert parked.send_message("hi").paused
        for _ in range(3000):
            busy.send_message("hi")
            busy.resume()
        watch = engine._engine.core.stall_watch
        assert len(watch._entries) <= 2 * 1 + 1024 + 1
        with structlog.testing.capture_logs() as logs:
            clock.advance(STALL_MS / 1000)
        assert stalled(logs) == [parked.agent_id]


def _paused_turn(started_at: float, seq: int = 1) -> Turn:
    turn = Turn()
    turn.state = TurnState.PAUSED
    info = SimpleNamespace(node_name="gate", timeout_ms=0)
    turn.pause = OpenPause(info, "", started_at, seq, None)  # type: ignore[arg-type]
    turn.pause_seq = seq
    return turn


def test_a_pause_that_began_earlier_is_warned_first(clock: tl.VirtualClock) -> None:
    # As a pause restored from a snapshot is: watched after newer ones, due before them.
    watch = StallWatch(clock, 10_000)
    with structlog.testing.capture_logs() as logs:
        watch.watch(SimpleNamespace(agent_id=2), _paused_turn(started_at=5.0))
        watch.watch(SimpleNamespace(agent_id=1), _paused_turn(started_at=1.0))
        clock.advance(11.5)
        assert stalled(logs) == [1]
        clock.advance(5)
    assert stalled(logs) == [1, 2]


def test_a_restored_pause_past_its_moment_is_not_warned_again(clock: tl.VirtualClock) -> None:
    # A restart after a long stop must not warn for every paused agent at once.
    clock.advance(100)
    watch = StallWatch(clock, 10_000)
    old = _paused_turn(started_at=1.0)
    with structlog.testing.capture_logs() as logs:
        watch.watch(SimpleNamespace(agent_id=1), old)
        clock.advance(3600)
    assert stalled(logs) == [] and clock.pending() == 0
    assert old.pause is not None
    watch.ended(old.pause)  # still counted: its end balances its watch
    assert watch._open == 0
