"""How a player's line is cut before the `score` decision's request step asks about it
(`request`): into sentences, without the thanks that closes it, without a sentence
that only tells where the speaker will be.
"""

from __future__ import annotations

import re

__all__ = ["WHERE_ONE_WILL_BE", "sentences", "without_thanks"]


#: Where one sentence ends and the next starts: a closing mark, then space; not the point of
#: a title ("the Abbey of St. Wenna", "Dr. Hale").
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\bSt\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bMt\.)(?<!\bMrs\.)\s+(?=\S)"
)


#: A sentence that tells where the speaker will be: "I'll be in my dressing room.", "We will be
#: out back.", "I'm going to be at the bar."
WHERE_ONE_WILL_BE = re.compile(
    r"\W*(?:i|we)(?:'ll|\s+will|'m\s+going\s+to|'re\s+going\s+to)\s+be\s+(?:in|at|on|by|out|"
    r"over|up|down|back|upstairs|downstairs|outside|inside|around|off|away|home|near)\b",
    re.IGNORECASE,
)


def sentences(line: str) -> list[str]:
    """The sentences of `line` ("Hello, Oskar! Busy day?" -> "Hello, Oskar!", "Busy day?")."""
    return [s for s in _SENTENCE_END.split(line.strip()) if s]


#: Thanks closing a line that says something before it: "..., thanks." / "... thank you!".
_CLOSING_THANKS = re.compile(
    r"^(?P<said>.*?\w.*?)[\s,;]+(?:thanks|thank you|cheers)(?:\s+(?:so much|a lot|kindly))?"
    r"(?P<end>[.!?]*)\s*$",
    re.IGNORECASE | re.DOTALL,  # a line typed over several lines too
)


def without_thanks(line: str) -> str:
    """`line` without the thanks that closes it ("Note her in the book, thanks." -> "Note her
    in the book."), its closing mark kept; a line that is only thanks, unchanged."""
    closing = _CLOSING_THANKS.match(line)
    if closing is None:
        return line
    return closing["said"].rstrip(" ,;") + (closing["end"] or ".")
