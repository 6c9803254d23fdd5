"""Mock scripts: the JSON file `serve --mock SCRIPT` plays, so that a client developer can try
every client feature (replies, tool calls, errors, slow streams to cancel) over the wire.

The file is an object of at most three keys (docs/protocol.md, "The mock model"):

    {"steps": [...], "models": {"npc": [...]}, "fallback": "echo"}

`steps` is the script of the model `mock`, which every graph on the mock server can name;
`models` scripts more mock models by name. A script is a list of steps, one per generation
(whichever agent asks), played in order; then the fallback answers. A step is a reply text, or
an object with one of `reply` (text), `tool_call` (a call, or a list of calls, written in the
mock's markup; `reply` may go before them), `error` (the generation fails with this message,
the turn ends 4001), and optionally `delay_ms`, the wait before each streamed token.
`load_mock_script` checks the whole file at once and names the file, the step and what is
wrong with it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..tools.families import ToolCallFamily, call_markup
from .base import GenerationRequest, GenerationResult
from .mock import MockModel, echo_reply

#: The model `steps` scripts, which `serve --mock` always serves.
MOCK_MODEL = "mock"
#: The longest `delay_ms` a step may ask for (per token): ten minutes.
MAX_DELAY_MS = 600_000
#: What a step object may hold.
STEP_KEYS = ("reply", "tool_call", "error", "delay_ms")


class MockScriptError(ValueError):
    """A mock script that cannot be played: its message names the file, the step (a JSON path
    such as `steps[2]`) and what is wrong."""


class ScriptedError(RuntimeError):
    """The failure an `error` step makes a generation end with (the turn ends 4001)."""


@dataclass(frozen=True, slots=True)
class MockStep:
    """What one generation of a scripted mock plays: the `text` it streams (reply and calls in
    the mock's markup) or the `error` it fails with, each token `delay_s` after the last."""

    text: str = ""
    error: str = ""
    delay_s: float = 0.0

    def __call__(self, request: GenerationRequest) -> str:
        """The step's text (a `MockModel` script item), or its error raised."""
        if self.error:
            raise ScriptedError(self.error)
        return self.text


class ScriptedMock(MockModel):
    """A `MockModel` whose `MockStep`s may stream slowly: each token `delay_s` after the last
    (real time), so a client has time to cancel mid-stream."""

    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        """Play the next step (then the fallback), waiting its delay before each token."""
        scripted = bool(self.script)
        item = self.script[0] if scripted else self.fallback
        if not isinstance(item, MockStep) or not item.delay_s:
            return await super().generate(request, on_delta)
        if scripted:
            self.script.popleft()
        self.requests.append(request)
        if item.error:
            try:
                await asyncio.sleep(item.delay_s)
            except asyncio.CancelledError:
                self.cancelled_generations += 1
                raise
            raise ScriptedError(item.error)
        return await self.stream(item.text, request, on_delta, item.delay_s)


@dataclass(frozen=True, slots=True)
class MockScript:
    """A checked mock script: each model's steps, and what answers once they are played."""

    steps: Mapping[str, tuple[MockStep, ...]] = field(default_factory=dict)
    #: None: echo the last user message (`echo_reply`).
    fallback: MockStep | None = None
    #: The file it was read from ('' when made in code).
    path: str = ""

    def models(self) -> list[ScriptedMock]:
        """Fresh models playing the script from its start: `mock` first, then the others."""
        fallback = self.fallback if self.fallback is not None else echo_reply
        names = [MOCK_MODEL, *(name for name in self.steps if name != MOCK_MODEL)]
        return [ScriptedMock(name, self.steps.get(name, ()), fallback=fallback) for name in names]


def load_mock_script(path: str | os.PathLike[str]) -> MockScript:
    """Read and check the mock script at `path`; raise `MockScriptError` saying what is wrong
    (a missing or unreadable file, JSON that does not parse, a step that is not one)."""
    where = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        raise MockScriptError(f"{where}: no such file") from None
    except IsADirectoryError:
        raise MockScriptError(f"{where}: a directory, not a JSON file") from None
    except PermissionError:
        raise MockScriptError(f"{where}: not readable (permission denied)") from None
    except UnicodeDecodeError as error:
        raise MockScriptError(f"{where}: not UTF-8 text ({error.reason})") from None
    except OSError as error:
        raise MockScriptError(f"{where}: cannot be read ({error.strerror or error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise MockScriptError(
            f"{where}: not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise MockScriptError(f"{where}: not valid JSON: nested too deep") from None
    return parse_mock_script(data, where)


def parse_mock_script(data: Any, where: str = "mock script") -> MockScript:
    """The `MockScript` of `data`, a script's JSON as loaded; `where` names it in errors."""

    def fail(at: str, what: str) -> MockScriptError:
        return MockScriptError(f"{where}: {at}: {what}" if at else f"{where}: {what}")

    if not isinstance(data, dict):
        raise fail(
            "", f"expected a JSON object of 'steps', 'models' and 'fallback', got {_kind(data)}"
        )
    unknown = sorted(set(data) - {"steps", "models", "fallback"})
    if unknown:
        raise fail(
            "", f"unknown key {unknown[0]!r} (a script has 'steps', 'models' and 'fallback')"
        )
    scripts: dict[str, tuple[MockStep, ...]] = {}
    if "steps" in data:
        scripts[MOCK_MODEL] = _steps(data["steps"], "steps", fail)
    models = data.get("models", {})
    if not isinstance(models, dict):
        raise fail("models", f"expected an object of model name -> steps, got {_kind(models)}")
    for name, steps in models.items():
        at = f"models[{json.dumps(name)}]"
        if not name.strip():
            raise fail(at, "a model name must not be empty")
        if name == MOCK_MODEL and "steps" in data:
            raise fail(at, f"the model {MOCK_MODEL!r} is scripted twice: here and in 'steps'")
        scripts[name] = _steps(steps, at, fail)
    fallback = data.get("fallback", "echo")
    played = None if fallback == "echo" else _step(fallback, "fallback", fail)
    return MockScript(scripts, played, where)


def _steps(
    value: Any, at: str, fail: Callable[[str, str], MockScriptError]
) -> tuple[MockStep, ...]:
    if not isinstance(value, list):
        raise fail(at, f"expected a list of steps, got {_kind(value)}")
    return tuple(_step(step, f"{at}[{index}]", fail) for index, step in enumerate(value))


def _step(value: Any, at: str, fail: Callable[[str, str], MockScriptError]) -> MockStep:
    """One step: a reply text, or an object of `STEP_KEYS`."""
    if isinstance(value, str):
        return MockStep(value)
    if not isinstance(value, dict):
        raise fail(at, f"a step is a reply text or an object, got {_kind(value)}")
    unknown = sorted(set(value) - set(STEP_KEYS))
    if unknown:
        raise fail(
            at,
            f"unknown key {unknown[0]!r} (a step has one of 'reply', 'tool_call', 'error', "
            "and may have 'delay_ms')",
        )
    delay = value.get("delay_ms", 0)
    if isinstance(delay, bool) or not isinstance(delay, int) or not 0 <= delay <= MAX_DELAY_MS:
        raise fail(at, f"'delay_ms' must be an integer from 0 to {MAX_DELAY_MS}, got {delay!r}")
    reply = value.get("reply", "")
    if not isinstance(reply, str):
        raise fail(at, f"'reply' must be a string, got {_kind(reply)}")
    if "error" in value:
        error = value["error"]
        if not isinstance(error, str) or not error:
            raise fail(at, f"'error' must be a non-empty string (its message), got {error!r}")
        if "reply" in value or "tool_call" in value:
            raise fail(at, "an 'error' step fails the generation: it has no 'reply' or 'tool_call'")
        return MockStep(error=error, delay_s=delay / 1000)
    if "tool_call" in value:
        calls = value["tool_call"]
        listed = calls if isinstance(calls, list) else [calls]
        if not listed:
            raise fail(at, "'tool_call' is an empty list: give at least one call")
        where = [f"{at}.tool_call[{i}]" for i in range(len(listed))]
        if not isinstance(calls, list):
            where = [f"{at}.tool_call"]
        written = [_call(call, spot, fail) for call, spot in zip(listed, where, strict=True)]
        return MockStep(" ".join([reply, *written] if reply else written), delay_s=delay / 1000)
    if "reply" not in value:
        raise fail(at, "a step needs one of 'reply', 'tool_call' or 'error'")
    return MockStep(reply, delay_s=delay / 1000)


def _call(value: Any, at: str, fail: Callable[[str, str], MockScriptError]) -> str:
    """A call `{"name": ..., "arguments": {...}}`, written in the mock's (generic) markup."""
    if not isinstance(value, dict):
        raise fail(at, f'expected {{"name": ..., "arguments": {{...}}}}, got {_kind(value)}')
    unknown = sorted(set(value) - {"name", "arguments"})
    if unknown:
        raise fail(at, f"unknown key {unknown[0]!r} (a call has 'name' and 'arguments')")
    name = value.get("name")
    if not isinstance(name, str) or not name:
        raise fail(at, f"'name' must be the tool's name, a non-empty string, got {name!r}")
    arguments = value.get("arguments", {})
    if not isinstance(arguments, dict):
        raise fail(at, f"'arguments' must be an object, got {_kind(arguments)}")
    return call_markup(ToolCallFamily.GENERIC).write(name, arguments)


def _kind(value: Any) -> str:
    """The JSON name of `value`'s type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"
