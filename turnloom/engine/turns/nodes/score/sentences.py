"""How a player's line is cut for the `score` decision: into sentences, without the thanks
that closes it, without a sentence that only tells where the speaker will be (before the
request step asks about it: `request`); the clause that gives the order, and the words given
after what they are called (for a free-text argument: `strings`); and whether it corrects the
last call ("Actually, make it seven.").
"""

from __future__ import annotations

import re

__all__ = [
    "CORRECTION",
    "WHERE_ONE_WILL_BE",
    "asked_order",
    "labelled",
    "opens_with_correction",
    "order_clause",
    "sentences",
    "without_thanks",
]


#: Where one sentence ends and the next starts: a closing mark, then space; not the point of
#: a title ("the Abbey of St. Wenna", "Dr. Hale").
_SENTENCE_END = re.compile(
    r"(?<=[.!?])(?<!\bSt\.)(?<!\bMr\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bMt\.)(?<!\bMrs\.)\s+(?=\S)"
)


#: A correction of the last call: "Actually, make it urgent", "Make that the blue one", "Sorry,
#: I meant the west field" (not "don't make it permanent").
CORRECTION = re.compile(
    r"(?<!don't )(?<!dont )(?<!not )(?<!never )"
    r"\b(?:make\s+(?:it|that|them|those)|i\s+meant)\s+([^,.;:!?]*)",
    re.IGNORECASE,
)
#: What may come before a correction that opens its line: "Actually,", "No, wait,", "Sorry,".
_BEFORE_CORRECTION = re.compile(r"\W*(?:(?:actually|no|wait|sorry|oh)\W+)*", re.IGNORECASE)


def opens_with_correction(line: str) -> bool:
    """Whether `line` opens by correcting the last call ("Actually, make it Highcliff.", "No,
    make that six.", "Sorry, I meant the west field"): the same tool, its arguments read anew."""
    found = CORRECTION.search(line)
    return found is not None and _BEFORE_CORRECTION.fullmatch(line, 0, found.start()) is not None


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


def labelled(line: str, labels: set[str] | frozenset[str]) -> list[str]:
    """The capitalised words a line gives after one of `labels` that names words to write
    ("the words Happy Name-Day, Pell embroidered", "My initials, T.R.B., in the corner")."""
    said = sorted(_LABELS & labels)
    if not said:
        return []
    pattern = rf"\b(?i:{'|'.join(said)})\b,?\s+((?:[A-Z][\w.'-]*,?\s+)*[A-Z][\w.'-]*)"
    return [m.group(1).strip(" ,") for m in re.finditer(pattern, line)]


#: What a description may call the words to write ("The exact words, name or initials").
_LABELS = frozenset(["words", "initials", "motto", "inscription", "letters", "name"])


def asked_order(description: str, line: str) -> str:
    """For an argument described as what needs doing ("What needs doing and to which
    garment"), the order as the line gives it (`order_clause`); else ""."""
    return order_clause(line) if _TO_DO.search(description) else ""


#: A description of an argument that is what to do ("What needs doing", "what to do").
_TO_DO = re.compile(r"\bneeds?\s+(?:to\s+be\s+)?do(?:ne|ing)\b|\bwhat\s+to\s+do\b", re.I)


def order_clause(line: str) -> str:
    """The clause of `line` that gives its order, without what asks politely around it: "take
    in these trousers" in "Can you take in these trousers? No rush.", "Hem these trousers" in
    "Hem these trousers for me, would you?"; "" if it has none of two words or more."""
    for clause in _CLAUSE_END.split(line):
        clause = _POLITE_START.sub("", clause.strip())
        clause = _POLITE_END.sub("", clause).strip(" ,")
        if len(clause.split()) >= 2:
            return clause
    return ""


#: Where a clause of an order ends: a closing mark, a dash, a semicolon, or "would you" after
#: a comma.
_CLAUSE_END = re.compile(r"[.!?;]+(?:\s+|$)|\s+[\u2014\u2013-]+\s+|,\s*(?=would you\b)", re.I)
#: What asks politely before an order: "Can you", "Could you please", "Please", "I need you to".
_POLITE_START = re.compile(
    r"^(?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|please\s+|kindly\s+|just\s+"
    r"|i\s+(?:need|want|would\s+like|'d\s+like)\s+you\s+to\s+)+",
    re.IGNORECASE,
)
#: What asks politely after it: "for me", "please", "would you".
_POLITE_END = re.compile(r"(?:[\s,]+(?:for\s+me|please|would\s+you))+\s*$", re.IGNORECASE)
