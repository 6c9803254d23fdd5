"""Test helpers: small graphs and a recorder of agent callbacks."""

from __future__ import annotations

import os
import re
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

import turnloom as tl
from turnloom.engine.core import EngineCore

#: Tools the ToolCall tests offer: one with typed parameters, one without.
SET_LIGHT = tl.ToolDefinition(
    name="set_light",
    description="Turn a named light on or off.",
    parameters=[
        tl.ToolParamDefinition("name", "string", "Which light."),
        tl.ToolParamDefinition("on", "boolean", "true to turn on."),
    ],
)
GET_TIME = tl.ToolDefinition(name="get_time", description="The time of day.")
#: The tools the real-model decisions are checked on (local and served).
OPEN_DOOR = tl.ToolDefinition(
    name="open_door",
    description="Open or unlock a door.",
    parameters=[tl.ToolParamDefinition("door", "string", "Which door, e.g. 'north'.")],
)
SET_TORCH = tl.ToolDefinition(
    name="set_torch",
    description="Light the torch or put it out.",
    parameters=[tl.ToolParamDefinition("lit", "boolean", "true to light it.")],
)


def graph_of(*nodes: tuple[str, tl.NodeParams], start: str | None = None) -> tl.GraphDescription:
    """A graph of `nodes`, starting at the first, on the mock model."""
    g = tl.GraphDescription()
    for name, params in nodes:
        g.add_node(name, params)
    return g.set_start_node(start or nodes[0][0]).set_default_model_name("mock")


class Recorder:
    """Collects every callback of one agent, in order."""

    def __init__(self, agent: tl.Agent) -> None:
        self.events: list[tuple[object, ...]] = []
        self.results: list[tl.TurnResult] = []
        agent.set_on_paused(lambda node, exit_: self.events.append(("paused", node, exit_)))
        agent.set_on_resumed(lambda node, to: self.events.append(("resumed", node, to)))
        agent.set_on_answer_text(lambda t, d, f: self.events.append(("text", t, d, f)))
        agent.set_on_turn_complete(self._complete)

    def _complete(self, result: tl.TurnResult) -> None:
        self.events.append(("complete", result.status.value))
        self.results.append(result)

    def finals(self) -> list[str]:
        """The text of every is_final chunk."""
        return [str(e[1]) for e in self.events if e[0] == "text" and e[3]]


def check_answer_chunks(
    chunks: Sequence[tuple[str, bool, bool]],
    results: Sequence[tl.TurnResult],
    open_reply: str | None,
) -> None:
    """Answer text chunks over an agent's whole life: per finished turn, deltas that add up to
    its reply and exactly one final chunk carrying it; after the last one, only the open turn's
    deltas."""
    finals = [i for i, chunk in enumerate(chunks) if chunk[2]]
    assert len(finals) == len(results)
    start = 0
    for index, result in zip(finals, results, strict=True):
        text, is_delta, _ = chunks[index]
        assert text == result.text and not is_delta
        deltas = chunks[start:index]
        assert all(d[1] and not d[2] for d in deltas)
        assert "".join(d[0] for d in deltas) == result.text
        start = index + 1
    tail = chunks[start:]
    if open_reply is None:
        assert tail == [], "text after the turn completed"
    else:
        assert "".join(d[0] for d in tail) == open_reply


def nested(depth: int = 5000, kind: type = list, leaf: Any = 0) -> Any:
    """`leaf` wrapped `depth` times in lists (or tuples, or {"k": ...} maps): past Python's
    recursion limit for repr, deepcopy and json at the default depth."""
    value = leaf
    for _ in range(depth):
        value = {"k": value} if kind is dict else kind([value])
    return value


def blocked_prepare(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Make `EngineCore.prepare_agent` (a graph's checks and compile, on the worker thread)
    wait until released: (started, release)."""
    started, release = threading.Event(), threading.Event()
    prepare = EngineCore.prepare_agent

    def waiting(*args: Any, **kwargs: Any) -> Any:
        started.set()
        assert release.wait(10)
        return prepare(*args, **kwargs)

    monkeypatch.setattr(EngineCore, "prepare_agent", waiting)
    return started, release


#: The environment of the CLI's subprocesses: unbuffered, so each line arrives as printed.
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}
#: The one line `serve` prints once it accepts connections.
READY_LINE = re.compile(r"turnloom: protocol v1 on (\S+):(\d+)\n")


@contextmanager
def running(args: Sequence[str]) -> Iterator[subprocess.Popen[str]]:
    """A subprocess (environment `ENV`) with stdout and stderr piped as text, killed at the end
    if it is still running."""
    proc = subprocess.Popen(
        list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def ready_address(proc: subprocess.Popen[str]) -> tuple[str, int]:
    """The address a `serve` subprocess listens on, from its ready line (which must come)."""
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline()
    found = READY_LINE.fullmatch(line)
    assert found, f"{line!r}: {proc.stderr.read() if not line else ''}"
    return found.group(1), int(found.group(2))
