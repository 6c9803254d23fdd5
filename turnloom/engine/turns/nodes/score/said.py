"""How a span of a player's line is said there, for the `score` decision's free-text
arguments (`strings`): as a place ("to the Isle of Kerrow"), a title ("the Prince"), a reason
("..., Ilsa sprained her ankle."), whom something is for ("for my friend"), or as part of a
longer span.
"""

from __future__ import annotations

import re

from .names import capitalised
from .numbers import singular
from .values import FILLER, WORD

__all__ = [
    "PLACES",
    "PLACE_ENDS",
    "WAS_AT",
    "WITHIN",
    "in_reason",
    "is_for_whom",
    "is_inside",
    "is_placed",
    "is_titled",
    "singular_words",
    "starts_longer",
    "starts_with",
    "words_of",
]

#: A clause that gives a reason after an order: a comma (or "because"), then its own subject,
#: someone else, and verb ("..., Ilsa sprained her ankle.", "..., he's gone home sick.",
#: "because it's late", "..., my wife's gone into labour!"), to the sentence's end. Its words
#: say why, not what: no value is in it. What the speaker says of themselves may be the
#: request ("Hi Marta, I'd like the blue dress").
_REASON = re.compile(
    r"(?:,\s*|\bbecause\s+|\bsince\s+)"
    r"(?:(?:he|she|it|they|there|somebody|someone|everyone|everybody|nobody)(?:'\w+)?\b"
    r"|[A-Z][\w-]*(?:'s)?\s+(?=[a-z])(?!of\s)"
    r"|(?:my|his|her|our|their|your)\s+[\w-]+(?:'s|\s+(?:is|are|was|were|has|have|had))\b)"
    r"[^.;!?]*"
)
#: An "'s" after a value, the word after it and the one after that.
_OWNED = re.compile(r"'s\s+(?P<next>[\w'-]+)(?:\s+(?P<then>[\w'-]+))?")
#: Words that follow an "'s" standing for "is" or "has", never a thing owned: adverbs,
#: particles, articles and the participles of "be", "get" and "go".
_AFTER_IS = frozenset(
    WORD.findall(
        "not still just always never already again too so very here there off out away back in "
        "on at up down over a an the been got gone now today tonight"
    )
)
#: Words that open a noun phrase, after which a capitalised word is a title or a thing's name
#: ("the Prince", "our Gravedigger"): a person's name takes none.
_TITLE_OPENERS = r"(?:the|my|our|your|his|her|their)"


#: Words a place follows ("all the way from Hollin Cross", "bound for Port Amberly"), and
#: those a place something is in follows.
PLACES = r"from|to|at|in|into|near|past|bound\s+for"
#: Words a place a person was at follows ("on the King's Road"): no person.
WAS_AT = rf"{PLACES}|on|along"
#: Words a place something is in follows ("to Bashir the farrier in Port Sabra").
WITHIN = r"from|at|in|near"


def is_placed(line: str, value: str, places: str = PLACES) -> bool:
    """Whether `value` is said in `line` only as a place: after one of `places`."""
    found = re.finditer(re.escape(value), line)
    before = rf"\b(?:{places})\s+(?:the\s+)?$"
    return all(re.search(before, line[: m.start()], re.I) for m in found)


def is_titled(line: str, value: str) -> bool:
    """Whether `value` is a title or a thing's name in `line`: capitalised, opening no
    sentence, after an article or a possessive ("the Prince", "Our Gravedigger's drunk"), not
    after "to" ("to the Mill": where, not what)."""
    if not capitalised(line, value):
        return False
    said = rf"(?<!\bto\s)\b(?i:{_TITLE_OPENERS})\s+{re.escape(value)}(?![\w-])(?P<after>.*)"
    found = re.search(said, line)
    if found is None:
        return False
    # An owner is not the thing: "the King's crown" is a crown; "Our Gravedigger's drunk
    # again" is the Gravedigger ('s for "is").
    owned = _OWNED.match(found["after"])
    return owned is None or _is_said_of(owned["next"], owned["then"] or "")


def _is_said_of(word: str, then: str) -> bool:
    """Whether the word after an "'s" (`word`, then `then`) says something of its owner ("is"
    or "has": "'s drunk again", "'s gone", "'s not here"), not what it owns ("'s crown"): a
    word of a closed class (`_AFTER_IS`), a participle or an adverb by its ending, or one an
    adverb of time follows."""
    low = word.lower()
    ending = len(low) > 4 and low.endswith(("ed", "ing", "ly", "en"))
    return low in _AFTER_IS or ending or then.lower() in _AFTER_IS


def in_reason(line: str, value: str) -> bool:
    """Whether every place `line` says `value` lies in a clause giving a reason (`_REASON`:
    "..., Ilsa sprained her ankle.")."""
    clauses = [(m.start(), m.end()) for m in _REASON.finditer(line)]
    places = [m.start() for m in re.finditer(re.escape(value), line)]
    return bool(places) and all(any(a <= at < b for a, b in clauses) for at in places)


def is_for_whom(line: str, value: str) -> bool:
    """Whether `value` is said of whom something is for in `line`: in a phrase that "for"
    opens, to the clause's end ("for my friend", "for Rosa's crew", "for the north gate
    guards")."""
    said = rf"\bfor\s+(?:[^,.;:!?]*?\s)?{re.escape(value)}(?:'s)?(?![\w'-])"
    return re.search(said, line, re.IGNORECASE) is not None


#: Words a place's name does not run across ("Ashford with word" is Ashford).
PLACE_ENDS = FILLER - {"of", "the"}


def is_inside(words: str, text: str) -> bool:
    """Whether `words` are some of the whole words of the longer `text`."""
    found = re.search(rf"(?<![\w'-]){re.escape(words)}(?![\w'-])", text)
    return len(text) > len(words) and found is not None


def singular_words(text: str) -> set[str]:
    """The words of `text`, lowercase and singular."""
    return {singular(w) for w in words_of(text)}


def words_of(text: str) -> set[str]:
    """The words of `text`, lowercase."""
    return {w.lower() for w in WORD.findall(text)}


def starts_longer(text: str, words: str) -> bool:
    """Whether `text` is `words` and more words ("St. Ebba's Rock" after "St")."""
    return len(text) > len(words) and text.startswith(words) and not text[len(words)].isalnum()


def starts_with(text: str, words: str) -> bool:
    """Whether `text` starts with the whole words `words` ("gold" does not start with "go")."""
    return text.startswith(words) and not WORD.match(text[len(words) :])
