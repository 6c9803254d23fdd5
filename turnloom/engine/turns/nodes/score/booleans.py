"""What a boolean argument's description says each of its values means, for the `score`
decision's arguments (`arguments`): "true to light it, false to put it out" is ("light it",
"put it out").
"""

from __future__ import annotations

import re

from .calibration import one_line
from .words import phrase_words

__all__ = ["phrases"]

_BOOLEAN_PHRASES = re.compile(
    r"\btrue\s*(?:to|if|when|=|:|means)\s+(?P<true>[^;.]+?)(?=,?\s*false\b|[;.]|$)"
    r"|\bfalse\s*(?:to|if|when|=|:|means)\s+(?P<false>[^;.]+?)(?=,?\s*true\b|[;.]|$)",
    re.IGNORECASE,
)
#: Where a tool's description offers two things to do ("Light the torch or put it out.").
_ALTERNATIVES = re.compile(r"\s+or\s+", re.IGNORECASE)


def phrases(description: str, tool_description: str = "") -> tuple[str, str]:
    """What a boolean's description says each value means: ("light it", "put it out") for
    "true to light it, false to put it out"; "" where it does not say.

    Where it says one side only ("true to light it."), the other is the tool's other
    alternative when its description offers two ("Light the torch or put it out.": "put it
    out"): without it, nothing in the line speaks for false, and "Put out the torch." lights
    it."""
    said = {"true": "", "false": ""}
    for found in _BOOLEAN_PHRASES.finditer(description):
        said[found.lastgroup or ""] = found.group(found.lastgroup or 0)
    known = said["true"] or said["false"]
    if known and not (said["true"] and said["false"]):
        sides = _ALTERNATIVES.split(one_line(tool_description).rstrip(". "), maxsplit=1)
        if len(sides) == 2:
            first, second = (phrase_words(known, side) for side in sides)
            if first != second:
                said["false" if said["true"] else "true"] = sides[1] if first > second else sides[0]
    return said["true"], said["false"]
