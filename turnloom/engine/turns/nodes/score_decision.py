"""The ToolCall node's `score` decision: pick a tool (or none) and its arguments by likelihood.

A model too small to write a good call (the embedded Gemma 3 270M calls a tool for "Hello
there!" when the grammar makes it, and never when it does not) still ranks texts sensibly. So
instead of generating, this asks the backend how likely each option is to follow a short
few-shot prompt (`ModelBackend.score_choices`):

1. **Which tool.** The options are the tools' names spelled as words ("open door") and
   "talk" for no tool, after a prompt of examples only: per tool, its description said by the
   player (that tool) and two remarks that mention its object without asking for it (talk),
   with plain talk around; all of it twice, the tools in their order and then reversed. Raw
   likelihoods mostly measure the model's taste for a label, so they are calibrated against
   content-free lines ("N/A", "", "[MASK]": Zhao et al., *Calibrate Before Use*, 2021): each
   option's probability is divided by its average probability on those, computed once per
   backend and tool set and cached.
2. **Its arguments**, one by one in a `name(arg=value, ...)` call the prompt continues:
   strings are spans of the player's line (one to four words, not across punctuation, not
   starting with the line's first word, not starting or ending with a filler word or a word
   of the action's label, nor holding a number when the tool has a numeric argument),
   followed greedily along the model's likeliest tokens;
   booleans and enums (a string with an `enum`, or whose description lists its values as
   ``one of: a, b, c``)
   are scored and calibrated like the tools; integers and numbers are chosen among those the
   line spells (digits or number words), or are 1 if it spells none.

The outcome is what the parser would have returned (`ParseOutcome`), so everything after it
(events, call ids, dispositions, pauses) is the ToolCall node's one shared path. Only the
current line is read, never earlier turns.
"""

from __future__ import annotations

import json
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from ...graph.params import ToolDefinition, ToolParamDefinition
from ...inference.base import ModelBackend
from ...tools.parsing import ParsedCall, ParseOutcome

__all__ = ["DECISIONS", "decide_by_score", "resolve_decision", "score_unsupported"]

#: The values of `ToolCallParams.decision` ('' = the model's default).
DECISIONS = ("", "generate", "score")


def _words(text: str) -> list[str]:
    return text.split()


#: Types the score decision can fill; a tool with another (array, object) makes it generate.
_SCORABLE_TYPES = frozenset({"string", "boolean", "integer", "number"})
#: "Calibrate before use": lines that carry no content, whose scores show the model's bias.
_CONTENT_FREE = ("N/A", "", "[MASK]")
_NO_TOOL_EXAMPLES = ("Hello there, how are you?", "Tell me about this town.", "What a nice day.")
#: Remarks that mention a tool's object without asking for anything. Statements, not
#: questions: a tool that looks something up is asked for by a question ("Do you sell swords?").
_REMARKS = (
    "I once saw a {} like that.",
    "My uncle told me about a {}.",
    "The {} here is old.",
    "I dreamt about a {} last night.",
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_FILLER = frozenset(
    _words(
        "a an the to of for in on at by with from and or but me my your our us you i it its is "
        "are be this that these those please can could would will let let's lets just now here "
        "there some any do does how many much what which who where when why if whether than then "
        "so as not no into onto"
    )
)
_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
}
_WORD = re.compile(r"[\w'-]+")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
_ENUM = re.compile(r"one of:?\s*([^.;]+)", re.IGNORECASE)
#: Per backend (each model has its own biases), the content-free scores of the latest prompts.
_CALIBRATIONS: weakref.WeakKeyDictionary[ModelBackend, OrderedDict[str, list[float]]] = (
    weakref.WeakKeyDictionary()
)
_CALIBRATIONS_KEPT = 256
_CALIBRATIONS_LOCK = threading.Lock()  # engines on several threads may share a backend


def score_unsupported(backend: ModelBackend, tools: Sequence[ToolDefinition]) -> str | None:
    """Why the score decision cannot run for these tools on this backend, or None."""
    reason = backend.scoring_error()
    if reason:
        return reason
    for tool in tools:
        for param in tool.parameters:
            if param.type not in _SCORABLE_TYPES:
                return f"tool '{tool.name}' takes an {param.type} ('{param.name}')"
    return None


def resolve_decision(
    requested: str, backend: ModelBackend, tools: Sequence[ToolDefinition]
) -> tuple[str, str | None]:
    """The decision a node runs ('generate' or 'score') and, if it asked for `score` (itself
    or by the model's default) but cannot have it, why it generates instead."""
    wanted = requested or backend.default_tool_decision()
    if wanted != "score":
        return "generate", None
    reason = score_unsupported(backend, tools)
    return ("generate", reason) if reason else ("score", None)


def enum_values(param: ToolParamDefinition) -> tuple[str, ...]:
    """A string parameter's allowed values: its `enum`, else those its description lists as
    ``one of: a, b, c`` (else none)."""
    if param.type != "string":
        return ()
    if param.enum:
        return tuple(param.enum)
    found = _ENUM.search(param.description)
    if not found:
        return ()
    parts = re.split(r",|\bor\b|\|", found.group(1))
    return tuple(dict.fromkeys(v for p in parts if (v := p.strip().strip("'\"`").strip())))


async def decide_by_score(
    backend: ModelBackend, tools: Sequence[ToolDefinition], line: str, agent_id: int = 0
) -> ParseOutcome:
    """The call (or no call) `line` asks for among `tools`, as a parse of generated text."""
    labels = _labels(tools)
    header = _header(tools, labels)
    choices = [f" {label}\n" for label in labels]
    chosen = await _calibrated_choice(backend, header, "\nAction:", choices, line, agent_id)
    if chosen == len(tools):
        return ParseOutcome((), "", ())
    tool = tools[chosen]
    arguments: dict[str, object] = {}
    call_text = f"\nAction: {labels[chosen]}\nCall: {tool.name}("
    # Words that name the action are not its arguments ("open" in "open the iron gate"), and a
    # number goes to a numeric argument rather than into a string.
    numeric = any(p.type in ("integer", "number") for p in tool.parameters)
    action_words = {w.lower() for w in _WORD.findall(labels[chosen])}
    # Nor are the arguments' own names ("gold" is not the item of "12 gold for a dagger").
    names = [w.lower() for p in tool.parameters for w in _WORD.findall(_CAMEL.sub(" ", p.name))]
    argument_words = {form for w in names for form in (w, w + "s", *w.split("_"))}
    for i, param in enumerate(tool.parameters):
        end = ", " if i + 1 < len(tool.parameters) else ")"
        avoid = action_words | argument_words
        fill = _Fill(header, call_text, end, line, frozenset(avoid), numeric)
        arguments[param.name] = await _fill(backend, fill, param, agent_id)
        call_text += f"{param.name}={json.dumps(arguments[param.name])}{end}"
    raw = json.dumps({"name": tool.name, "arguments": arguments})
    return ParseOutcome((ParsedCall(tool.name, arguments, raw),), "", ())


def _labels(tools: Sequence[ToolDefinition]) -> list[str]:
    """What the prompt calls each tool, then the no-tool option (always last).

    Names are spelled as words ("open_door" -> "open door"): a small model knows words far
    better than identifiers. "talk" names the no-tool option, which the prompt's examples of
    plain talk then match better than an abstract "none".
    """
    words = [" ".join(_CAMEL.sub(" ", tool.name).replace("_", " ").split()) for tool in tools]
    if len({w.lower() for w in words}) < len(words) or not all(words):
        words = [tool.name for tool in tools]
    taken = {w.lower() for w in words}
    none = next(label for label in ("talk", "just talk", "no tool") if label not in taken)
    return [*words, none]


def _header(tools: Sequence[ToolDefinition], labels: list[str]) -> str:
    """The few-shot examples, twice: with the tools in their declared order, then reversed.

    A small model favours the label of the examples nearest the line (recency bias), which
    calibration does not cancel; with both orders every tool is once near the line.
    """
    ordered = _examples(tools, labels)
    if len(tools) < 2:
        return ordered
    return ordered + _examples(list(reversed(tools)), [*reversed(labels[:-1]), labels[-1]])


def _examples(tools: Sequence[ToolDefinition], labels: list[str]) -> str:
    """Per tool, its description said by the player (that tool) and two remarks about its
    object (no tool, so words alone do not make a call); plain talk around."""
    none = labels[-1]
    examples = [(_NO_TOOL_EXAMPLES[0], none)]
    for i, (tool, label) in enumerate(zip(tools, labels, strict=False)):
        said = _one_line(tool.description) or label
        topic = _topic(tool, label)
        examples.append((said, label))
        for k in (0, 2):
            remark = _REMARKS[(i + k) % len(_REMARKS)].format(topic)
            examples.append((remark, none))
    examples += [(said, none) for said in _NO_TOOL_EXAMPLES[1:]]
    return "".join(f"Player: {said}\nAction: {action}\n" for said, action in examples)


def _topic(tool: ToolDefinition, label: str) -> str:
    """The last notable word of a tool's description (its object, usually), else its label."""
    notable = [
        w for w in _WORD.findall(tool.description) if len(w) >= 4 and w.lower() not in _FILLER
    ]
    return (notable[-1] if notable else label.split()[-1]).lower()


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _prompt(header: str, line: str, tail: str) -> str:
    return f"{header}Player: {_one_line(line)}{tail}"


async def _calibrated_choice(
    backend: ModelBackend,
    header: str,
    tail: str,
    choices: list[str],
    line: str,
    agent_id: int,
) -> int:
    """The index of the choice likeliest after `line` relative to after content-free lines."""
    key = json.dumps([header, tail, choices])
    with _CALIBRATIONS_LOCK:
        cache = _CALIBRATIONS.setdefault(backend, OrderedDict())
        bias = cache.get(key)
        if bias is not None:
            cache.move_to_end(key)
    if bias is None:
        totals = [0.0] * len(choices)
        for empty in _CONTENT_FREE:
            scores = await backend.score_choices(
                _prompt(header, empty, tail), choices, agent_id=agent_id
            )
            for i, p in enumerate(_normalized(scores)):
                totals[i] += p / len(_CONTENT_FREE)
        bias = [math.log(max(p, 1e-12)) for p in totals]
        with _CALIBRATIONS_LOCK:
            cache[key] = bias
            while len(cache) > _CALIBRATIONS_KEPT:
                cache.popitem(last=False)
    scores = await backend.score_choices(_prompt(header, line, tail), choices, agent_id=agent_id)
    calibrated = [s - b for s, b in zip(scores, bias, strict=True)]
    return max(range(len(choices)), key=calibrated.__getitem__)


def _normalized(logps: list[float]) -> list[float]:
    top = max(logps)
    weights = [math.exp(lp - top) for lp in logps]
    total = sum(weights)
    return [w / total for w in weights]


@dataclass(frozen=True, slots=True)
class _Fill:
    """Where an argument is filled: the prompt's parts, what follows the value, the line."""

    header: str
    call_text: str
    end: str
    line: str
    #: Words a string value should not start or end with.
    avoid: frozenset[str]
    #: Whether numbers stay out of string values (the tool has a numeric argument).
    numeric: bool


async def _fill(
    backend: ModelBackend, fill: _Fill, param: ToolParamDefinition, agent_id: int
) -> object:
    """One argument's value, by the rule for its declared type (module docstring)."""
    header, end, line = fill.header, fill.end, fill.line
    opened = f"{fill.call_text}{param.name}="
    values: Sequence[object]
    if param.type == "boolean":
        values = (True, False)
        choices = [f"{json.dumps(v)}{end}" for v in values]
        chosen = await _calibrated_choice(backend, header, opened, choices, line, agent_id)
        return values[chosen]
    enum = enum_values(param)
    if enum:
        choices = [f"{json.dumps(v)}{end}" for v in enum]
        chosen = await _calibrated_choice(backend, header, opened, choices, line, agent_id)
        return enum[chosen]
    if param.type == "string":
        values = _spans(line, fill.avoid, fill.numeric)
        if len(values) < 2:
            return values[0] if values else ""
        choices = [f"{json.dumps(v)[1:]}{end}" for v in values]
        prompt = _prompt(header, line, opened + '"')
        scores = await backend.score_choices(prompt, choices, greedy=True, agent_id=agent_id)
    else:
        values = _numbers(line, integer=param.type == "integer")
        if len(values) < 2:
            return values[0]
        choices = [f"{json.dumps(v)}{end}" for v in values]
        prompt = _prompt(header, line, opened)
        scores = await backend.score_choices(prompt, choices, agent_id=agent_id)
    return values[max(range(len(values)), key=scores.__getitem__)]


def _spans(line: str, avoid: frozenset[str], numeric: bool) -> list[str]:
    """Runs of one to four words of `line` (as written, not across punctuation) that neither
    start with its first word nor start or end with filler or an `avoid` word, nor (if
    `numeric`) hold a number; any runs if none is left."""

    def edge(word: str) -> bool:
        return word in _FILLER or word in avoid or (numeric and _is_number(word))

    words = list(_WORD.finditer(line))
    spans: dict[str, None] = {}
    for lenient in (False, True):
        for i, first in enumerate(words):
            for j in range(i, min(i + 4, len(words))):
                if j > i and line[words[j - 1].end() : words[j].start()].strip():
                    break  # a value does not run across punctuation
                inner = [w.group().lower() for w in words[i : j + 1]]
                # A number inside is as wrong as one at an edge ("me 2 torches").
                counted = numeric and any(_is_number(w) for w in inner)
                # A request's first word is its verb ("Hand me two torches"), not its object.
                if lenient or not (i == 0 or edge(inner[0]) or edge(inner[-1]) or counted):
                    spans[line[first.start() : words[j].end()]] = None
        if spans:
            break
    return list(spans)


def _is_number(word: str) -> bool:
    return word in _NUMBER_WORDS or _NUMBER.fullmatch(word) is not None


def _numbers(line: str, *, integer: bool) -> list[object]:
    """The numbers `line` spells (digits, number words) without repeats, or [1] if none: a
    count the player does not say is one ("a dagger"), and one the player says is no other."""
    found: list[object] = []
    for match in _NUMBER.finditer(line):
        value = float(match.group())
        found.append(int(value) if integer or value.is_integer() else value)
    found += [_NUMBER_WORDS[w.lower()] for w in _WORD.findall(line) if w.lower() in _NUMBER_WORDS]
    return list(dict.fromkeys(found)) or [1]
