"""Names of people and things in a player's line (or in what the dialog said just before),
for the free-text arguments of the `score` decision (`strings`): capitalised runs that open no
sentence, the subject that opens one, someone described instead of named, someone pointed
to ("him", "her"), someone said with who they are to the speaker, people named together, the
street a place is on, and whose something is.
"""

from __future__ import annotations

import re

from ....graph.params import ToolParamDefinition
from .values import FILLER, TITLES, WORD, declared_words, is_number

__all__ = [
    "DESCRIBED",
    "KIN",
    "LET_KNOW",
    "NAMED",
    "POINTED",
    "capitalised",
    "is_owner",
    "is_proper",
    "owns",
    "people_said_whole",
    "proper_names",
    "subjects",
    "with_street",
]


def capitalised(line: str, value: str) -> bool:
    """Whether every word of `value` is capitalised in `line`, the first not opening a
    sentence ("Sea Swallow" in "..., the Sea Swallow."; not "Note" in "... noon. Note her"),
    but an "of" or "of the" between two ("Maiden of Corrow", "Guild of the Lantern")."""
    said = re.search(rf"(?<![\w'-]){re.escape(value)}(?![\w'-])", line)  # "A", not in "Ash"
    opens = said is not None and re.search(r"(?:^|[.!?]\s*)$", line[: said.start()]) is not None
    return not opens and NAMED.fullmatch(value) is not None


#: A capitalised word, or a title with its point ("St. Ebba's Rock"): a point ends any other.
_NAME_WORD = rf"(?:(?:{'|'.join(sorted(TITLES))})\.|[A-Z][\w'-]*)"
#: A name of capitalised words, "of" or "of the" joining two of them ("Maiden of Corrow").
NAMED = re.compile(rf"{_NAME_WORD}(?:\s+(?:of\s+(?:the\s+)?)?{_NAME_WORD})*")


#: A sentence's first word, capitalised, then an "'s" or a verb that says what it does
#: ("Bramble looks", "Juniper hauled", "Captain's running").
_SUBJECT = re.compile(r"(?:^|[.!?]\s+)([A-Z][a-z]+)(?:'s\b|\s+[a-z]+(?:s|ed)\b)")


def subjects(line: str, avoid: frozenset[str]) -> list[str]:
    """The names that open a sentence of `line` as its subject (`_SUBJECT`), but the words
    to `avoid`."""
    found = (m.group(1) for m in _SUBJECT.finditer(line))
    return [
        name
        for name in found
        if not (name.lower() in avoid or name.lower() in FILLER or is_number(name.lower()))
    ]


#: Someone a line points to ("to him", "tell her", "send her a raven"), whom it does not name;
#: or a line taking up what was just offered ("Yes, do that", "Please do"): whom it was for.
POINTED = re.compile(
    r"\b(?:to|tell|ask|warn|inform|let|send)\s+(?:him|her|them)\b"
    r"|^\W*(?:yes|aye|please\s+do|do\s+that|go\s+ahead)\b",
    re.IGNORECASE,
)
#: Someone a line describes instead of naming: "whoever's been stealing horses", "the woman
#: who poisoned the well", to the clause's end.
DESCRIBED = re.compile(
    r"\bwho(?:ever|mever)\b[^,.;:!?]*"
    r"|\bthe\s+(?:man|woman|one|person|fellow|people|men|women)\s+who\b[^,.;:!?]*",
    re.IGNORECASE,
)


#: Whom a line asks to be told something: "let Mistress Harrow at the bakery know".
LET_KNOW = re.compile(r"\blet\s+(?!me\b|us\b)((?:[\w'-]+\s+){1,6}?)know\b", re.IGNORECASE)


#: Someone a line may name right after saying who they are to someone ("her sister, Wenna").
KIN = (
    r"(?:sister|brother|wife|husband|son|daughter|mother|father|friend|cousin|uncle|aunt|"
    r"nephew|niece|partner|master|mistress|apprentice|servant)s?"
)


def proper_names(text: str, avoid: frozenset[str]) -> list[str]:
    """The names of people or things `text` says, in its order: capitalised words not opening
    a sentence, or two or more opening one ("Sergeant Bram and his lads."), not a word to
    `avoid`."""
    found = (m.group(0) for m in NAMED.finditer(text))
    return list(
        dict.fromkeys(
            v
            for v in found
            if (capitalised(text, v) or (len(v.split()) > 1 and v.split()[0].lower() not in FILLER))
            and v.lower() not in avoid
            and "I" not in (w.split("'")[0] for w in v.split())  # the speaker ("Shall I")
        )
    )


def with_street(line: str, place: str) -> str:
    """`place` with the named street or quarter `line` says it is on or in, if any ("fish
    market" in "at the fish market on Cobble Lane": "fish market on Cobble Lane")."""
    found = re.search(rf"{re.escape(place)}\s+(?:on|in|by)\s+(?:the\s+)?{NAMED.pattern}", line)
    return found.group(0) if found is not None else place


def is_owner(param: ToolParamDefinition) -> bool:
    """Whether a string argument is whose something is ("The name of the horse's owner.")."""
    return "owner" in declared_words(param)


def owns(line: str, value: str) -> bool:
    """Whether `line` says `value` owns something: "'s" right after it ("Widow Greaves's")."""
    return re.search(rf"{re.escape(value)}'s?(?![\w'-])", line) is not None


#: Someone said with who they are to the speaker ("my husband Bram", "her sister Wenna").
_KIN_NAMED = re.compile(rf"\b{KIN}\s+(?P<name>{NAMED.pattern})")
#: People named together ("Mira Haldane and Jory Finch").
_NAMED_TOGETHER = re.compile(rf"(?<![\w'-]){NAMED.pattern}\s+(?:and|&)\s+{NAMED.pattern}")


def people_said_whole(
    line: str, param: ToolParamDefinition, found: list[str], taken: frozenset[str]
) -> list[str]:
    """For an argument that is a person or people, `line`'s person said whole: the names of
    those named together for one that takes names ("Mira Haldane and Jory Finch wish to be
    wed"), else someone with who they are to the speaker ("Light a candle for my husband
    Bram", not "husband"; only the name where the argument is a name: "our daughter Rosalind"
    is "Rosalind"), but words another argument took; else `found`."""
    declared = declared_words(param)
    if not declared & {"person", "people"}:
        return found
    said = []
    if "names" in declared:
        for m in _NAMED_TOGETHER.finditer(line):
            # One opening a sentence may open with its verb ("Tell Mira and Jory"): where the
            # first name is longer than the second, its first word is left out.
            first, second = re.split(r"\s+(?:and|&)\s+", m.group(0), maxsplit=1)
            opener = not capitalised(line, first.split()[0])
            longer = opener and len(first.split()) > len(second.split())
            said.append(m.group(0).split(maxsplit=1)[1] if longer else m.group(0))
    part = "name" if "name" in declared else 0
    said = said or [m.group(part) for m in _KIN_NAMED.finditer(line)]
    return [v for v in said if not taken & set(WORD.findall(v.lower()))] or found


def is_proper(line: str, value: str) -> bool:
    """Whether `value` is a proper name of `line`: two or more words, each capitalised, the
    first opening no sentence ("Widow's Seam", "Harrow's Cut"), and not said after "for" or
    "to" ("for Old Tam", "to Willow Island")."""
    if len(WORD.findall(value)) < 2 or not capitalised(line, value):
        return False
    return re.search(rf"\b(?:for|to)\s+(?:the\s+)?{re.escape(value)}", line, re.I) is None
