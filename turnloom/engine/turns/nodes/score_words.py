"""The words a player's line shares with each tool's declaration: evidence for the `score`
decision's choice of tool (`score_decision`).

A small model's likelihood of a tool's label hardly moves with the line ("Bring me two books"
scores "fetch books" no higher than "N/A" does on the default model), while players name what
they want: the books, the horseshoes, the days. So each tool has the words of its name,
description, parameters and their values, stemmed ("horseshoes" and "horseshoe" are one), and
a line scores, per tool, the words it shares with it, each weighted by how few of the tools
have it (a word every tool has tells them apart no better than none).

What a line counts tells as much: "Hand me 2 torches" names the tool that lights the torch,
yet asks for a count of torches, which only a tool with a count and an object to count takes.
So a counted noun is a word of the tools that can take a count of it (`counted_words`), those
with a numeric argument counted in it ("two nights") or, failing any, those with a numeric
argument and an object argument the noun can fill.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import snowballstemmer

from ...graph.params import ToolDefinition, ToolParamDefinition
from .score_values import FILLER, SENTENCE_WORDS, WORD, counted_nouns, enum_values, is_sentence

__all__ = ["WORDS_WEIGHT", "counted_words", "phrase_words", "shared_words"]

#: Nats a choice gains per unit of the words the line shares with it: one word that only one
#: tool has outweighs most of a label's own lead.
WORDS_WEIGHT = 2.0

#: Words that say nothing of what a tool is for: filler, particles of phrasal verbs ("hire
#: out", "put out"), and the words boolean parameters are described with.
_SILENT = FILLER | frozenset(
    [
        "out",
        "up",
        "off",
        "down",
        "over",
        "away",
        "back",
        "true",
        "false",
        "them",
        "someone",
        "something",
        "one",
        "many",
        "few",
        "set",
        "get",
        "e.g",
    ]
)
#: Words that make a string argument a message, not an object: "What to buy" is an object.
_MESSAGE = SENTENCE_WORDS - {"what"}
#: Spans of time an argument counted in days or nights counts in too.
_SPANS = frozenset(["day", "night", "week", "fortnight"])
_STEMMER = snowballstemmer.stemmer("english")
#: What a boolean's phrases are told apart by: "put it out" from "light it", "let them rest".
_POLAR = frozenset(["on", "off", "out", "up", "down", "no", "not", "let", "stop", "start"])


def shared_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of the words `line` shares with its declaration (module
    docstring): each shared stem adds log((tools + 1) / tools that have it)."""
    vocabularies = [_vocabulary(tool) for tool in tools]
    said = _stems(line)
    weights = []
    for vocabulary in vocabularies:
        weight = 0.0
        for stem in said & vocabulary:
            having = sum(stem in other for other in vocabularies)
            weight += math.log((len(tools) + 1) / having)
        weights.append(weight)
    return weights


def counted_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of what `line` counts ("2 torches") that the tool can take as a
    count of it: each counted noun adds log((tools + 1) / tools that take it) to those.

    A tool takes a counted noun if it has a numeric argument and either that argument counts
    in the noun ("for two nights", "30 gold") or the noun can fill another argument, an object
    (a free-text one, or an enum with the noun among its values). Where some tool counts in
    the noun, only those take it: "two nights" is no object to hand over."""
    weights = [0.0] * len(tools)
    for noun in counted_nouns(line):
        stems = _stems(" ".join(noun))
        if not stems:
            continue
        units = [i for i, tool in enumerate(tools) if _counts_in(tool, noun, stems)]
        takers = units or [i for i, tool in enumerate(tools) if _takes_object(tool, stems)]
        for i in takers:
            weights[i] += math.log((len(tools) + 1) / len(takers))
    return weights


def _numeric(tool: ToolDefinition) -> list[ToolParamDefinition]:
    return [p for p in tool.parameters if p.type in ("integer", "number")]


def _counts_in(tool: ToolDefinition, noun: tuple[str, ...], stems: frozenset[str]) -> bool:
    """Whether a numeric argument of `tool` counts in `noun` ("nights": "How many nights"; a
    week or a day: an argument in days or nights)."""
    for param in _numeric(tool):
        said = f"{param.name} {param.description}"
        if stems & _stems(said):
            return True
        in_days = any(w in said.lower() for w in ("day", "night"))
        if in_days and any(w.removesuffix("s") in _SPANS for w in noun):
            return True
    return False


def _takes_object(tool: ToolDefinition, stems: frozenset[str]) -> bool:
    """Whether `tool` takes a count of something the noun (`stems`) can be: it has a numeric
    argument and an object argument, free text or an enum among whose values the noun is."""
    if not _numeric(tool):
        return False
    for param in tool.parameters:
        values = enum_values(param)
        if values and stems & _stems(" ".join(values)):
            return True
        if param.type == "string" and not values and not is_sentence(param, _MESSAGE):
            return True
    return False


def _vocabulary(tool: ToolDefinition) -> frozenset[str]:
    parts = [tool.name.replace("_", " "), tool.description]
    for param in tool.parameters:
        parts += [param.name.replace("_", " "), param.description, *enum_values(param)]
    return _stems(" ".join(parts))


@lru_cache(maxsize=4096)  # the tools' texts come back at every decision
def _stems(text: str, keep: frozenset[str] = frozenset()) -> frozenset[str]:
    """The stems of `text`'s telling words (`keep`: silent words that tell here)."""
    return frozenset(
        _STEMMER.stemWord(low)
        for word in WORD.findall(text)
        if (low := word.lower()) in keep or (len(low) > 2 and low not in _SILENT)
    )


def phrase_words(phrase: str, line: str) -> int:
    """How many words of `phrase` (a boolean's "true to light it" or "false to put it out")
    `line` has, by stem, particles and negations counted."""
    return len(_stems(phrase, _POLAR) & _stems(line, _POLAR))
