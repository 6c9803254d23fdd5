"""What a player's line quotes, for the `score` decision: the words in quotes, or after a colon
or "saying" (`quoted`); the line without what it quotes, where its counts are (`unquoted`:
"Thirty posters reading 'three nights only'" counts thirty); and which free-text arguments
take a quote whatever their description calls them (`is_worded`: a poster's wording, a book's
title), besides a message (`strings`).
"""

from __future__ import annotations

import re

from .....graph.params import ToolParamDefinition
from .values import TAGGED, enum_values

__all__ = ["is_worded", "quoted", "unquoted"]

#: Words in double quotes, or in single ones (an apostrophe inside a word is no quote: "the
#: smith's", "I'm").
_QUOTED = re.compile(r'"([^"]+)"|(?<!\w)\'((?:[^\'\n]|(?<=\w)\'(?=\w))+)\'(?!\w)')
#: What a colon or "saying" introduces, to the end of its sentence.
_INTRODUCED = re.compile(r"(?::|\bsaying\b,?)\s+([^.!?;]+)", re.IGNORECASE)
#: A string argument's description that asks for words set down as given: "The words to be
#: printed", "The title lettered on the cover", "The exact wording".
_WORDED = re.compile(r"\s*(?:the\s+)?(?:exact\s+)?(?:words|wording|title|inscription)\b", re.I)


def quoted(line: str) -> list[str]:
    """The words a line quotes, in double or single quotes ('tell them, "Hold the barge till
    dusk."', "Embroider 'For Mira, always' on the cuff."), or gives after a colon or "saying"
    ("on this banner: Steady Hands, Steady Hearts?"), less a tag after it as `clauses`."""
    found = [q for m in _QUOTED.finditer(line) if (q := (m.group(1) or m.group(2)).strip(" .,"))]
    introduced = (TAGGED.sub("", m.group(1).strip(" .,")) for m in _INTRODUCED.finditer(line))
    return found or [q for q in introduced if q]


def unquoted(line: str) -> str:
    """`line` with what it puts in quotes left out (the quotes stay, empty): a number said
    there is part of the words, not a count."""
    return _QUOTED.sub(lambda m: m.group(0)[0] * 2, line)


def is_worded(param: ToolParamDefinition) -> bool:
    """Whether a free-text argument is words to set down as the player gives them (a poster's
    wording, a book's title), whatever its description calls them: what a line quotes is it."""
    return not enum_values(param) and _WORDED.match(param.description) is not None
