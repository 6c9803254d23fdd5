"""Mock scripts (`serve --mock SCRIPT`): the file is checked whole, naming the file, the step
and what is wrong, and its models play replies, tool calls, errors and slow streams."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import SET_LIGHT, graph_of
from turnloom.engine.inference.mock_script import (
    MockScript,
    MockScriptError,
    MockStep,
    load_mock_script,
    parse_mock_script,
)


def write(folder: Path, script: Any) -> Path:
    path = folder / "script.json"
    path.write_text(script if isinstance(script, str) else json.dumps(script), encoding="utf-8")
    return path


def test_every_kind_of_step_is_read() -> None:
    script = parse_mock_script(
        {
            "steps": [
                "Welcome.",
                {"reply": "Slowly.", "delay_ms": 20},
                {"tool_call": {"name": "set_light", "arguments": {"name": "porch", "on": True}}},
                {"reply": "Both:", "tool_call": [{"name": "a"}, {"name": "b", "arguments": {}}]},
                {"error": "out of mana", "delay_ms": 1},
            ],
            "models": {"narrator": ["Night falls."]},
            "fallback": "Nothing more.",
        }
    )
    assert script.steps["mock"] == (
        MockStep("Welcome."),
        MockStep("Slowly.", delay_s=0.02),
        MockStep(
            '<tool_call>{"name": "set_light", "arguments": {"name": "porch", "on": true}}'
            "</tool_call>"
        ),
        MockStep(
            'Both: <tool_call>{"name": "a", "arguments": {}}</tool_call> '
            '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
        ),
        MockStep(error="out of mana", delay_s=0.001),
    )
    assert script.fallback == MockStep("Nothing more.")
    assert [model.name for model in script.models()] == ["mock", "narrator"]


def test_an_empty_script_serves_the_echoing_mock() -> None:
    script = parse_mock_script({})
    assert script == MockScript({}, None, "mock script")
    (model,) = script.models()
    assert model.name == "mock" and not model.script


BAD: dict[str, tuple[Any, str]] = {
    "not an object": ([], "expected a JSON object of 'steps', 'models' and 'fallback', got a list"),
    "unknown top key": ({"stepz": []}, "unknown key 'stepz'"),
    "steps not a list": ({"steps": {}}, "steps: expected a list of steps, got an object"),
    "step a number": ({"steps": ["ok", 5]}, "steps[1]: a step is a reply text or an object"),
    "unknown step key": ({"steps": [{"replyy": "x"}]}, "steps[0]: unknown key 'replyy'"),
    "negative delay": (
        {"steps": [{"reply": "x", "delay_ms": -1}]},
        "steps[0]: 'delay_ms' must be an integer from 0 to 600000, got -1",
    ),
    "delay a bool": ({"steps": [{"reply": "x", "delay_ms": True}]}, "steps[0]: 'delay_ms'"),
    "delay alone": ({"steps": [{"delay_ms": 5}]}, "steps[0]: a step needs one of"),
    "reply a number": ({"steps": ["a", "b", {"reply": 3}]}, "steps[2]: 'reply' must be a string"),
    "call without name": (
        {"steps": [{"tool_call": {"arguments": {}}}]},
        "steps[0].tool_call: 'name' must be the tool's name",
    ),
    "call arguments a list": (
        {"steps": [{"tool_call": [{"name": "a"}, {"name": "b", "arguments": []}]}]},
        "steps[0].tool_call[1]: 'arguments' must be an object, got a list",
    ),
    "call unknown key": (
        {"steps": [{"tool_call": {"name": "a", "args": {}}}]},
        "steps[0].tool_call: unknown key 'args'",
    ),
    "no calls": ({"steps": [{"tool_call": []}]}, "steps[0]: 'tool_call' is an empty list"),
    "empty error": ({"steps": [{"error": ""}]}, "steps[0]: 'error' must be a non-empty string"),
    "error with reply": (
        {"steps": [{"error": "x", "reply": "y"}]},
        "steps[0]: an 'error' step fails the generation",
    ),
    "models not an object": ({"models": []}, "models: expected an object"),
    "model step": ({"models": {"npc": ["ok", None]}}, 'models["npc"][1]: a step is a reply'),
    "mock twice": ({"steps": [], "models": {"mock": []}}, "scripted twice"),
    "empty model name": ({"models": {" ": []}}, "a model name must not be empty"),
    "bad fallback": ({"fallback": 3}, "fallback: a step is a reply text or an object"),
    "not JSON": ('{"steps": [}', "not valid JSON: Expecting value (line 1, column 12)"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_script_is_refused_naming_the_file_the_step_and_the_fault(
    case: str, tmp_path: Path
) -> None:
    script, said = BAD[case]
    path = write(tmp_path, script)
    with pytest.raises(MockScriptError) as info:
        load_mock_script(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and said in message, message


def test_a_missing_script_says_so(tmp_path: Path) -> None:
    with pytest.raises(MockScriptError, match=r"nope\.json: no such file"):
        load_mock_script(tmp_path / "nope.json")
    with pytest.raises(MockScriptError, match="a directory, not a JSON file"):
        load_mock_script(tmp_path)


def tool_graph() -> tl.GraphDescription:
    """act (ToolCall, AwaitResult) -> reply (Generate); no call ends the turn."""
    return graph_of(
        (
            "act",
            tl.ToolCallParams(
                tools=[SET_LIGHT],
                disposition=tl.ToolCallDisposition.AwaitResult,
                tool_called_exit="reply",
            ),
        ),
        ("reply", tl.GenerateParams()),
    )


def test_the_script_plays_a_call_its_answer_an_error_then_echoes(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        {
            "steps": [
                {"tool_call": {"name": "set_light", "arguments": {"name": "porch", "on": True}}},
                "The porch light is on.",
                {"error": "out of mana"},
            ]
        },
    )
    with tl.Engine(load_mock_script(path).models()) as engine:
        agent = engine.create_agent(tool_graph())
        step = agent.send_message("Porch light on")
        assert step.pause is not None and step.pause.awaits_results
        (call,) = step.pause.pending_calls
        assert (call.tool_name, call.arguments) == ("set_light", {"name": "porch", "on": True})
        done = agent.resume(tool_results=[(call.call_id, "done")]).final
        assert (done.status, done.text) == (tl.TurnStatus.SUCCESS, "The porch light is on.")
        failed = agent.send_message("again").final
        assert (failed.status, failed.error_code) == (tl.TurnStatus.ERROR, 4001)
        assert "ScriptedError: out of mana" in failed.error_message
        # Played out: the fallback echoes (call_or_answer replies with the text itself).
        assert agent.send_message("hello").final.text == "You said: hello"


def test_a_slow_step_can_be_cancelled_mid_stream() -> None:
    slow = "one two three four five six seven eight nine ten eleven twelve"
    script = parse_mock_script({"steps": [{"reply": slow, "delay_ms": 50}]})
    (model,) = script.models()
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph_of(("say", tl.GenerateParams())))
        first = threading.Event()
        agent.set_on_answer_text(lambda text, delta, final: delta and first.set())
        future = agent.send_message_async("tell me")
        assert first.wait(10), "no token streamed"
        agent.cancel()
        result = future.result(10).final
    assert result.status is tl.TurnStatus.CANCELLED
    assert slow.startswith(result.text) and result.text != slow
    assert model.cancelled_generations == 1


def test_a_delayed_fallback_and_a_delayed_error_are_played_too() -> None:
    script = parse_mock_script(
        {"steps": [{"error": "late", "delay_ms": 5}], "fallback": {"reply": "ok", "delay_ms": 5}}
    )
    with tl.Engine(script.models()) as engine:
        agent = engine.create_agent(graph_of(("say", tl.GenerateParams())))
        assert "ScriptedError: late" in agent.send_message("a").final.error_message
        assert agent.send_message("b").final.text == "ok"
        assert agent.send_message("c").final.text == "ok"
