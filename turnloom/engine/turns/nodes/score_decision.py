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
   line spells (digits, number words, "a dozen"; for a count of days, "a week" or "two
   weeks"), else the value an earlier call gave, else 1. A message or an errand (a string
   whose name or description says so) is a longer span, the clause after "that" or
   "saying" first, and never the words another argument of the call took; what a number
   counts comes right after it ("three bandages"); a string may also keep an earlier call's
   value. A count the line does not say at all (no number, no "a") is listed as unread
   (`ScoreDecision.unread`, the call event's `unread_arguments`).

The arguments are scored after the recent dialog (the last `DIALOG_TURNS` exchanges within
`DIALOG_CHARS`, each line with the call it made, as the examples are written), calibrated
after it too; the tool is chosen on the line alone. How close each choice was (its margin
over the runner-up, in nats) is in `ScoreDecision.diagnostics`, the node's diagnostics
``score``. The outcome is what the parser would have returned (`ParseOutcome`), so
everything after it (events, call ids, dispositions, pauses) is the ToolCall node's one
shared path. The values an argument is chosen among are listed by `score_values`; this module
is longer than 400 lines because the tool and every argument type are scored through one
prompt, one calibration cache and one record of the call so far, which split apart would
have to be passed around whole.
"""

from __future__ import annotations

import json
import math
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ...graph.params import ToolDefinition, ToolParamDefinition
from ...inference.base import ModelBackend
from ...tools.parsing import ParsedCall, ParseOutcome
from ..dialog.projection import Interaction
from .score_values import (
    FILLER,
    SENTENCE_WORDS,
    WORD,
    after_numbers,
    clauses,
    earlier_values,
    enum_values,
    is_count,
    numbers,
    spans,
)

__all__ = [
    "DECISIONS",
    "ScoreDecision",
    "decide_by_score",
    "enum_values",
    "resolve_decision",
    "score_unsupported",
]

#: The values of `ToolCallParams.decision` ('' = the model's default).
DECISIONS = ("", "generate", "score")


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
#: Per backend (each model has its own biases), the content-free scores of the latest prompts.
_CALIBRATIONS: weakref.WeakKeyDictionary[ModelBackend, OrderedDict[str, list[float]]] = (
    weakref.WeakKeyDictionary()
)
_CALIBRATIONS_KEPT = 256
_CALIBRATIONS_LOCK = threading.Lock()  # engines on several threads may share a backend
#: How much of the dialog the decision reads: the last few exchanges, within a budget.
DIALOG_TURNS = 3
DIALOG_CHARS = 600


@dataclass(frozen=True, slots=True)
class ScoreDecision:
    """What the score decision chose: the call or no call, as a parse would give it, and how
    close it was (the node's diagnostics ``score``)."""

    outcome: ParseOutcome
    #: ``margin``: the chosen option's calibrated log-probability over the runner-up's, in
    #: nats (small: a close call); ``tool``: the best tool; ``arguments``: each scored
    #: argument's margin.
    diagnostics: dict[str, Any] = field(default_factory=dict)
    #: The arguments the line (and the dialog) did not give, whose values are defaults.
    unread: tuple[str, ...] = ()


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


async def decide_by_score(
    backend: ModelBackend,
    tools: Sequence[ToolDefinition],
    line: str,
    agent_id: int = 0,
    *,
    dialog: Sequence[Interaction] = (),
) -> ScoreDecision:
    """The call (or no call) `line` asks for among `tools`, after `dialog`, as a parse of
    generated text, with its margins."""
    labels = _labels(tools)
    header = _header(tools, labels)
    recent = _recent_dialog(dialog, tools, labels)
    choices = [f" {label}\n" for label in labels]
    # The tool is chosen on the line alone: after a dialog, even calibrated after it, the
    # model leans to the last call shown ("Thank you, goodbye!" checked the stock again).
    chosen, margin = await _calibrated_choice(backend, header, "\nAction:", choices, line, agent_id)
    diagnostics: dict[str, Any] = {"margin": round(margin, 3)}
    if chosen == len(tools):
        return ScoreDecision(ParseOutcome((), "", ()), diagnostics)
    tool = tools[chosen]
    diagnostics["tool"] = tool.name
    earlier = earlier_values(tool, dialog, DIALOG_TURNS)
    arguments: dict[str, object] = {}
    margins: dict[str, float] = {}
    unread: list[str] = []
    taken: set[str] = set()
    call_text = f"\nAction: {labels[chosen]}\nCall: {tool.name}("
    # Words that name the action are not its arguments ("open" in "open the iron gate"), and a
    # number goes to a numeric argument rather than into a string.
    numeric = any(p.type in ("integer", "number") for p in tool.parameters)
    action_words = {w.lower() for w in WORD.findall(labels[chosen])}
    # Nor are the arguments' own names ("gold" is not the item of "12 gold for a dagger").
    names = [w.lower() for p in tool.parameters for w in WORD.findall(_CAMEL.sub(" ", p.name))]
    argument_words = {form for w in names for form in (w, w + "s", *w.split("_"))}
    for i, param in enumerate(tool.parameters):
        end = ", " if i + 1 < len(tool.parameters) else ")"
        avoid = action_words | argument_words
        fill = _Fill(
            header, call_text, end, line, frozenset(avoid), numeric, recent,
            tuple(earlier.get(param.name, ())), frozenset(taken),
        )  # fmt: skip
        value, read = await _fill(backend, fill, param, agent_id)
        if isinstance(value, str) and not enum_values(param):
            taken |= {w.lower() for w in WORD.findall(value)}
        arguments[param.name] = value
        if read is None:
            unread.append(param.name)
        elif not math.isnan(read):
            margins[param.name] = round(read, 3)
        call_text += f"{param.name}={json.dumps(value)}{end}"
    diagnostics["arguments"] = margins
    raw = json.dumps({"name": tool.name, "arguments": arguments})
    outcome = ParseOutcome((ParsedCall(tool.name, arguments, raw),), "", ())
    return ScoreDecision(outcome, diagnostics, tuple(unread))


def _recent_dialog(
    dialog: Sequence[Interaction], tools: Sequence[ToolDefinition], labels: list[str]
) -> str:
    """The last exchanges, as the prompt writes its own: each line, the action it took and the
    call it made (or "talk"), oldest first, within `DIALOG_TURNS` and `DIALOG_CHARS`."""
    label_of = {tool.name: label for tool, label in zip(tools, labels, strict=False)}
    parts: list[str] = []
    used = 0
    for past in reversed(dialog[-DIALOG_TURNS:]):
        text = f"Player: {_one_line(past.user_message)}\n"
        acted = False
        for message in past.messages:
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                label = label_of.get(str(function.get("name")))
                if label is None:
                    continue
                acted = True
                given = function.get("arguments") or {}
                shown = ", ".join(f"{k}={json.dumps(v)}" for k, v in given.items())
                text += f"Action: {label}\nCall: {function['name']}({shown})\n"
        if not acted:
            text += f"Action: {labels[-1]}\n"
        if used + len(text) > DIALOG_CHARS:
            break
        parts.append(text)
        used += len(text)
    return "".join(reversed(parts))


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
    notable = [w for w in WORD.findall(tool.description) if len(w) >= 4 and w.lower() not in FILLER]
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
    recent: str = "",
) -> tuple[int, float]:
    """The index of the choice likeliest after `line` (and the `recent` dialog before it)
    relative to after content-free lines, and by how much it beats the runner-up (nats)."""
    # Calibrated after the same dialog: what the last call shows is likelier on any line,
    # and the content-free lines after it see that too.
    key = json.dumps([header + recent, tail, choices])
    with _CALIBRATIONS_LOCK:
        cache = _CALIBRATIONS.setdefault(backend, OrderedDict())
        bias = cache.get(key)
        if bias is not None:
            cache.move_to_end(key)
    if bias is None:
        totals = [0.0] * len(choices)
        for empty in _CONTENT_FREE:
            scores = await backend.score_choices(
                _prompt(header + recent, empty, tail), choices, agent_id=agent_id
            )
            for i, p in enumerate(_normalized(scores)):
                totals[i] += p / len(_CONTENT_FREE)
        bias = [math.log(max(p, 1e-12)) for p in totals]
        with _CALIBRATIONS_LOCK:
            cache[key] = bias
            while len(cache) > _CALIBRATIONS_KEPT:
                cache.popitem(last=False)
    prompt = _prompt(header + recent, line, tail)
    scores = await backend.score_choices(prompt, choices, agent_id=agent_id)
    calibrated = [s - b for s, b in zip(scores, bias, strict=True)]
    return _best(calibrated)


def _best(scores: list[float]) -> tuple[int, float]:
    """The index of the highest score and its lead over the next (inf if it is alone)."""
    order = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
    if len(order) < 2:
        return order[0], math.inf
    return order[0], scores[order[0]] - scores[order[1]]


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
    #: The recent dialog, between the header and the line.
    recent: str = ""
    #: The values earlier calls of the tool gave this argument, oldest first.
    earlier: tuple[object, ...] = ()
    #: Words the call's earlier string arguments took (a recipient is not the message).
    taken: frozenset[str] = frozenset()


async def _fill(
    backend: ModelBackend, fill: _Fill, param: ToolParamDefinition, agent_id: int
) -> tuple[object, float | None]:
    """One argument's value, by the rule for its declared type (module docstring), and its
    margin over the runner-up (nan: nothing to choose between; None: not read at all)."""
    header, end, line, recent = fill.header, fill.end, fill.line, fill.recent
    opened = f"{fill.call_text}{param.name}="
    values: Sequence[object]
    if param.type == "boolean":
        values = (True, False)
        choices = [f"{json.dumps(v)}{end}" for v in values]
        chosen, margin = await _calibrated_choice(
            backend, header, opened, choices, line, agent_id, recent
        )
        return values[chosen], margin
    enum = enum_values(param)
    if enum:
        choices = [f"{json.dumps(v)}{end}" for v in enum]
        chosen, margin = await _calibrated_choice(
            backend, header, opened, choices, line, agent_id, recent
        )
        return enum[chosen], margin
    if param.type == "string":
        values = _string_values(fill, param)
        if len(values) < 2:
            return (values[0], math.nan) if values else ("", None)
        choices = [f"{json.dumps(v)[1:]}{end}" for v in values]
        prompt = _prompt(header + recent, line, opened + '"')
        scores = await backend.score_choices(prompt, choices, greedy=True, agent_id=agent_id)
    else:
        values = numbers(line, param)
        if not values:  # the line says no number: an earlier call's, else one ("a dagger")
            said = [v for v in fill.earlier if is_count(v)]
            if said:
                return said[-1], math.nan
            one = any(w.lower() in ("a", "an") for w in WORD.findall(line))
            return 1, (math.nan if one else None)
        if len(values) < 2:
            return values[0], math.nan
        choices = [f"{json.dumps(v)}{end}" for v in values]
        prompt = _prompt(header + recent, line, opened)
        scores = await backend.score_choices(prompt, choices, agent_id=agent_id)
    chosen, margin = _best(scores)
    return values[chosen], margin


def _string_values(fill: _Fill, param: ToolParamDefinition) -> list[str]:
    """What a string argument is chosen among: spans of the line (longer for a message or an
    errand, with the clause a message verb introduces first), not the words another argument
    of the call took, then the values earlier calls gave it."""
    sentence = bool(SENTENCE_WORDS & set(WORD.findall(f"{param.name} {param.description}".lower())))
    found = spans(fill.line, fill.avoid, fill.numeric, longest=8 if sentence else 4)
    if sentence:
        found = [*clauses(fill.line), *found]
    elif fill.numeric:  # what a number counts comes right after it ("three bandages")
        counted = after_numbers(fill.line)
        found = [v for v in found if any(fill.line.startswith(v, at) for at in counted)] or found
    if fill.taken:
        free = [v for v in found if not fill.taken & {w.lower() for w in WORD.findall(v)}]
        found = free or found
    return list(dict.fromkeys([*found, *(v for v in fill.earlier if isinstance(v, str) and v)]))
