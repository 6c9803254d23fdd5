"""`serve --mock SCRIPT` as a client developer runs it: a subprocess on a free loopback port,
driven with `tl.connect`, through every client feature (pauses, tool calls awaiting the game's
results, errors, cancelling a slow stream); and a bad script refused at start (exit 2)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

import turnloom as tl
import turnloom.__main__ as cli
from tests.helpers import ENV, SET_LIGHT, ready_address, running
from turnloom.engine.inference.mock_script import parse_mock_script

SLOW = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"

#: What the scenario below plays, in order: one generation per step, then the echo.
SCRIPT = {
    "steps": [
        {"tool_call": {"name": "set_light", "arguments": {"name": "porch", "on": True}}},
        "The porch light is on.",
        "Welcome, traveller.",
        {"reply": SLOW, "delay_ms": 100},
        {"error": "the model fell over"},
    ],
    "models": {"narrator": ["Night falls."]},
}


@contextmanager
def serving(script: Path) -> Iterator[tuple[str, int]]:
    """`python -m turnloom serve --mock SCRIPT --port 0`; its address, from its ready line."""
    args = [sys.executable, "-m", "turnloom", "serve", "--mock", str(script), "--port", "0"]
    with running(args) as proc:
        yield ready_address(proc)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def script_file(folder: Path, script: Any) -> Path:
    path = folder / "script.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    return path


def graphs() -> dict[str, tl.GraphDescription]:
    tools = (
        tl.GraphDescription()
        .add_node(
            "act",
            tl.ToolCallParams(
                tools=[SET_LIGHT],
                disposition=tl.ToolCallDisposition.AwaitResult,
                tool_called_exit="reply",
            ),
        )
        .add_node("reply", tl.GenerateParams())
        .set_start_node("act")
        .set_default_model_name("mock")
    )
    talk = (
        tl.GraphDescription()
        .add_node("listen", tl.PauseParams(default_exit="say"))
        .add_node("say", tl.GenerateParams())
        .set_start_node("listen")
        .set_default_model_name("mock")
    )
    narrate = (
        tl.GraphDescription()
        .add_node("say", tl.GenerateParams())
        .set_start_node("say")
        .set_default_model_name("narrator")
    )
    return {"tools": tools, "talk": talk, "narrate": narrate}


def test_every_client_feature_over_the_wire_from_a_script(tmp_path: Path) -> None:
    g = graphs()
    with serving(script_file(tmp_path, SCRIPT)) as address, tl.connect(*address) as remote:
        assert sorted(m.name for m in remote.list_models()) == ["mock", "narrator"]
        # A tool call arrives with its arguments; the game's result resumes the turn.
        agent = remote.create_agent(g["tools"])
        step = agent.send_message("Turn on the porch light")
        assert step.pause is not None and step.pause.awaits_results
        (call,) = step.pause.pending_calls
        assert (call.tool_name, call.arguments) == ("set_light", {"name": "porch", "on": True})
        assert json.loads(call.arguments_json) == {"name": "porch", "on": "true"}
        done = agent.resume(tool_results=[(call.call_id, '{"lit": true}')]).final
        assert (done.status, done.text) == (tl.TurnStatus.SUCCESS, "The porch light is on.")
        # A pause, then the next step of the script.
        talker = remote.create_agent(g["talk"])
        assert talker.send_message("Hello").paused
        assert talker.resume().final.text == "Welcome, traveller."
        # A slow stream, cancelled after its first token.
        first = threading.Event()
        talker.set_on_answer_text(lambda text, delta, final: delta and first.set())
        assert talker.send_message("Tell me a story").paused
        future = talker.resume_async()
        assert first.wait(10), "no token streamed"
        talker.cancel()
        cancelled = future.result(10).final
        assert cancelled.status is tl.TurnStatus.CANCELLED
        assert SLOW.startswith(cancelled.text) and cancelled.text != SLOW
        # A scripted error ends the turn 4001 with its message.
        assert talker.send_message("And then?").paused
        failed = talker.resume().final
        assert (failed.status, failed.error_code) == (tl.TurnStatus.ERROR, 4001)
        assert "the model fell over" in failed.error_message
        # Played out: the mock echoes. Another model has its own script.
        assert talker.send_message("bye").paused
        assert talker.resume().final.text == "You said: bye"
        narrator = remote.create_agent(g["narrate"])
        assert narrator.send_message("go on").final.text == "Night falls."


def test_a_bad_script_stops_serve_at_start_naming_the_file_and_the_step(tmp_path: Path) -> None:
    path = script_file(tmp_path, {"steps": ["ok", {"tool_call": {"name": "x", "arguments": 7}}]})
    done = subprocess.run(
        [sys.executable, "-m", "turnloom", "serve", "--mock", str(path), "--port", "0"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert (
        f"--mock {path}: steps[1].tool_call: 'arguments' must be an object, got a number"
    ) in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("flags", "mock"),
    [
        (["--mock"], True),
        (["--mock", "--port", "0"], True),
        (["--port", "0"], False),
        (["--mock", "npc.json", "--port", "0"], "npc.json"),
    ],
)
def test_mock_takes_an_optional_script(flags: list[str], mock: object) -> None:
    assert cli.build_parser().parse_args(["serve", *flags]).mock == mock


def test_the_example_scripts_of_the_docs_and_the_help_are_valid() -> None:
    docs = (Path(__file__).resolve().parents[1] / "docs" / "protocol.md").read_text("utf-8")
    section = docs.split("### Mock scripts", 1)[1]
    example = section.split("```json\n", 1)[1].split("```", 1)[0]
    in_help = cli.MOCK_SCRIPT_HELP.split("\n\n", 2)[1]
    for text in (example, in_help):
        script = parse_mock_script(json.loads(text))
        assert script.steps["mock"] and script.models()[0].name == "mock"
