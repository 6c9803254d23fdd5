"""Snapshot and restore of one agent, refused snapshots, the dialog read and seeded.

Every test compares a restored agent with the original going on uninterrupted, or checks that
a bad snapshot is refused with its code and creates nothing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import msgpack
import pytest

import turnloom as tl
from tests.durable import scenario
from tests.helpers import graph_of

Code = tl.ErrorCode


@pytest.fixture
def clock() -> tl.VirtualClock:
    return tl.VirtualClock()


@pytest.fixture
def eng(clock: tl.VirtualClock) -> Any:
    """An embedded engine on the virtual clock with the scenario's model."""
    with tl.Engine(scenario.model(), clock=clock) as engine:
        yield engine


def _twins(eng: tl.Engine, kind: str) -> tuple[tl.Agent, tl.Agent, tl.Step]:
    original = eng.create_agent(scenario.graph(kind), enable_diagnostics=True)
    scenario.finish(original, original.send_message("hello"), kind)
    step = original.send_message("again")
    return original, eng.restore(original.snapshot()), step


@pytest.mark.parametrize("kind", ["await", "pause"])
def test_a_restored_paused_agent_finishes_exactly_as_the_original(
    eng: tl.Engine, kind: str
) -> None:
    original, copy, step = _twins(eng, kind)
    assert copy.agent_id != original.agent_id  # the original still holds its id
    assert copy.wait() == step
    a = scenario.finish(original, step, kind)
    b = scenario.finish(copy, copy.wait(), kind)
    assert (b.status, b.text, b.turn_id, b.pause_count) == (a.status, a.text, a.turn_id, 1)
    assert copy.dialog == original.dialog
    assert b.debug_info is not None and a.debug_info is not None
    assert [n["name"] for n in b.debug_info["nodes"]] == [n["name"] for n in a.debug_info["nodes"]]
    # The call counter went on: the next turn's calls get the same fresh ids on both.
    scenario.finish(original, original.send_message("third"), kind)
    scenario.finish(copy, copy.send_message("third"), kind)
    assert copy.dialog == original.dialog


def test_a_deadline_keeps_its_absolute_time(eng: tl.Engine, clock: tl.VirtualClock) -> None:
    original, copy, _ = _twins(eng, "deadline")
    clock.advance(4.9)
    assert copy.wait().paused and original.wait().paused
    clock.advance(0.1)
    a, b = original.wait_complete(), copy.wait_complete()
    assert a is not None and b is not None
    assert (b.text, b.turn_id, b.paused_duration_s) == (a.text, a.turn_id, 5.0)
    assert copy.dialog[-1]["content"] == "Too late."


def test_a_deadline_that_passed_before_the_restore_fires_at_once() -> None:
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        agent = engine.create_agent(scenario.graph("deadline"))
        agent.send_message("hi")
        snapshot = agent.snapshot()
    with tl.Engine(scenario.model(), clock=tl.VirtualClock(start=60)) as later:
        restored = later.restore(snapshot)
        result = restored.wait_complete(timeout=10)  # the clock never advances
    assert result is not None and result.text == "Too late."
    assert result.status is tl.TurnStatus.SUCCESS


def test_pause_timed_out_fires_at_once_too() -> None:
    graph = graph_of(
        ("gate", tl.PauseParams(default_exit="say", pause_timeout_ms=1000)),
        ("say", tl.CannedResponseParams(lines=["after"])),
    )
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        agent = engine.create_agent(graph)
        agent.send_message("hi")
        snapshot = agent.snapshot()
    with tl.Engine(scenario.model(), clock=tl.VirtualClock(start=2)) as later:
        restored = later.restore(snapshot)
        result = restored.wait_complete(timeout=10)
        assert result is not None and result.status is tl.TurnStatus.PAUSE_TIMED_OUT
        assert restored.dialog == [{"role": "user", "content": "hi"}]


def test_params_changed_before_the_snapshot_come_back_and_can_change_again(
    eng: tl.Engine,
) -> None:
    agent = eng.create_agent(scenario.graph("pause"))
    agent.change_params("answer", {"system_prompt": "Mira, before"})
    agent.send_message("hi")
    copy = eng.restore(agent.snapshot())
    assert copy.get_params("answer") == agent.get_params("answer")
    copy.change_params("answer", {"system_prompt": "Mira, after"})
    assert copy.resume().final.text.startswith("[Mira, after]")
    with pytest.raises(tl.ParamNotMutable):
        copy.change_params("answer", {"model_name": "other"})


def test_a_restored_turn_can_be_cancelled_and_refuses_what_the_original_would(
    eng: tl.Engine,
) -> None:
    _, copy, _ = _twins(eng, "await")
    with pytest.raises(tl.AgentBusy):
        copy.send_message("again")
    with pytest.raises(tl.InvalidToolResults):
        copy.resume()
    with pytest.raises(tl.UnknownNode):
        copy.resume("nowhere")
    assert copy.cancel()
    assert copy.wait().final.status is tl.TurnStatus.CANCELLED
    with pytest.raises(tl.AgentNotPaused):
        copy.resume()


@pytest.mark.parametrize("selection", ["random", "cycle"])
def test_canned_lines_go_on_where_they_were(eng: tl.Engine, selection: str) -> None:
    lines = [f"line {i}" for i in range(10)]
    graph = graph_of(
        ("say", tl.CannedResponseParams(lines=lines, selection=tl.Selection(selection)))
    )
    agent = eng.create_agent(graph)
    for _ in range(3):
        agent.send_message("hi")
    copy = eng.restore(agent.snapshot())
    assert [copy.send_message("x").final.text for _ in range(8)] == [
        agent.send_message("x").final.text for _ in range(8)
    ]


def test_an_idle_agent_and_its_last_result_round_trip(eng: tl.Engine) -> None:
    agent = eng.create_agent(scenario.graph("pause"))
    scenario.finish(agent, agent.send_message("hi"), "pause")
    copy = eng.restore(agent.snapshot())
    assert copy.last_result == agent.last_result
    assert copy.wait() == agent.wait()


def test_the_id_is_kept_when_free_and_turn_ids_stay_unique() -> None:
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        for _ in range(3):
            scenario.finish(agent, agent.send_message("hi"), "pause")
        snapshot = agent.snapshot()
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as fresh:
        restored = fresh.restore(snapshot)
        assert restored.agent_id == agent.agent_id
        assert fresh.create_agent(scenario.graph("pause")).agent_id == agent.agent_id + 1
        other = fresh.create_agent(scenario.graph("pause"))
        assert scenario.finish(other, other.send_message("x"), "pause").turn_id == 4


def test_the_dict_form_round_trips(eng: tl.Engine) -> None:
    agent = eng.create_agent(scenario.graph("await"))
    step = agent.send_message("hi")
    doc = agent.snapshot().to_dict()
    assert doc["format"] == "turnloom.agent" and doc["version"] == 1
    assert doc["graph"]["start_node"] == "act" and doc["clock"] == "virtual"
    assert doc["turn"]["pause"]["pending_calls"][0]["call_id"] == "c00000000"
    copy = eng.restore(doc)
    assert copy.wait() == step
    assert tl.AgentSnapshot.from_dict(doc) == agent.snapshot()


def test_a_short_paused_agent_is_small(eng: tl.Engine) -> None:
    agent = eng.create_agent(scenario.graph("await"))
    scenario.finish(agent, agent.send_message("hello there"), "await")
    agent.send_message("and again")
    assert len(agent.snapshot()) <= 4096


def _doc(eng: tl.Engine) -> dict[str, Any]:
    agent = eng.create_agent(scenario.graph("await"))
    agent.send_message("hi")
    return agent.snapshot().to_dict()


def _tamper(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    *parents, last = path.split(".")
    target = doc
    for key in parents:
        target = target[key]
    target[last] = value
    return doc


@pytest.mark.parametrize(
    ("path", "value", "code"),
    [
        ("version", 2, Code.InvalidParamValue),
        ("version", True, Code.InvalidParamValue),  # a bool, though True == 1 in Python
        ("version", 1.0, Code.InvalidParamValue),
        ("format", "langgraph.checkpoint", Code.InvalidParamValue),
        ("call_seq", 0, Code.InvalidParamValue),  # its pending call was never handed out
        ("turn.pause.node_name", "answer", Code.InvalidParamValue),  # Generate does not pause
        ("turn.pause.node_name", "ghost", Code.InvalidParamValue),
        ("turn.pause.timeout_ms", 5, Code.InvalidParamValue),
        ("turn.steps", "many", Code.InvalidParamValue),
        ("dialog", [{"role": "assistant", "content": "first"}], Code.InvalidParamValue),
        # A structural field in a snapshot's params: the snapshot is wrong (3007), where
        # change_params says 3006.
        ("params", {"answer": {"model_name": "other"}}, Code.InvalidParamValue),
        ("params", {"answer": {"sampling": {"temperature": 99}}}, Code.InvalidParamValue),
        ("graph.default_model_name", "gpt-5", Code.GraphCompilationFailed),
        ("graph.start_node", "ghost", Code.GraphCompilationFailed),
        ("graph.nodes", "not a list", Code.GraphCompilationFailed),
    ],
)
def test_a_bad_snapshot_is_refused_and_creates_nothing(
    eng: tl.Engine, path: str, value: Any, code: tl.ErrorCode
) -> None:
    doc = _tamper(_doc(eng), path, value)
    before = eng.agent_ids()
    with pytest.raises(tl.TurnloomError) as refused:
        eng.restore(doc)
    assert refused.value.code == code
    assert eng.agent_ids() == before


def _calls_edited(eng: tl.Engine, edit: Any) -> tuple[dict[str, Any], int]:
    """A paused agent's snapshot with its pending calls edited; the agent is destroyed, so the
    id the snapshot names is free."""
    agent = eng.create_agent(scenario.graph("await"))
    agent.send_message("hi")
    doc = agent.snapshot().to_dict()
    agent.destroy()
    pause = doc["turn"]["pause"]
    pause["pending_calls"] = edit(pause["pending_calls"][0])
    return doc, agent.agent_id


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda call: [call, dict(call)], "is already the id of an earlier pending call"),
        (lambda call: [{**call, "tool_name": "fly"}], "'fly' is not a tool node 'act' declares"),
    ],
    ids=["two calls share one call_id", "a call to a tool the node does not declare"],
)
def test_inconsistent_pending_calls_are_refused_and_use_no_id(
    eng: tl.Engine, edit: Any, named: str
) -> None:
    doc, only = _calls_edited(eng, edit)
    with pytest.raises(tl.InvalidParamValue) as refused:
        eng.restore(doc)
    assert "turn.pause.pending_calls[" in refused.value.message
    assert named in refused.value.message
    assert eng.agent_ids() == []
    assert eng.create_agent(scenario.graph("await")).agent_id == only + 1  # no id used up


@pytest.mark.parametrize(
    "data",
    [b"", b"\x81", b"garbage that is not msgpack", msgpack.packb([1, 2, 3]), msgpack.packb({})],
)
def test_unreadable_bytes_are_refused(eng: tl.Engine, data: bytes) -> None:
    with pytest.raises(tl.InvalidParamValue, match="snapshot"):
        eng.restore(data)
    assert eng.agent_ids() == []


def test_every_cut_of_a_snapshot_is_refused(eng: tl.Engine) -> None:
    agent = eng.create_agent(scenario.graph("await"))
    agent.send_message("hi")
    snapshot = agent.snapshot()
    for end in range(0, len(snapshot), 7):
        with pytest.raises(tl.TurnloomError):
            eng.restore(snapshot[:end])
    assert eng.agent_ids() == [agent.agent_id]


def test_a_running_turn_cannot_be_snapshotted() -> None:
    async def main() -> None:
        async with tl.AsyncEngine(scenario.model(), clock=tl.VirtualClock()) as engine:
            agent = await engine.create_agent(scenario.graph("pause"))
            step = await agent.send_message("hi")
            assert step.paused
            resumed = asyncio.ensure_future(agent.resume())
            await asyncio.sleep(0)  # the resumed walk is generating now
            with pytest.raises(tl.AgentBusy, match="snapshot"):
                await agent.snapshot()
            await resumed
            await agent.destroy()
            with pytest.raises(tl.AgentAlreadyDestroyed):
                await agent.snapshot()

    asyncio.run(main())


def test_the_asyncio_face_restores_too() -> None:
    async def main() -> None:
        async with tl.AsyncEngine(scenario.model(), clock=tl.VirtualClock()) as engine:
            agent = await engine.create_agent(scenario.graph("await"))
            step = await agent.send_message("hi")
            copy = await engine.restore(await agent.snapshot())
            assert await copy.wait() == step
            assert copy.dialog == agent.dialog == await copy.get_dialog()
            assert engine.agent_ids() == [agent.agent_id, copy.agent_id]

    asyncio.run(main())


# --- the dialog ---------------------------------------------------------------------------


def test_a_seeded_dialog_is_what_the_model_sees_first(eng: tl.Engine) -> None:
    seeded = [
        {"role": "user", "content": "I'm back."},
        {"role": "assistant", "content": "Welcome back, traveller."},
    ]
    agent = eng.create_agent(scenario.graph("pause"), dialog=seeded)
    assert agent.dialog == seeded
    result = scenario.finish(agent, agent.send_message("swords?"), "pause")
    assert result.text == "[Mira, trusted] 4 messages, last 'swords?'"
    assert agent.dialog[:2] == seeded and len(agent.dialog) == 4


def test_the_dialog_read_is_a_copy(eng: tl.Engine) -> None:
    agent = eng.create_agent(scenario.graph("pause"), dialog=[{"role": "user", "content": "a"}])
    agent.dialog.append({"role": "user", "content": "b"})
    assert agent.dialog == [{"role": "user", "content": "a"}]


@pytest.mark.parametrize(
    "dialog",
    [
        "not a list",
        [{"role": "assistant", "content": "no user first"}],
        [{"role": "system", "content": "x"}],
        [{"role": "user"}],
        [{"role": "user", "content": 3}],
        [{"role": "user", "content": "x", "extra": 1}],
        [{"role": "user", "content": "x"}, {"role": "assistant", "content": "", "tool_calls": 3}],
    ],
)
def test_a_malformed_dialog_is_3007_and_creates_nothing(eng: tl.Engine, dialog: Any) -> None:
    with pytest.raises(tl.InvalidParamValue, match="dialog"):
        eng.create_agent(scenario.graph("pause"), dialog=dialog)
    assert eng.agent_ids() == []


def test_a_pending_calls_unread_arguments_are_kept_and_checked(eng: tl.Engine) -> None:
    doc, _ = _calls_edited(eng, lambda call: [{**call, "unread_arguments": ["what"]}])
    restored = eng.restore(doc)
    pause = restored.wait().pause
    assert pause is not None and pause.pending_calls[0].unread_arguments == ("what",)
    assert restored.snapshot().to_dict()["turn"]["pause"]["pending_calls"][0][
        "unread_arguments"
    ] == ["what"]
    restored.destroy()
    bad, _ = _calls_edited(eng, lambda call: [{**call, "unread_arguments": [7]}])
    with pytest.raises(tl.InvalidParamValue, match="unread_arguments must be argument names"):
        eng.restore(bad)
