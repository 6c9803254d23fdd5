"""Choosing among texts by likelihood with the model's bias taken out: the primitive the
`score` decision's tool and argument choices share (`decision`, `arguments`); and how urgent
a line sounds, for a boolean argument of urgency.

Raw likelihoods mostly measure the model's taste for a label, so each choice's score is taken
relative to its average probability after content-free lines ("N/A", "", "[MASK]": Zhao et
al., *Calibrate Before Use*, 2021), computed once per backend and prompt and cached.

Where a content-free line shows nothing useful, a boundary measured between labelled lines
takes the bias out instead: how urgent a line sounds (`urgency_margin`), evidence for a
boolean argument that says so ("true if it cannot wait"). Asked as a call's argument
(``urgent=true`` or ``false``), a small model hardly reads the line: "No hurry, but tell the
captain" and "Quick, tell the captain" score alike. It does know how a line is answered,
though: "At once!" after a cry for help, "Later, then." after "when you have a moment". So
the line is scored in a short dialog of examples (`URGENCY_EXAMPLES`), between those two
answers, past a boundary measured once per backend, as the request step's is
(`request`): halfway between the median margins of labelled lines of each kind
(`URGENCY_CALIBRATION`, other places than the examples: a farm, a village, a keep).

A line that says outright it is not urgent ("No hurry, but...", "there's no rush") is read by
its words (`says_unhurried`): the model answers "At once!" to the word "hurry", negated or not.
So is a line that leaves the time to the one asked ("When you get a chance, send word to my
sister", "whenever you can"): the model reads "Send word" as urgent about as often as not.
And a line that says outright it cannot wait ("right now", "at once", "it can't wait", "Hurry!")
is urgent by its words (`says_urgent`): the model's answer to a long line with a cry in it
("Actually it can't wait \u2014 the cask's going at noon. Cry it right now.") follows the rest of
it.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence

from ....graph.params import ToolParamDefinition
from ....inference.base import ModelBackend
from .reading.values import WORD, one_line, words

__all__ = [
    "URGENCY_CALIBRATION",
    "URGENCY_EXAMPLES",
    "URGENCY_WEIGHT",
    "best",
    "calibrated_scores",
    "is_urgency",
    "prompt",
    "says_unhurried",
    "says_urgent",
    "urgency_margin",
]

#: "Calibrate before use": lines that carry no content, whose scores show the model's bias.
_CONTENT_FREE = ("N/A", "", "[MASK]")
#: Per backend (each model has its own biases), the content-free scores of the latest prompts.
_CALIBRATIONS: weakref.WeakKeyDictionary[ModelBackend, OrderedDict[str, list[float]]] = (
    weakref.WeakKeyDictionary()
)
_CALIBRATIONS_KEPT = 256
_CALIBRATIONS_LOCK = threading.Lock()  # engines on several threads may share a backend


def prompt(header: str, line: str, tail: str) -> str:
    """A scoring prompt: the `header`'s examples, the player's `line`, then `tail`."""
    return f"{header}Player: {one_line(line)}{tail}"


async def calibrated_scores(
    backend: ModelBackend,
    header: str,
    tail: str,
    choices: Sequence[str],
    line: str,
    agent_id: int,
    *,
    calibrate_on: str | None = None,
) -> list[float]:
    """Each choice's log-probability after `header` and `line` over its average after
    content-free lines, after `calibrate_on` (default: the same `header`)."""
    calibrate_on = header if calibrate_on is None else calibrate_on
    key = json.dumps([calibrate_on, tail, list(choices)])
    with _CALIBRATIONS_LOCK:
        cache = _CALIBRATIONS.setdefault(backend, OrderedDict())
        bias = cache.get(key)
        if bias is not None:
            cache.move_to_end(key)
    if bias is None:
        totals = [0.0] * len(choices)
        for empty in _CONTENT_FREE:
            scores = await backend.score_choices(
                prompt(calibrate_on, empty, tail), choices, agent_id=agent_id
            )
            for i, p in enumerate(_normalized(scores)):
                totals[i] += p / len(_CONTENT_FREE)
        bias = [math.log(max(p, 1e-12)) for p in totals]
        with _CALIBRATIONS_LOCK:
            cache[key] = bias
            while len(cache) > _CALIBRATIONS_KEPT:
                cache.popitem(last=False)
    scores = await backend.score_choices(prompt(header, line, tail), choices, agent_id=agent_id)
    return [s - b for s, b in zip(scores, bias, strict=True)]


def best(scores: Sequence[float]) -> tuple[int, float]:
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


#: A short dialog: urgent lines, unhurried ones and a plain one, each with its answer; a
#: message to pass on and an errand of each kind, so that neither kind of request leans.
URGENCY_EXAMPLES = """Player: Fetch the guard, a thief took my bag!
NPC: At once!
Player: When you have a moment, tell the cook the soup is cold.
NPC: Later, then.
Player: Bake me three loaves of rye.
NPC: Coming up.
Player: Quick, tell the captain a storm is coming!
NPC: At once!
Player: Sometime tomorrow, could you fetch more firewood?
NPC: Later, then.
"""
_URGENCY_CHOICES = (" At once!", " Later, then.")

_URGENT = """Quick, the stable is on fire!
Get the doctor, my father fell down the stairs!
Hurry, bar the door, the wolves are coming!
Send for help at once, the bridge collapsed!
Call the watch, a man is lying hurt in the street!
Right now, please, the baby has a fever!
Fetch water, fast, the barn is burning!
Bring the guards immediately, there are bandits at the gate!"""

_UNHURRIED = """When you get a chance, could you look at my cart wheel?
No need to hurry, but the shelf in the hall is wobbly.
Some time this month, could you clean the chimney?
Whenever it suits you, tell the baker I'd like a cake for Sunday.
If you're passing by later, let the tailor know my coat is ready.
Tomorrow or the day after, could someone fix the fence?
At your leisure, send the carpenter round about the door.
There's no rush, but the well bucket has a hole."""

#: Lines of each kind that place the urgency boundary: (line, is urgent).
URGENCY_CALIBRATION: tuple[tuple[str, bool], ...] = (
    *((line, True) for line in _URGENT.splitlines()),
    *((line, False) for line in _UNHURRIED.splitlines()),
)
#: Words of a boolean's name or description that make it a flag of urgency.
_URGENCY_WORDS = frozenset(
    words("urgent urgency urgently emergency hurry rush pressing immediately quickly")
)
#: Waiting said as what urgency is not ("true if it cannot wait"), or "at once"; not "wait
#: for a reply", nor "once they are across".
_CANNOT_WAIT = re.compile(
    r"\b(?:cannot|can't|can not|won't|must not)\s+wait\b|\bat\s+once\b", re.IGNORECASE
)
#: A negation, up to two words, then a word of hurry, in one run of words: "no hurry", "no need
#: to rush", "isn't urgent", "don't rush" (not "No, hurry!"). Not "wait" or "once": "it can't
#: wait" is urgent.
_NOT_URGENT = re.compile(
    r"(?:\bno|\bnot|n't|\bnever|\bwithout)\s+(?:[\w']+\s+){0,2}?"
    r"(?:hurry|rush|urgent|urgency|urgently|emergency|pressing)\b",
    re.IGNORECASE,
)
#: Nats a flag of urgency's true gains per nat of the line's urgency margin: the model's
#: answer outweighs its reading of the call, which hardly moves with the line.
URGENCY_WEIGHT = 2.0
#: Per backend, the raw margin halfway between urgent and unhurried lines.
_URGENCY_BOUNDARY: weakref.WeakKeyDictionary[ModelBackend, float] = weakref.WeakKeyDictionary()
_URGENCY_BOUNDARY_LOCK = threading.Lock()  # engines on several threads may share a backend


def is_urgency(param: ToolParamDefinition) -> bool:
    """Whether a boolean argument says how urgent the request is ("urgent", "true if it
    cannot wait", "true if it is an emergency"; not "true if the runner should wait for a
    reply")."""
    text = f"{param.name.replace('_', ' ')} {param.description}".lower()
    urgent = bool(_URGENCY_WORDS & set(WORD.findall(text))) or bool(_CANNOT_WAIT.search(text))
    return param.type == "boolean" and urgent


#: Words that leave the time to the one asked: "when you get a chance", "whenever you can",
#: "when you have a moment", "at your leisure", "sometime this week", "whenever they're
#: ready" (not "as soon as you can").
_AT_LEISURE = re.compile(
    r"\bwhen(?:ever)? (?:you|it) (?:get a chance|have a (?:moment|minute|chance)"
    r"|can(?![\w'])|like\b|are free|'re free|suits you)"
    r"|\bat your (?:leisure|convenience)\b|\bin your own time\b|\bsome ?time\b"
    r"|\bwhenever (?:it's|it is|they're|they are) (?:ready|done)\b",
    re.IGNORECASE,
)


def says_unhurried(line: str) -> bool:
    """Whether `line` says outright that it is not urgent ("No hurry, but the roof leaks") or
    leaves the time to the one asked ("When you get a chance, send word to my sister")."""
    said = line.replace("\u2019", "'")
    return _NOT_URGENT.search(said) is not None or _AT_LEISURE.search(said) is not None


#: Words that say a request cannot wait: "right now", "right away", "at once", "immediately",
#: "it can't wait" (not "can't wait to see her"), "as soon as you can", "Hurry!", "quick" (not
#: "a quick word"), "urgent", "an emergency", "go now", "now!".
_CANNOT_WAIT_SAID = re.compile(
    r"\b(?:right\s+(?:now|away)|at\s+once|immediately|straight\s*away|this\s+(?:instant|minute)"
    r"|without\s+delay|(?:can't|cannot|can\s+not|won't)\s+wait(?!\s+(?:to|for|till|until)\b)"
    r"|as\s+soon\s+as\s+(?:you\s+)?(?:can|possible)|asap|hurry|quick(?:ly)?(?!\s+(?:question|word|look))"
    r"|urgent(?:ly)?|emergency|go\s+now|now\s*!)",
    re.IGNORECASE,
)


def says_urgent(line: str) -> bool:
    """Whether `line` says outright that it cannot wait ("Cry it right now", "it can't wait",
    "quick!") and not that it can (`says_unhurried`: "No hurry")."""
    said = line.replace("\u2019", "'")
    return _CANNOT_WAIT_SAID.search(said) is not None and not says_unhurried(said)


async def urgency_margin(backend: ModelBackend, line: str, agent_id: int = 0) -> float:
    """How far `line` lies on the urgent side of the boundary, in nats (<= 0: it can wait)."""
    with _URGENCY_BOUNDARY_LOCK:
        boundary = _URGENCY_BOUNDARY.get(backend)
    if boundary is None:
        # Two first decisions at once may both measure it: they find the same value.
        margins = [
            (await _urgency_raw(backend, said, agent_id), urgent)
            for said, urgent in URGENCY_CALIBRATION
        ]
        # Medians, not means: the model misreads a line of each kind now and then ("At your
        # leisure" answered "At once!"), and one such line would move a mean by a third of
        # the distance between the kinds.
        urgent = statistics.median(m for m, is_urgent in margins if is_urgent)
        calm = statistics.median(m for m, is_urgent in margins if not is_urgent)
        boundary = (urgent + calm) / 2
        with _URGENCY_BOUNDARY_LOCK:
            _URGENCY_BOUNDARY[backend] = boundary
    return await _urgency_raw(backend, line, agent_id) - boundary


async def _urgency_raw(backend: ModelBackend, line: str, agent_id: int) -> float:
    text = prompt(URGENCY_EXAMPLES, line, "\nNPC:")
    urgent, calm = await backend.score_choices(text, _URGENCY_CHOICES, agent_id=agent_id)
    return urgent - calm
