"""The ToolCall node: detection, dispositions, events, results batches, register_tool
(docs/reference/tools.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import structlog

import turnloom as tl
from tests.helpers import GET_TIME, SET_LIGHT, Recorder, graph_of

Code = tl.ErrorCode
D = tl.ToolCallDisposition


def hermes(tool: str, **arguments: Any) -> str:
    """A call in the Hermes / Qwen markup."""
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


def tool_graph(disposition: D, **detect: Any) -> tl.GraphDescription:
    """detect (ToolCall, detect_only) → answer (Generate) on both exits."""
    detect.setdefault("mode", tl.ToolCallMode.DetectOnly)  # answer replies, not detect
    return graph_of(
        (
            "detect",
            tl.ToolCallParams(
                tools=[SET_LIGHT, GET_TIME],
                disposition=disposition,
                system_prompt="You control the lights.",
                tool_called_exit="answer",
                no_tool_called_exit="answer",
                **detect,
            ),
        ),
        ("answer", tl.GenerateParams()),
    )


def answer_chat(mock: tl.MockModel) -> list[dict[str, Any]]:
    """The chat the final Generate saw."""
    return mock.requests[-1].messages


# --- every disposition ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "disposition, notified, pauses, closed_with",
    [
        (D.RouteOnly, False, False, None),
        (D.Acknowledge, False, False, "ok"),
        (D.Notify, True, False, None),
        (D.NotifyAndAcknowledge, True, False, "ok"),
        (D.Pause, True, True, None),
        (D.PauseAndAcknowledge, True, True, "ok"),
        (D.AwaitResult, True, True, '{"lit": true}'),
    ],
)
def test_each_disposition_notifies_pauses_and_closes_as_specified(
    engine: tl.Engine,
    mock_model: tl.MockModel,
    disposition: D,
    notified: bool,
    pauses: bool,
    closed_with: str | None,
) -> None:
    mock_model.push(hermes("set_light", name="porch", on=True), "Done.")
    agent = engine.create_agent(tool_graph(disposition))
    events: list[tl.ToolCallEvent] = []
    agent.set_on_tool_call_event(events.append)
    step = agent.send_message("Porch light on, please.")
    assert [e.tool_name for e in events] == (["set_light"] if notified else [])
    assert step.paused is pauses
    if pauses:
        assert step.pause is not None and step.pause.pending_exit == "tool_called"
        assert [c.call_id for c in step.pause.pending_calls] == ["c00000000"]
        results = [("c00000000", '{"lit": true}')] if disposition is D.AwaitResult else []
        step = agent.resume(tool_results=results)
    assert step.result is not None and step.result.text == "Done."
    chat = answer_chat(mock_model)
    calls = [m for m in chat if m.get("tool_calls")]
    results_seen = [m for m in chat if m["role"] == "tool"]
    if closed_with is None:  # closed by the engine, nothing for the model to see
        assert calls == [] and results_seen == []
    else:
        assert calls[0]["tool_calls"][0]["function"] == {
            "name": "set_light",
            "arguments": {"name": "porch", "on": True},
        }
        assert [(m["tool_call_id"], m["content"]) for m in results_seen] == [
            ("c00000000", closed_with)
        ]


def test_acknowledge_text_is_used_when_set(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push(hermes("get_time"), "It is noon.")
    agent = engine.create_agent(tool_graph(D.Acknowledge, acknowledge_text="done, quietly"))
    agent.send_message("time?")
    assert [m["content"] for m in answer_chat(mock_model) if m["role"] == "tool"] == [
        "done, quietly"
    ]


def test_no_pause_on_no_tool_called(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push("Just chatting.", "Reply.")
    agent = engine.create_agent(tool_graph(D.AwaitResult, mode=tl.ToolCallMode.DetectOnly))
    step = agent.send_message("hello")
    assert step.result is not None and step.result.text == "Reply."


# --- modes ---------------------------------------------------------------------------------


def test_call_or_answer_emits_residual_text_when_no_call(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push("Sure, the porch is already lit.")
    g = graph_of(("detect", tl.ToolCallParams(tools=[SET_LIGHT])))
    result = engine.create_agent(g).send_message("Is the porch lit?").result
    assert result is not None and result.text == "Sure, the porch is already lit."


def test_detect_only_stays_silent_when_no_call(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push("Sure, the porch is already lit.")
    g = graph_of(("detect", tl.ToolCallParams(tools=[SET_LIGHT], mode=tl.ToolCallMode.DetectOnly)))
    result = engine.create_agent(g).send_message("Is the porch lit?").result
    assert result is not None and result.text == ""


def test_call_or_answer_leading_to_a_generate_is_refused_saying_why(engine: tl.Engine) -> None:
    # The node would answer when no tool is called, and then the Generate node again.
    with pytest.raises(tl.GraphCompilationFailed) as info:
        engine.create_agent(tool_graph(D.AwaitResult, mode=tl.ToolCallMode.CallOrAnswer))
    message = info.value.message
    assert info.value.code == Code.GraphCompilationFailed
    for part in ("'detect'", "call_or_answer", "no_tool_called_exit", "'answer'", "detect_only"):
        assert part in message, message
    # Through a Pause node the turn still reaches the Generate node: refused the same way.
    through_pause = graph_of(
        ("detect", tl.ToolCallParams(tools=[SET_LIGHT], no_tool_called_exit="wait")),
        ("wait", tl.PauseParams(default_exit="answer")),
        ("answer", tl.GenerateParams()),
    )
    with pytest.raises(tl.GraphCompilationFailed, match="through 'wait'"):
        engine.create_agent(through_pause)


@pytest.mark.parametrize(
    "after",
    [
        tl.CannedResponseParams(lines=["Anything else?"]),
        tl.ToolCallParams(tools=[GET_TIME], mode=tl.ToolCallMode.DetectOnly),
        tl.PauseParams(),
    ],
    ids=["canned", "toolcall", "pause-to-end"],
)
def test_call_or_answer_answers_once_where_no_generate_follows(
    engine: tl.Engine, mock_model: tl.MockModel, after: tl.NodeParams
) -> None:
    mock_model.push("The porch is lit.", "Nothing to call.")
    g = graph_of(
        ("detect", tl.ToolCallParams(tools=[SET_LIGHT], no_tool_called_exit="next")),
        ("next", after),
    )
    agent = engine.create_agent(g)
    chunks: list[tuple[str, bool, bool]] = []
    agent.set_on_answer_text(lambda text, delta, final: chunks.append((text, delta, final)))
    step = agent.send_message("Is the porch lit?")
    if step.paused:
        step = agent.resume()
    expected = "The porch is lit."
    if isinstance(after, tl.CannedResponseParams):
        expected += "\nAnything else?"
    assert step.final.text == expected
    assert [text for text, _, final in chunks if final] == [expected]


def test_detect_only_into_a_generate_answers_once(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push("Sure, the porch is already lit.", "It is lit.")
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    finals: list[str] = []
    agent.set_on_answer_text(lambda text, delta, final: final and finals.append(text))
    assert agent.send_message("Is the porch lit?").final.text == "It is lit."
    assert finals == ["It is lit."]


def test_changing_mode_to_call_or_answer_before_a_generate_is_3007(engine: tl.Engine) -> None:
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    with pytest.raises(tl.InvalidParamValue) as info:
        agent.change_params("detect", {"mode": "call_or_answer"})
    assert "no_tool_called_exit" in info.value.message and "'answer'" in info.value.message
    assert agent.get_params("detect").mode is tl.ToolCallMode.DetectOnly  # nothing changed


# --- detection across families -------------------------------------------------------------


@pytest.mark.parametrize(
    "family, output",
    [
        (tl.models.ToolCallFamily.HERMES, hermes("set_light", name="porch", on=True)),
        (
            tl.models.ToolCallFamily.LLAMA3,
            '{"name": "set_light", "parameters": {"name": "porch", "on": true}}',
        ),
        (
            tl.models.ToolCallFamily.MISTRAL,
            '[TOOL_CALLS][{"name": "set_light", "arguments": {"name": "porch", "on": true}, '
            '"id": "abcdefghi"}]',
        ),
        (
            tl.models.ToolCallFamily.GENERIC,
            "Calling: ```json\n"
            '{"name": "set_light", "arguments": {"name": "porch", "on": true}}\n```',
        ),
    ],
)
def test_calls_are_detected_in_every_family(
    clock: tl.VirtualClock, family: tl.models.ToolCallFamily, output: str
) -> None:
    model = tl.MockModel("mock", [output], family=family)
    with tl.Engine(model, clock=clock) as engine:
        step = engine.create_agent(tool_graph(D.AwaitResult)).send_message("porch on")
    assert step.pause is not None
    (call,) = step.pause.pending_calls
    assert (call.tool_name, call.arguments) == ("set_light", {"name": "porch", "on": True})


def test_malformed_output_is_a_clean_no_tool_called(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push('<tool_call>{"name": "set_light", "arguments": {oops</tool_call>', "Fallback.")
    agent = engine.create_agent(tool_graph(D.AwaitResult), enable_diagnostics=True)
    result = agent.send_message("porch on").result
    assert result is not None and result.status == tl.TurnStatus.SUCCESS
    detect = result.debug_info["nodes"][0]  # type: ignore[index]
    assert detect["exit_route"] == "no_tool_called"
    assert detect["diagnostics"]["malformed_calls"] == 1


def test_several_calls_in_one_output(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push(hermes("set_light", name="porch", on=True) + hermes("get_time"), "Both done.")
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    step = agent.send_message("porch on, and what time is it")
    assert step.pause is not None
    ids = [c.call_id for c in step.pause.pending_calls]
    assert ids == ["c00000000", "c00000001"]
    # results may come in any order; the model sees them in call order
    agent.resume(tool_results=[(ids[1], "noon"), (ids[0], "lit")])
    tool_msgs = [
        (m["tool_call_id"], m["content"]) for m in answer_chat(mock_model) if m["role"] == "tool"
    ]
    assert tool_msgs == [(ids[0], "lit"), (ids[1], "noon")]


# --- events --------------------------------------------------------------------------------


def test_tool_call_events_carry_ids_string_arguments_and_coerced_values(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("set_light", name="porch", on="true"), "ok")
    agent = engine.create_agent(tool_graph(D.Notify))
    with_id: list[tuple[str, str, str]] = []
    events: list[tl.ToolCallEvent] = []
    agent.set_on_tool_call_with_id(lambda *a: with_id.append(a))
    agent.set_on_tool_call_event(events.append)
    agent.send_message("porch on")
    assert with_id == [("c00000000", "set_light", '{"name": "porch", "on": "true"}')]
    (event,) = events
    assert event.node_name == "detect" and event.disposition == "notify"
    assert event.arguments == {"name": "porch", "on": True}


# --- ids unique for the agent's lifetime; multi-round loops --------------------------------


def test_three_rounds_through_one_toolcall_node_pair_results_with_the_right_calls(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    g = graph_of(
        (
            "detect",
            tl.ToolCallParams(
                tools=[SET_LIGHT],
                disposition=D.AwaitResult,
                mode=tl.ToolCallMode.DetectOnly,
                tool_called_exit="detect",  # loop back for another round
                no_tool_called_exit="answer",
            ),
        ),
        ("answer", tl.GenerateParams()),
    )
    rooms = ["porch", "hall", "attic"]
    mock_model.push(
        *[hermes("set_light", name=r, on=True) for r in rooms], "no more calls", "All lit."
    )
    agent = engine.create_agent(g)
    step = agent.send_message("light everything")
    seen_ids = []
    for room in rooms:
        assert step.pause is not None
        (call,) = step.pause.pending_calls
        assert call.arguments["name"] == room
        seen_ids.append(call.call_id)
        step = agent.resume(tool_results=[(call.call_id, f"{room} is lit")])
    assert seen_ids == ["c00000000", "c00000001", "c00000002"]
    assert step.result is not None and step.result.text == "All lit."
    chat = answer_chat(mock_model)
    pairs = []
    for i, msg in enumerate(chat):
        if msg.get("tool_calls"):
            (tc,) = msg["tool_calls"]
            assert chat[i + 1]["role"] == "tool" and chat[i + 1]["tool_call_id"] == tc["id"]
            pairs.append((tc["id"], tc["function"]["arguments"]["name"], chat[i + 1]["content"]))
    assert pairs == [
        ("c00000000", "porch", "porch is lit"),
        ("c00000001", "hall", "hall is lit"),
        ("c00000002", "attic", "attic is lit"),
    ]
    # and ids keep counting in the next turn
    mock_model.push(hermes("set_light", name="cellar", on=True))
    step = agent.send_message("and the cellar")
    assert step.pause is not None and step.pause.pending_calls[0].call_id == "c00000003"


# --- undeclared tools ----------------------------------------------------------------------


def test_undeclared_tools_are_never_surfaced(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push(hermes("launch_missiles", target="moon"), "I can't do that.")
    agent = engine.create_agent(tool_graph(D.AwaitResult), enable_diagnostics=True)
    events: list[tl.ToolCallEvent] = []
    agent.set_on_tool_call_event(events.append)
    result = agent.send_message("launch").result
    assert events == [] and result is not None and result.text == "I can't do that."
    detect = result.debug_info["nodes"][0]  # type: ignore[index]
    assert detect["exit_route"] == "no_tool_called"
    assert detect["diagnostics"]["rejected_calls"] == [
        {"tool_name": "launch_missiles", "reason": "tool not declared by this node"}
    ]
    assert all(not m.get("tool_calls") for m in answer_chat(mock_model))


def test_declared_calls_survive_next_to_undeclared_ones(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("launch_missiles") + hermes("get_time"))
    step = engine.create_agent(tool_graph(D.AwaitResult)).send_message("time?")
    assert step.pause is not None
    assert [c.tool_name for c in step.pause.pending_calls] == ["get_time"]


# --- batches -------------------------------------------------------------------------------


def paused_on_two_calls(
    engine: tl.Engine, mock_model: tl.MockModel, disposition: D = D.AwaitResult
) -> tl.Agent:
    mock_model.push(hermes("set_light", name="porch", on=True) + hermes("get_time"), "Answer.")
    agent = engine.create_agent(tool_graph(disposition))
    assert agent.send_message("go").paused
    return agent


@pytest.mark.parametrize(
    "batch, words",
    [
        ([], "got none"),
        ([("c00000000", "a")], "missing result(s) for ['c00000001']"),
        (
            [("c00000000", "a"), ("c00000001", "b"), ("c00000009", "c")],
            "unknown call id(s) ['c00000009']",
        ),
        ([("c00000000", "a"), ("c00000000", "b"), ("c00000001", "c")], "more than once"),
        ([("c00000000", "x" * (64 * 1024 + 1)), ("c00000001", "b")], "over the 65536-byte limit"),
    ],
)
def test_invalid_batches_are_3016_listing_ids_and_stay_paused(
    engine: tl.Engine, mock_model: tl.MockModel, batch: list[tuple[str, str]], words: str
) -> None:
    agent = paused_on_two_calls(engine, mock_model)
    before = agent.wait().pause
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume(tool_results=batch)
    err = info.value
    assert err.code == Code.InvalidToolResults and words in err.message
    assert "expected call ids ['c00000000', 'c00000001']" in err.message
    assert f"received {[cid for cid, _ in batch]}" in err.message
    assert agent.wait().pause == before
    result = agent.resume(tool_results=[("c00000000", "a"), ("c00000001", "b")]).result
    assert result is not None and result.text == "Answer."


def test_oversize_batch_is_3016(clock: tl.VirtualClock, mock_model: tl.MockModel) -> None:
    settings = tl.EngineSettings(max_tool_result_bytes=100, max_tool_batch_bytes=150)
    with tl.Engine(mock_model, clock=clock, settings=settings) as engine:
        agent = paused_on_two_calls(engine, mock_model)
        with pytest.raises(tl.TurnloomError) as info:
            agent.resume(tool_results=[("c00000000", "a" * 80), ("c00000001", "b" * 80)])
        assert info.value.code == Code.InvalidToolResults
        assert "batch is 160 bytes, over the 150-byte limit" in info.value.message
        assert agent.wait().paused


@pytest.mark.parametrize("disposition", [D.Pause, D.PauseAndAcknowledge])
def test_results_on_a_non_await_pause_are_3016_and_empty_is_a_plain_continue(
    engine: tl.Engine, mock_model: tl.MockModel, disposition: D
) -> None:
    agent = paused_on_two_calls(engine, mock_model, disposition)
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume(tool_results=[("c00000000", "a"), ("c00000001", "b")])
    assert (
        info.value.code == Code.InvalidToolResults
        and "awaits no tool results" in info.value.message
    )
    assert agent.wait().paused
    assert agent.resume().result.text == "Answer."  # type: ignore[union-attr]


def test_jump_resume_on_await_result_still_needs_the_batch(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    agent = paused_on_two_calls(engine, mock_model)
    with pytest.raises(tl.TurnloomError) as info:
        agent.resume("answer")
    assert info.value.code == Code.InvalidToolResults
    step = agent.resume("answer", [("c00000000", "a"), ("c00000001", "b")])
    assert step.result is not None


# --- timeouts of ToolCall pauses ---------------------------------------------------------


def test_await_result_timeout_with_exit_closes_calls_with_a_visible_timeout(
    engine: tl.Engine, clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("get_time"), "I could not check the time.")
    agent = engine.create_agent(
        tool_graph(D.AwaitResult, pause_timeout_ms=3000, timeout_exit="answer")
    )
    assert agent.send_message("time?").paused
    clock.advance(3)
    result = agent.wait_complete(timeout=5)
    assert result is not None and result.text == "I could not check the time."
    (tool_msg,) = [m for m in answer_chat(mock_model) if m["role"] == "tool"]
    assert json.loads(tool_msg["content"])["error"] == "timeout"


def test_await_result_timeout_without_exit_keeps_a_well_formed_interaction(
    engine: tl.Engine, clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("get_time"), "no call this time", "Next answer.")
    agent = engine.create_agent(tool_graph(D.AwaitResult, pause_timeout_ms=1000))
    agent.send_message("time?")
    clock.advance(1)
    assert agent.wait_complete(timeout=5).status == tl.TurnStatus.PAUSE_TIMED_OUT  # type: ignore[union-attr]
    agent.send_message("anything else?")
    chat = answer_chat(mock_model)
    call_idx = next(i for i, m in enumerate(chat) if m.get("tool_calls"))
    assert chat[call_idx + 1]["role"] == "tool"


# --- template support -----------------------------------------------------------------------


def test_model_that_cannot_render_tools_is_3003(clock: tl.VirtualClock) -> None:
    model = tl.MockModel("plain", renders_tools=False)
    with tl.Engine(model, clock=clock) as engine:
        g = tool_graph(D.Acknowledge).set_default_model_name("plain")
        with pytest.raises(tl.TurnloomError) as info:
            engine.create_agent(g)
    assert info.value.code == Code.GraphCompilationFailed
    assert "'detect'" in info.value.message and "tools" in info.value.message


def test_tools_reach_the_model_as_json_schema(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push("no call")
    engine.create_agent(tool_graph(D.Acknowledge)).send_message("hi")
    tools = mock_model.requests[0].tools
    assert tools is not None and tools[0]["function"]["name"] == "set_light"
    assert tools[0]["function"]["parameters"]["properties"]["on"]["type"] == "boolean"


@pytest.mark.parametrize(
    "tools, field",
    [
        ([], "tools"),
        ([SET_LIGHT, SET_LIGHT], "tools"),
        (
            [tl.ToolDefinition(name="x", parameters=[tl.ToolParamDefinition("a", "float")])],
            "tools[0].parameters[0].type",
        ),
        ([tl.ToolDefinition(name="")], "tools[0].name"),
    ],
)
def test_bad_tool_definitions_are_3007(
    engine: tl.Engine, tools: list[tl.ToolDefinition], field: str
) -> None:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph_of(("detect", tl.ToolCallParams(tools=tools))))
    assert info.value.code == Code.InvalidParamValue and f"'{field}'" in info.value.message


def test_toolcall_structural_fields(engine: tl.Engine) -> None:
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    for change in ({"disposition": "notify"}, {"tools": []}, {"pause_timeout_ms": 5}):
        with pytest.raises(tl.TurnloomError) as info:
            agent.change_params("detect", change)
        assert info.value.code == Code.ParamNotMutable
    agent.change_params("detect", {"mode": "detect_only", "acknowledge_text": "roger"})


# --- register_tool --------------------------------------------------------------------------


def test_registered_tools_answer_await_result_and_resume_automatically(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("set_light", name="porch", on=True) + hermes("get_time"), "Both done.")
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    calls: list[str] = []
    agent.register_tool("set_light", lambda call: calls.append(call.call_id) or '{"lit": true}')
    agent.register_tool("get_time", lambda call: calls.append(call.call_id) or "noon")
    result = agent.send_message("porch on and time").result  # straight to completion
    assert result is not None and result.text == "Both done."
    assert calls == ["c00000000", "c00000001"]
    assert [m["content"] for m in answer_chat(mock_model) if m["role"] == "tool"] == [
        '{"lit": true}',
        "noon",
    ]


@pytest.mark.parametrize("disposition", [D.Pause, D.PauseAndAcknowledge])
def test_registered_tools_run_for_side_effects_on_plain_pauses(
    engine: tl.Engine, mock_model: tl.MockModel, disposition: D
) -> None:
    mock_model.push(hermes("get_time"), "Fine.")
    agent = engine.create_agent(tool_graph(disposition))
    ran: list[str] = []
    agent.register_tool("get_time", lambda call: ran.append(call.tool_name) or "ignored")
    result = agent.send_message("time").result
    assert ran == ["get_time"] and result is not None and result.text == "Fine."
    assert "ignored" not in [m["content"] for m in answer_chat(mock_model)]


@pytest.mark.parametrize(
    "disposition", [D.Notify, D.NotifyAndAcknowledge, D.Acknowledge, D.RouteOnly]
)
def test_handlers_never_run_for_non_pausing_dispositions(
    engine: tl.Engine, mock_model: tl.MockModel, disposition: D
) -> None:
    mock_model.push(hermes("get_time"), "Fine.")
    agent = engine.create_agent(tool_graph(disposition))
    ran: list[str] = []
    agent.register_tool("get_time", lambda call: ran.append("x") or "r")
    agent.send_message("time")
    assert ran == []


def test_refused_automatic_resume_keeps_the_batch_for_retry(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("get_time"), "It is noon.")
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    big = "x" * (64 * 1024 + 1)
    agent.register_tool("get_time", lambda call: big)
    step = agent.send_message("time")
    assert step.paused and agent.has_paused_tool_batch()
    with pytest.raises(tl.TurnloomError) as info:
        agent.retry_paused_tool_batch()
    assert info.value.code == Code.InvalidToolResults and agent.has_paused_tool_batch()
    # The host fixes the cause and retries through its own resume; the kept batch is dropped.
    step = agent.resume(tool_results=[("c00000000", "noon")])
    assert step.result is not None and not agent.has_paused_tool_batch()


@pytest.mark.embedded_only  # changes the engine's settings through its internals
def test_retry_after_a_refusal_for_a_transient_reason(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("get_time"), "It is noon.")
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    limit = {"bytes": 1}
    engine_core = agent._agent._core.runtime  # type: ignore[attr-defined]
    engine_core.settings = tl.EngineSettings(max_tool_result_bytes=limit["bytes"])
    agent.register_tool("get_time", lambda call: "noon")
    assert agent.send_message("time").paused and agent.has_paused_tool_batch()
    engine_core.settings = tl.EngineSettings()
    step = agent.retry_paused_tool_batch()
    assert step.result is not None and step.result.text == "It is noon."
    assert not agent.has_paused_tool_batch()


def test_unattended_pause_is_warned_about_at_once(mock_model: tl.MockModel) -> None:
    """The unattended pause warning: no paused callback, no handler, nobody waiting on the step."""

    async def main() -> list[dict[str, Any]]:
        mock_model.push(hermes("get_time"))
        async with tl.AsyncEngine(mock_model) as engine:
            agent = await engine.create_agent(tool_graph(D.AwaitResult))
            with structlog.testing.capture_logs() as logs:
                agent._core.send_message("time")  # fire and forget: no waiter
                while agent._core.turn is not None and agent._core.turn.state != "paused":
                    await asyncio.sleep(0)
            return logs

    logs = asyncio.run(main())
    (warning,) = [e for e in logs if e["event"] == "pause.unattended"]
    assert warning["node"] == "detect" and warning["log_level"] == "warning"


def test_no_unattended_warning_when_a_caller_waits(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("get_time"))
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    with structlog.testing.capture_logs() as logs:
        assert agent.send_message("time").paused
    assert not [e for e in logs if e["event"] == "pause.unattended"]


def test_recorder_sees_tool_flow(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push(hermes("get_time"), "Noon.")
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    rec = Recorder(agent)
    agent.send_message("time")
    agent.resume(tool_results=[("c00000000", "12:00")])
    assert [e[0] for e in rec.events] == ["paused", "resumed", "text", "text", "complete"]


def test_editing_an_events_arguments_does_not_change_the_dialog(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(hermes("set_light", name="porch", on=True), "ok")
    agent = engine.create_agent(tool_graph(D.AwaitResult))
    step = agent.send_message("porch on")
    assert step.pause is not None
    step.pause.pending_calls[0].arguments["name"] = "HACKED"
    agent.resume(tool_results=[("c00000000", "lit")])
    (msg,) = [m for m in answer_chat(mock_model) if m.get("tool_calls")]
    assert msg["tool_calls"][0]["function"]["arguments"] == {"name": "porch", "on": True}
