"""Graphs and engines shared by the telemetry tests: a tool call that pauses for its result
(AwaitResult), then a pause for the game, then an answer; all on the mock model."""

from __future__ import annotations

import json
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import SET_LIGHT, graph_of

D = tl.ToolCallDisposition


def hermes(tool: str, **arguments: Any) -> str:
    """A call in the Hermes / Qwen markup (the mock's default family)."""
    return f"<tool_call>{json.dumps({'name': tool, 'arguments': arguments})}</tool_call>"


def story_graph(pause_timeout_ms: int = 0) -> tl.GraphDescription:
    """detect (ToolCall, AwaitResult) → wait (Pause) → answer (Generate)."""
    return graph_of(
        (
            "detect",
            tl.ToolCallParams(
                tools=[SET_LIGHT],
                disposition=D.AwaitResult,
                mode=tl.ToolCallMode.DetectOnly,
                tool_called_exit="wait",
                no_tool_called_exit="wait",
            ),
        ),
        ("wait", tl.PauseParams(default_exit="answer", pause_timeout_ms=pause_timeout_ms)),
        ("answer", tl.GenerateParams()),
    )


@pytest.fixture
def scripted() -> tl.MockModel:
    """The mock: a call of set_light, then replies echo the user."""
    return tl.MockModel("mock", [hermes("set_light", name="hall", on=True)])
