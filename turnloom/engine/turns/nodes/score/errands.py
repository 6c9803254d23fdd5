"""What a player's line asks to be carried somewhere: evidence for the `score` decision's
choice of tool (`decision`), beside the words it shares with each tool (`words`).

Players send word and people in their own words: "Let the Sea Lantern know her cargo has been
sold." names no word of a tool that "Sends a message by signal flags", and "Get a dozen of my
men across to Highcliff Harbour" none of one that "Books places for travellers". What they
ask is still plain: words passed on are a message, so the tools that take one
(`telling_words`); someone or something sent to a named place goes there, so the tools that
take a place (`place_words`). Each weighs as a word that only those tools have
(`words.takers_evidence`, as the people a line names do).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ....graph.params import ToolDefinition
from .strings import MESSAGE
from .values import is_place, is_sentence
from .words import takers_evidence

__all__ = ["place_words", "telling_words"]

#: A line asking to pass words on: "tell them", "let X know", "send word", "warn the guard"
#: (not "tell me", "let me know").
_TELLS = re.compile(
    r"\b(?:tell|warn|inform)\s+(?!me\b|us\b)\w|\blet\s+(?!me\b|us\b)(?:[\w'-]+\s+){1,4}know\b"
    r"|\bsend\s+(?:word|news)\b|\bpass\s+(?:it\s+)?(?:on|along)\b",
    re.IGNORECASE,
)
#: A line sending someone or something to a named place: "across to Highcliff Harbour",
#: "bound for Port Amberly", "ride to Kell's Ferry", "we need to reach Wren's Crossing".
_SENDS_TO = re.compile(r"\b(?:to|towards?|bound\s+for|reach)\s+(?:the\s+)?[A-Z]")


def telling_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of a line asking to pass words on (module docstring) for the
    tools that take a message."""
    return takers_evidence(
        tools, _TELLS.search(line) is not None, lambda p: is_sentence(p, MESSAGE)
    )


def place_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of a line sending something to a named place (module docstring)
    for the tools that take a place."""
    return takers_evidence(tools, _SENDS_TO.search(line) is not None, is_place)
