"""Engine observers: each is called only at the hooks it implements (resolved when the list of
observers changes, not at every call), a partial observer works as a whole one does, a failing
one is left out of that call only, and observers hear of agents made, restored and gone (and,
when added, of the agents already there)."""

from __future__ import annotations

from typing import Any

import pytest

import turnloom as tl
from tests.telemetry.conftest import story_graph
from turnloom.engine.turns import node_run
from turnloom.engine.turns.observers import HOOKS, ObserverList, TurnObserver, tell


class Ends(TurnObserver):
    """Implements two hooks only: pauses and ends of turns."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def paused(self, agent: Any, turn: Any, info: Any) -> None:
        self.seen.append(("paused", info.node_name))

    def turn_ended(self, agent: Any, turn: Any, result: Any) -> None:
        self.seen.append(("turn_ended", result.text))


def test_an_observer_is_called_only_at_the_hooks_it_implements(
    clock: tl.VirtualClock, scripted: tl.MockModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    ends = Ends()
    base_calls: list[str] = []
    with tl.Engine(scripted, clock=clock) as engine:
        engine.add_observer(ends)
        observers = engine._engine.core.observers
        assert isinstance(observers, ObserverList)
        assert {hook for hook in HOOKS if observers.by_hook[hook]} == {"paused", "turn_ended"}
        # TurnObserver's own no-op hooks, spied on: a call of one would be a call of a hook
        # `Ends` does not implement.
        for hook in HOOKS:
            if hook not in ("paused", "turn_ended"):
                monkeypatch.setattr(
                    TurnObserver, hook, lambda self, *args, _h=hook: base_calls.append(_h)
                )
        agent = engine.create_agent(story_graph())
        assert agent.send_message("x").paused
        agent.resume("", [{"call_id": "c00000000", "result": "ok"}])
        result = agent.resume().final
        assert result.status is tl.TurnStatus.SUCCESS
        agent.destroy()
    assert ends.seen == [("paused", "detect"), ("paused", "wait"), ("turn_ended", result.text)]
    assert base_calls == []


def test_a_partial_observer_does_not_time_generations_nobody_reads(
    clock: tl.VirtualClock, scripted: tl.MockModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[object] = []

    class Counted(node_run.GenerationWatch):
        def __init__(self, *args: Any) -> None:
            made.append(self)
            super().__init__(*args)

    class Generations(TurnObserver):
        def __init__(self) -> None:
            self.tokens: list[int] = []

        def generation_ended(self, agent: Any, turn: Any, node: str, record: Any) -> None:
            self.tokens.append(record.tokens)

    monkeypatch.setattr(node_run, "GenerationWatch", Counted)
    with tl.Engine(scripted, clock=clock) as engine:
        engine.add_observer(Ends())
        agent = engine.create_agent(story_graph())
        assert agent.send_message("x").paused  # the ToolCall node generated
        assert made == []  # nobody implements generation_ended: no watch was made
        generations = Generations()
        engine.add_observer(generations)
        agent.resume("", [{"call_id": "c00000000", "result": "ok"}])
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS  # "answer" generated
    assert len(made) == 1 and len(generations.tokens) == 1 and generations.tokens[0] > 0


def test_the_list_resolves_again_whenever_it_changes() -> None:
    class Started(TurnObserver):
        def turn_started(self, agent: Any, turn: Any) -> None:
            pass

    ends, started, own = Ends(), Started(), TurnObserver()
    own.turn_ended = lambda agent, turn, result: None  # type: ignore[method-assign]
    observers = ObserverList([ends])
    assert observers.by_hook["turn_ended"] == (ends.turn_ended,)
    observers.append(started)
    observers.insert(0, own)  # an instance's own attribute counts as implementing
    assert [h.__self__ for h in observers.by_hook["turn_ended"][1:]] == [ends]  # type: ignore[attr-defined]
    assert observers.by_hook["turn_ended"][0] is own.turn_ended
    assert observers.by_hook["turn_started"] == (started.turn_started,)
    observers.remove(started)
    assert observers.by_hook["turn_started"] == ()
    del observers[0]
    assert observers.by_hook["turn_ended"] == (ends.turn_ended,)
    observers += [started]
    assert observers.by_hook["turn_started"] == (started.turn_started,)
    observers.pop()
    observers.clear()
    assert not observers and all(observers.by_hook[hook] == () for hook in HOOKS)


def test_a_failing_observer_is_left_out_of_that_call_only() -> None:
    class Failing(TurnObserver):
        def turn_ended(self, agent: Any, turn: Any, result: Any) -> None:
            raise RuntimeError("boom")

    ends = Ends()
    observers = ObserverList([Failing(), ends])

    class Result:
        text = "done"

    tell(observers, "turn_ended", None, None, Result())
    tell(observers, "node_started", None, None, "n")  # nobody implements it: nothing happens
    assert ends.seen == [("turn_ended", "done")]


class Roster(TurnObserver):
    """Agents as they come and go, with the pause each brings."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, int, float | None]] = []

    def agent_added(self, agent: Any) -> None:
        pause = agent.turn.pause
        self.seen.append(("added", agent.agent_id, None if pause is None else pause.started_at))

    def agent_removed(self, agent_id: int) -> None:
        self.seen.append(("removed", agent_id, None))


def test_observers_hear_of_agents_made_restored_and_gone() -> None:
    clock = tl.VirtualClock()
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        before = engine.create_agent(story_graph())
        roster = Roster()
        engine.add_observer(roster)  # told of the agent already there
        made = engine.create_agent(story_graph())
        clock.advance(5)
        assert made.send_message("x").pause.node_name == "wait"  # type: ignore[union-attr]
        snapshot = made.snapshot()
        copy = engine.restore(snapshot)  # its id is taken: it gets a new one
        made.destroy()
        assert roster.seen == [
            ("added", before.agent_id, None),
            ("added", made.agent_id, None),
            ("added", copy.agent_id, 5.0),  # paused, since when its snapshot says
            ("removed", made.agent_id, None),
        ]


class Logs(TurnObserver):
    """Reads each turn's log when the turn ends (and is called at no other event)."""

    reads_turn_logs = True

    def __init__(self) -> None:
        self.logs: list[list[Any]] = []

    def turn_ended(self, agent: Any, turn: Any, result: Any) -> None:
        self.logs.append(list(turn.log))


def test_a_turn_logs_every_event_while_an_observer_reads_logs(
    clock: tl.VirtualClock, scripted: tl.MockModel
) -> None:
    logs = Logs()
    with tl.Engine(scripted, clock=clock) as engine:
        engine.add_observer(logs)
        agent = engine.create_agent(story_graph())
        assert agent.send_message("lights?").paused
        clock.advance(2)
        agent.resume("", [{"call_id": "c00000000", "result": "ok"}])
        clock.advance(3)
        final = agent.resume("answer").final
        engine.remove_observer(logs)
        assert agent.send_message("again").paused
        core = engine._engine.core.agents[agent.agent_id]
        assert core.turn.log is None  # nobody reads logs now: the next turn keeps none
    (log,) = logs.logs
    kinds, times, values = log[0::3], log[1::3], log[2::3]
    assert " ".join(kinds) == (
        "turn_started node_started generation tool_call paused resumed"
        " node_started paused resumed node_started generation node_ended turn_ended"
    )
    assert times == sorted(times) and times[-1] - times[0] == 5.0  # the engine's clock
    assert values[0] == "lights?" and values[1] == "detect"
    node, model, _prompt, tokens, _first, _seconds, error = values[2]
    assert (node, model, error) == ("detect", "mock", "") and tokens > 0
    assert values[3][:3] == ("detect", "c00000000", "set_light")
    # A node that pauses logs no node_ended: its pause ends it, with the exit it took.
    assert values[4] == ("detect", "tool_called", "wait", 0, ("c00000000",), True)
    assert values[5] == ("detect", "", {"c00000000": "ok"})
    assert values[7][:3] == ("wait", "default", "answer") and values[8] == ("wait", "answer", None)
    status, text, *_ = values[-1]
    assert status == "success" and text == final.text
