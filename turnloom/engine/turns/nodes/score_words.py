"""The words a player's line shares with each tool's declaration: evidence for the `score`
decision's choice of tool (`score_decision`).

A small model's likelihood of a tool's label hardly moves with the line ("Bring me two books"
scores "fetch books" no higher than "N/A" does on the default model), while players name what
they want: the books, the horseshoes, the days. So each tool has the words of its name,
description, parameters and their values, stemmed ("horseshoes" and "horseshoe" are one), and
a line scores, per tool, the words it shares with it, each weighted by how few of the tools
have it (a word every tool has tells them apart no better than none).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import snowballstemmer

from ...graph.params import ToolDefinition
from .score_values import FILLER, WORD, enum_values

__all__ = ["WORDS_WEIGHT", "phrase_words", "shared_words"]

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
