"""Snapshots that contradict themselves or their graph are refused
(docs/reference/durability.md#refused-snapshots): 3007, the message starts "snapshot:" and names
the field, nothing is created and no agent id is used up.

Each case is a snapshot the engine wrote, then edited as a player editing a save file would (or
a game's migration with a bug): the agent it would make either breaks later and far from the
cause (a turn failing 4001, a timer that never fires, another agent's snapshot overflowing) or
behaves as no agent of the engine could.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from types import MappingProxyType
from typing import Any

import pytest

import turnloom as tl
from tests.durable import scenario
from tests.helpers import graph_of
from turnloom.engine.durable import restore_checks
from turnloom.engine.durable.restore_checks import MAX_STEPS_PER_TURN
from turnloom.engine.durable.store.base import LARGEST_AGENT_ID

NAN, INF = float("nan"), float("inf")

LIGHT = tl.ToolDefinition(
    name="set_light",
    description="Turn a light on or off.",
    parameters=[
        tl.ToolParamDefinition("name", "string", "Which light."),
        tl.ToolParamDefinition("on", "boolean", "true = on."),
    ],
)
TWO_CALLS = (
    '<tool_call>{"name": "set_light", "arguments": {"name": "porch", "on": true}}</tool_call>'
    '<tool_call>{"name": "set_light", "arguments": {"name": "hall", "on": "0"}}</tool_call>'
)
LIGHTS = graph_of(
    (
        "act",
        tl.ToolCallParams(
            tools=[LIGHT], disposition=tl.ToolCallDisposition.AwaitResult, tool_called_exit="reply"
        ),
    ),
    ("reply", tl.CannedResponseParams(lines=["Done."])),
)
CYCLE = graph_of(
    ("greet", tl.CannedResponseParams(lines=["Hi", "Hello"], selection=tl.Selection.Cycle))
)


@pytest.fixture
def source() -> Iterator[tl.Engine]:
    """The engine whose agents' snapshots are edited (restores go to a fresh one)."""
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        yield engine


def _paused(source: tl.Engine, kind: str) -> dict[str, Any]:
    """A snapshot of an agent of `scenario`'s `kind` paused in its second turn."""
    agent = source.create_agent(scenario.graph(kind))
    scenario.finish(agent, agent.send_message("hello"), kind)
    assert agent.send_message("again").paused
    return agent.snapshot().to_dict()


def _lights() -> dict[str, Any]:
    """An agent paused with two calls awaiting their results (booleans coerced from JSON)."""
    with tl.Engine(tl.MockModel("mock", script=[TWO_CALLS])) as engine:
        agent = engine.create_agent(LIGHTS)
        step = agent.send_message("lights")
        assert step.pause is not None and len(step.pause.pending_calls) == 2
        return agent.snapshot().to_dict()


def _edit(doc: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`doc` with the field at `path` (dots; digits index lists) set to `value`."""
    doc = copy.deepcopy(doc)
    *parents, last = path.split(".")
    target: Any = doc
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    target[int(last) if last.isdigit() else last] = value
    return doc


def _refused(doc: Any, *named: str, **options: Any) -> str:
    """Restore `doc` into a fresh engine: refused with 3007, the message starting "snapshot:"
    and holding each of `named`; nothing created, no id used up. The message."""
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        with pytest.raises(tl.InvalidParamValue) as refused:
            engine.restore(doc, **options)
        message = refused.value.message
        assert refused.value.code == tl.ErrorCode.InvalidParamValue
        assert message.startswith("snapshot:"), message
        for name in named:
            assert name in message, message
        assert engine.agent_ids() == []
        assert engine.create_agent(scenario.graph("pause")).agent_id == 1  # no id used up
    return message


# -- 1. the paused turn's messages -----------------------------------------------------------


def test_a_user_message_among_the_paused_turns_messages_is_refused(source: tl.Engine) -> None:
    doc = _paused(source, "pause")
    doc["turn"]["messages"] = [{"role": "user", "content": "a second user message"}]
    _refused(doc, "turn.messages[0]", "user message")


# -- 2. node state ---------------------------------------------------------------------------


@pytest.fixture
def cycling(source: tl.Engine) -> dict[str, Any]:
    agent = source.create_agent(CYCLE)
    assert agent.send_message("x").final.text == "Hi"
    doc = agent.snapshot().to_dict()
    assert doc["node_state"] == {"greet": {"next": 1}}
    return doc


@pytest.mark.parametrize("value", ["x", 1.5, None, [1], -1, True, 2**40])
def test_a_cycle_position_the_node_cannot_read_is_refused(
    cycling: dict[str, Any], value: Any
) -> None:
    _refused(_edit(cycling, "node_state.greet.next", value), "node_state.greet.next")


@pytest.mark.parametrize(
    ("state", "named"),
    [
        ({"greet": {"cursor": 1}}, "node_state.greet holds 'cursor'"),
        ({"greet": 7}, "node_state.greet must be a map"),
        ({"ghost": {}}, "node_state names node 'ghost'"),
    ],
)
def test_node_state_a_node_does_not_keep_is_refused(
    cycling: dict[str, Any], state: Any, named: str
) -> None:
    _refused(_edit(cycling, "node_state", state), named)


def test_a_history_start_that_is_not_a_count_is_refused(source: tl.Engine) -> None:
    doc = _paused(source, "pause")
    assert doc["node_state"]["answer"] == {}  # the Generate node's (no budget in use)
    _refused(_edit(doc, "node_state.answer", {"history_start": "x"}), "node_state.answer")
    _refused(_edit(doc, "node_state.act", {"next": 0}), "node_state.act holds 'next'")
    accepted = _edit(doc, "node_state.answer", {"history_start": 3})
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        assert engine.restore(accepted).wait().paused


def test_a_cycle_position_goes_on_after_a_restore(cycling: dict[str, Any]) -> None:
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        assert engine.restore(cycling).send_message("y").final.text == "Hello"


# -- 3./4. ids and counters ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("agent_id", 2**64 - 1),
        ("agent_id", LARGEST_AGENT_ID + 1),
        ("agent_id", 0),
        ("rng_seed", 2**64 - 1),
        ("options.max_steps_per_turn", 2**63),
        ("options.max_steps_per_turn", MAX_STEPS_PER_TURN + 1),
        ("turn.turn_id", 2**64 - 1),
        ("turn.turn_id", 2**62 + 1),
        ("turn.tokens", 2**63),
        ("turn.pause_seq", 2**64 - 1),
        ("turn.steps", 65),  # past the agent's max_steps_per_turn, 64
        ("last_result.turn_id", 2**64 - 1),
        ("call_seq", 2**32),  # its next id, c100000000, is no id of 8 hex digits
    ],
)
def test_ids_and_counters_past_what_the_engine_reaches_are_refused(
    source: tl.Engine, path: str, value: int
) -> None:
    doc = _edit(_paused(source, "pause"), path, value)
    _refused(doc, path.rsplit(".", 1)[-1], str(value))
    # The bytes form too: every one of these fits msgpack, so a saved file can hold it.
    _refused(bytes(tl.AgentSnapshot.from_dict(doc)), path.rsplit(".", 1)[-1])


def test_a_restored_turn_id_leaves_other_agents_storable(source: tl.Engine) -> None:
    doc = _edit(_paused(source, "pause"), "turn.turn_id", 2**64 - 1)
    _refused(bytes(tl.AgentSnapshot.from_dict(doc)), "turn.turn_id")
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        last = _edit(doc, "turn.turn_id", LARGEST_AGENT_ID)  # the largest refused not
        engine.restore(last)
        other = engine.create_agent(scenario.graph("pause"))
        assert other.send_message("hi").paused
        assert other.snapshot().to_dict()["turn"]["turn_id"] == LARGEST_AGENT_ID + 1


def test_the_largest_call_counter_restores_and_hands_out_the_last_id() -> None:
    with tl.Engine(tl.MockModel("mock", script=[TWO_CALLS])) as engine:
        doc = engine.create_agent(LIGHTS).snapshot().to_dict()
    _refused(_edit(doc, "call_seq", restore_checks.CALL_IDS), "call_seq")
    doc["call_seq"] = restore_checks.CALL_IDS - 2
    with tl.Engine(tl.MockModel("mock", script=[TWO_CALLS])) as engine:
        step = engine.restore(doc).send_message("lights")
        assert step.pause is not None
        assert [c.call_id for c in step.pause.pending_calls] == ["cfffffffe", "cffffffff"]


# -- 5. times --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("turn.pause.deadline", NAN),
        ("turn.pause.deadline", INF),
        ("turn.pause.deadline", -INF),
        ("turn.pause.paused_at", NAN),
        ("turn.pause.paused_at", INF),
        ("turn.paused_duration_s", NAN),
        ("turn.paused_duration_s", INF),
        ("turn.paused_duration_s", -1.0),
        ("saved_at", NAN),
        ("saved_at", "yesterday"),
        ("last_result.paused_duration_s", NAN),
        ("last_result.paused_duration_s", -0.5),
    ],
)
def test_times_that_are_not_finite_or_durations_below_zero_are_refused(
    source: tl.Engine, path: str, value: Any
) -> None:
    _refused(_edit(_paused(source, "deadline"), path, value), path.rsplit(".", 1)[-1])


def test_a_lineage_time_that_is_not_finite_is_refused(source: tl.Engine) -> None:
    agent = source.create_agent(scenario.graph("pause"))
    doc = source.fork(agent).snapshot().to_dict()
    assert len(doc["lineage"]) == 1
    _refused(_edit(doc, "lineage.0.time", NAN), "lineage[0].time")
    _refused(_edit(doc, "lineage.0.agent_id", 2**64 - 1), "lineage[0].agent_id")


def test_a_deadline_past_the_pauses_timeout_is_refused(source: tl.Engine) -> None:
    doc = _paused(source, "deadline")
    pause = doc["turn"]["pause"]
    assert pause["deadline"] == pause["paused_at"] + scenario.TIMEOUT_MS / 1000
    message = _refused(_edit(doc, "turn.pause.deadline", pause["deadline"] + 1), "deadline")
    assert "paused_at + timeout_ms" in message


def test_an_earlier_deadline_is_one_that_passed_and_fires_at_once(source: tl.Engine) -> None:
    doc = _paused(source, "deadline")
    doc["turn"]["pause"]["deadline"] = doc["turn"]["pause"]["paused_at"] - 100
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        result = engine.restore(doc).wait_complete(timeout=10)  # the clock never advances
    assert result is not None and result.text == "Too late."


def test_a_refused_nan_deadline_leaves_other_timeouts_firing(source: tl.Engine) -> None:
    doc = _edit(_paused(source, "deadline"), "turn.pause.deadline", NAN)
    clock = tl.VirtualClock()
    with tl.Engine(scenario.model(), clock=clock) as engine:
        with pytest.raises(tl.InvalidParamValue, match="deadline"):
            engine.restore(doc)
        assert engine.agent_ids() == []
        other = engine.create_agent(scenario.graph("deadline"))
        assert other.agent_id == 1  # no id used up
        assert other.send_message("hi").paused
        clock.advance(60)
        result = other.wait_complete(timeout=10)
        assert result is not None and result.text == "Too late."


# -- 6. pending calls against the turn -------------------------------------------------------


def test_the_engines_own_calls_restore_and_resume() -> None:
    doc = _lights()
    calls = doc["turn"]["pause"]["pending_calls"]
    assert [c["arguments"]["on"] for c in calls] == [True, False]  # "0" coerced
    with tl.Engine(tl.MockModel("mock")) as engine:
        agent = engine.restore(doc)
        result = agent.resume(tool_results=[(c["call_id"], "ok") for c in calls]).final
        assert result.text == "Done."


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("turn.messages", [], "turn.messages must end with the call of c00000000"),
        ("turn.messages.0.tool_calls.0.id", "c00000005", "turn.messages[0]"),
        ("turn.messages.0.tool_calls.1.function.name", "open_door", "turn.messages"),
        ("turn.pause.pending_calls.0.disposition", "explode", "pending_calls[0].disposition"),
        ("turn.pause.pending_calls.0.disposition", "notify", "pending_calls[0].disposition"),
        ("turn.pause.pending_calls.0.arguments_json", "not json", "arguments_json"),
        ("turn.pause.pending_calls.0.arguments", {"colour": [1, 2]}, "pending_calls[0].arguments"),
        ("turn.pause.pending_calls.1.arguments.on", True, "arguments['on']"),
        ("turn.pause.pending_calls.0.arguments.name", "hall", "arguments['name']"),
    ],
)
def test_pending_calls_that_contradict_the_turn_are_refused(
    path: str, value: Any, named: str
) -> None:
    _refused(_edit(_lights(), path, value), named)


def test_a_call_left_unanswered_or_an_answer_to_no_call_is_refused(source: tl.Engine) -> None:
    doc = _paused(source, "await")
    assert doc["call_seq"] == 2
    made = doc["turn"]["messages"][-1]
    # The pending call answered already: its result would come twice.
    answered = {"role": "tool", "content": "ok", "tool_call_id": "c00000001", "name": "look"}
    _refused(_edit(doc, "turn.messages", [made, answered]), "turn.messages must end with")
    orphan = {**answered, "tool_call_id": "c00000000"}
    _refused(_edit(doc, "turn.messages", [orphan, made]), "turn.messages[0] answers call")
    twice = _edit(doc, "turn.messages", [made, made])
    _refused(twice, "turn.messages[1] makes call c00000001 a second time")
    again = _edit(doc, "turn.messages", [made, answered, made])  # answered, then made anew
    _refused(again, "turn.messages[2] makes call c00000001 a second time")
    pause = _paused(source, "pause")  # call_seq 0: no call was ever made
    _refused(_edit(pause, "turn.messages", [made]), "turn.messages[0] makes call 'c00000001'")
    # A plain pause awaits nothing: a call the model was shown must have its result.
    pause["call_seq"] = 5
    _refused(_edit(pause, "turn.messages", [made]), "call(s) c00000001 unanswered")


# -- 7. call ids in the dialog ---------------------------------------------------------------


def _exchange(call_id: str) -> list[dict[str, Any]]:
    call = {"id": call_id, "type": "function", "function": {"name": "look", "arguments": {}}}
    return [
        {"role": "user", "content": "porch"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "done", "tool_call_id": call_id, "name": "look"},
        {"role": "assistant", "content": "Porch on."},
    ]


def test_a_call_id_in_the_dialog_at_or_past_the_counter_is_refused(source: tl.Engine) -> None:
    doc = source.create_agent(scenario.graph("await")).snapshot().to_dict()
    assert doc["call_seq"] == 0
    _refused(_edit(doc, "dialog", _exchange("c00000000")), "dialog[1]", "c00000000", "call_seq 0")
    only_result = _exchange("c00000000")
    del only_result[1]["tool_calls"]
    _refused(_edit(doc, "dialog", only_result), "dialog[2]", "c00000000")
    # Ids of another form are a seeded dialog's, never the engine's: the next call is c00000000.
    seeded = _edit(doc, "dialog", _exchange("call_1"))
    with tl.Engine(scenario.model(), clock=tl.VirtualClock()) as engine:
        step = engine.restore(seeded).send_message("look")
        assert step.pause is not None and step.pause.pending_calls[0].call_id == "c00000000"


# -- 8. the graph's fingerprint and version --------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("graph_fingerprint", "deadbeefdeadbeef"),
        ("graph_fingerprint", 42),
        ("graph_version", "7.0"),
        ("graph_version", 99),
    ],
)
def test_a_record_of_another_graph_is_refused(source: tl.Engine, field: str, value: Any) -> None:
    doc = _paused(source, "pause")
    own = doc[field]
    named = (field, repr(value), str(own))
    _refused(_edit(doc, field, value), *named)
    # Into a patched graph of the same structure: the record is checked there too.
    patched = scenario.graph("pause").set_version("2")
    _refused(_edit(doc, field, value), *named, graph=patched)


# -- 9./10. params and the pause against them ------------------------------------------------


@pytest.mark.parametrize(
    ("params", "named"),
    [
        (
            {"answer": {"model_name": "other"}},
            "params['answer']: node 'answer': field 'model_name'",
        ),
        ({"act": {"default_exit": ""}}, "params['act']: node 'act': field 'default_exit'"),
        ({"answer": {"bogus": 5}}, "params['answer']: GenerateParams has no field(s) ['bogus']"),
        ({"answer": {"system_prompt": 5}}, "params['answer']: node 'answer': field 'system_pr"),
        ({"ghost": {}}, "params names node 'ghost'"),
    ],
)
def test_params_a_snapshot_cannot_have_are_its_3007(
    source: tl.Engine, params: dict[str, Any], named: str
) -> None:
    _refused(_edit(_paused(source, "pause"), "params", params), named)


@pytest.mark.parametrize(
    ("kind", "field", "value", "named"),
    [
        ("pause", "pending_target", "late", "turn.pause.pending_target is 'late'"),
        ("pause", "timeout_ms", 5, "turn.pause.timeout_ms is 5, and node 'act' says 0"),
        ("pause", "awaits_results", True, "turn.pause.awaits_results is True"),
        ("pause", "pending_exit", "timeout", "turn.pause.pending_exit 'timeout'"),
        ("await", "pending_calls", [], "turn.pause.pending_calls holds none"),
        ("await", "awaits_results", False, "and node 'act' says True"),
    ],
)
def test_a_pause_that_does_not_fit_its_node_names_the_field_and_both_values(
    source: tl.Engine, kind: str, field: str, value: Any, named: str
) -> None:
    _refused(_edit(_paused(source, kind), f"turn.pause.{field}", value), named)


def test_a_node_type_changed_by_a_migration_is_named(source: tl.Engine) -> None:
    agent = source.create_agent(scenario.graph("pause"))
    agent.change_params("answer", {"system_prompt": "changed"})
    assert agent.send_message("hi").paused
    saved = agent.snapshot()
    canned = graph_of(
        ("act", tl.PauseParams(default_exit="answer")),
        ("late", tl.CannedResponseParams(lines=["x"])),
        ("answer", tl.CannedResponseParams(lines=["Canned."])),
    )
    _refused(saved, "params['answer']: CannedResponseParams has no field", graph=canned,
             migrate=lambda document: document)  # fmt: skip


# -- 11. the to_dict form holds what msgpack cannot ------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("graph.nodes.0.params.pause_timeout_ms", 2**70, "graph.nodes[0].params.pause_timeout_ms"),
        ("agent_id", 2**70, "snapshot.agent_id is 1180591620717411303424"),
        ("rng_seed", 2**200, "snapshot.rng_seed"),
        ("options.max_steps_per_turn", 2**70, "options.max_steps_per_turn"),
        ("turn.tokens", 2**64, "turn.tokens"),
        ("tags", {"npc": object()}, "snapshot.tags.npc is a object"),
        ("node_state", MappingProxyType({}), "snapshot.node_state is a mappingproxy"),
    ],
)
def test_values_msgpack_cannot_hold_are_named(
    source: tl.Engine, path: str, value: Any, named: str
) -> None:
    doc = _edit(_paused(source, "pause"), path, value)
    _refused(doc, named)
    _refused(doc, named, graph=scenario.graph("pause"))  # the migration's path reads it too


# -- the clock, the last result --------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("clock", "lunar", "clock must be one of virtual, wall, got 'lunar'"),
        ("clock", 3, "clock"),
        ("last_result", 0, "last_result must be a map"),
        ("last_result", {}, "last_result.status"),
        ("last_result", [], "last_result must be a map"),
    ],
)
def test_a_clock_or_last_result_that_is_none_of_its_kinds_is_refused(
    source: tl.Engine, path: str, value: Any, named: str
) -> None:
    _refused(_edit(_paused(source, "pause"), path, value), named)


def test_an_agent_seeded_with_an_earlier_agents_dialog_never_repeats_its_call_ids() -> None:
    # The seeded dialog holds the engine's own ids (c00000000, c00000001): the new agent's
    # counter starts past them, and its snapshot restores.
    with tl.Engine(tl.MockModel("mock", script=[TWO_CALLS])) as engine:
        first = engine.create_agent(LIGHTS)
        step = first.send_message("lights")
        assert step.pause is not None
        first.resume(tool_results=[(call.call_id, "on") for call in step.pause.pending_calls])
        seeded = engine.create_agent(LIGHTS, dialog=first.dialog)
        assert seeded.snapshot().to_dict()["call_seq"] == 2
        engine.restore(seeded.snapshot().to_dict() | {"agent_id": 99})
