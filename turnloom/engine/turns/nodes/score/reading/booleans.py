"""What a boolean argument's description says each value means, and which of those a player's
line says: evidence for the `score` decision's boolean arguments (`arguments`).

A description tells the two values apart in words: "true to light it, false to put it out",
"false (the default) for a quick blessing" (`boolean_phrases`); it may name the value that holds
when the player says nothing of it (`described_default`). A line is read by which side it
says, in any words: "Douse the light" and "Turn the lamp off" say "put it out"
(`polar_words`); "keep the hood down" says what raising it does not (`opposed_sides`); what it
denies counts for the other side, names say none (`said_sides`), nor do the words of what the
tool does to what (`object_words`). And which declared value of an enum a line names
(`says_value`: "the storm warning" says `storm_warning`), or names the explanation of
(`explained`), and which holds where it names none (`described_value`).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence

from .....graph.params import ToolDefinition
from .names import proper_names
from .numbers import TIMES_OF_DAY, singular
from .values import DETERMINERS, FILLER, PREPOSITIONS, WORD, one_line, value_words, words
from .words import STEMMER, word_stems

__all__ = [
    "DENIED",
    "boolean_phrases",
    "denied_clauses",
    "described_default",
    "described_value",
    "explained",
    "explanations",
    "object_words",
    "opposed_sides",
    "phrase_words",
    "polar_words",
    "said_sides",
    "says_a_flag",
    "says_value",
    "unaccented",
]


#: What each value of a boolean means, an aside allowed after it ("false (the default) for a
#: quick blessing").
_BOOLEAN_PHRASES = re.compile(
    r"\btrue\s*(?:\([^)]*\)\s*)?(?:to|if|when|for|=|:|means)\s+"
    r"(?P<true>[^;.]+?)(?=,?\s*false\b|[;.]|$)"
    r"|\bfalse\s*(?:\([^)]*\)\s*)?(?:to|if|when|for|=|:|means)\s+"
    r"(?P<false>[^;.]+?)(?=,?\s*true\b|[;.]|$)",
    re.IGNORECASE,
)
#: A boolean's description naming its default: "false (the default)", "defaults to true",
#: "true by default", "(default false)", or the value where the visitor says nothing of it ("If
#: the visitor says nothing about coming back, it's false.", "Unless they stress haste, take it
#: as false.").
_DEFAULT = re.compile(
    r"\b(?P<value>true|false)\s*\((?:the\s+)?default\)"
    r"|\(\s*default(?:\s+is|:)?\s+(?P<paren>true|false)\s*\)"
    r"|(?:^|[.;]\s*)(?:if|unless|when|where)\b[^.;]*,\s*(?:it's|it\s+is|take\s+it\s+as|assume"
    r"|treat\s+it\s+as|use|it\s+should\s+be)\s+(?P<unsaid>true|false)\b"
    r"|\bdefaults?\s+(?:to|is)\s+(?P<to>true|false)\b"
    r"|\b(?P<by>true|false)\s+by\s+default\b",
    re.IGNORECASE,
)
#: An aside naming a default ("(default false)", "(the default)").
_DEFAULT_ASIDE = re.compile(r"\s*\([^)]*\bdefault\b[^)]*\)", re.IGNORECASE)
#: Where a tool's description offers two things to do ("Light the torch or put it out.").
_ALTERNATIVES = re.compile(r"\s+or\s+", re.IGNORECASE)


def boolean_phrases(description: str, tool_description: str = "") -> tuple[str, str]:
    """What a boolean's description says each value means: ("light it", "put it out") for
    "true to light it, false to put it out"; "" where it does not say.

    Where it says one side only ("true to light it."), the other is the tool's other
    alternative when its description offers two ("Light the torch or put it out.": "put it
    out"): without it, nothing in the line speaks for false, and "Put out the torch." lights
    it."""
    said = {"true": "", "false": ""}
    for found in _BOOLEAN_PHRASES.finditer(description):
        # Less an aside naming the default: "false if not (default false)" says "not".
        phrase = found.group(found.lastgroup or 0)
        said[found.lastgroup or ""] = _DEFAULT_ASIDE.sub("", phrase).strip()
    known = said["true"] or said["false"]
    if known and not (said["true"] and said["false"]):
        sides = _ALTERNATIVES.split(one_line(tool_description).rstrip(". "), maxsplit=1)
        if len(sides) == 2:
            first, second = (phrase_words(known, side) for side in sides)
            if first != second:
                said["false" if said["true"] else "true"] = sides[1] if first > second else sides[0]
    return said["true"], said["false"]


def described_default(description: str) -> bool | None:
    """The value a boolean's description names as its default, or None."""
    found = _DEFAULT.search(description)
    return None if found is None else found.group(found.lastgroup or 0).lower() == "true"


#: What a boolean's phrases are told apart by: "put it out" from "light it", "let them rest",
#: "bring it back" from "come away".
_POLAR = frozenset(["on", "off", "out", "up", "down", "no", "not", "let", "stop", "start", "back"])
#: Words that set something going and words that stop it, each kind one word to a boolean's
#: phrases (`polar_words`); the names stand for a side and are no stem of any word.
_GOING, _STOPPED = "<going>", "<stopped>"
_GOING_STEMS = frozenset(
    STEMMER.stemWords(words("on light lit kindle ignite relight open start begin resume enable"))
)
_STOPPED_STEMS = frozenset(
    STEMMER.stemWords(words("off out douse extinguish snuff quench shut close stop halt disable"))
)
#: Words that raise something and words that lower it, the other pair of sides ("true to raise
#: the curtain, false to lower it": "Bring the curtain down" lowers it, "Curtain up!" raises it).
_RAISED, _LOWERED = "<raised>", "<lowered>"
_RAISED_STEMS = frozenset(STEMMER.stemWords(words("up raise rise lift hoist")))
_LOWERED_STEMS = frozenset(STEMMER.stemWords(words("down lower drop")))
_SIDES = {
    **dict.fromkeys(_GOING_STEMS, _GOING),
    **dict.fromkeys(_STOPPED_STEMS, _STOPPED),
    **dict.fromkeys(_RAISED_STEMS, _RAISED),
    **dict.fromkeys(_LOWERED_STEMS, _LOWERED),
}


def polar_words(phrase: str, line: str) -> int:
    """How many words of a boolean's `phrase` ("light it", "put it out") `line` has, as
    `phrase_words` counts them, where any word that lights, opens or starts something matches
    any other such word, and any that puts out, closes or stops something any other: "Douse
    the lamp" and "Turn the lamp off" say "put it out"; so, for a pair of its own, do words
    that raise and words that lower ("Bring the curtain down" says "lower it"). Such a word
    after a determiner is the thing, not what is done to it: "Douse the light" says "light
    it" by one word only, and "put it out" by its side. A side counts twice: it is what tells
    the two values apart, where the rest may be said of either ("Turn the lamp off" says "turn
    it on" but for its side). Words the phrase offers as either ("dead or alive will do") are
    said by a line that says both, not by one that says one of them ("taken alive"); any
    word of a list says it ("horn, bone or wood": "bone")."""
    shared = _polar_stems(phrase) & _polar_stems(line)
    for either in _EITHER.finditer(phrase):
        pair = word_stems(either.group(1)) | word_stems(either.group(2))
        if not pair <= shared:
            shared -= pair
    return len(shared) + len(shared & {_GOING, _STOPPED, _RAISED, _LOWERED})


#: Two words a phrase offers as either: "dead or alive"; not the last two of a list, any of
#: whose words says the phrase ("plain buttons of horn, bone or wood": "bone").
_EITHER = re.compile(r"(?<!, )\b(\w+)\s+or\s+(\w+)\b", re.IGNORECASE)


#: Each side's opposite: a boolean's two values are opposites.
_OPPOSITE = {_GOING: _STOPPED, _STOPPED: _GOING, _RAISED: _LOWERED, _LOWERED: _RAISED}


def opposed_sides(phrases: Sequence[str], line: str) -> list[int]:
    """Per phrase of a boolean's two ("true to raise the hood", "false to run it open"), the
    sides `line` says (`polar_words`) whose opposite the other phrase says, each counted as a
    side is: "keep the hood down" lowers it, so it says what raising it does not, false."""
    if len(phrases) != 2:
        return [0] * len(phrases)
    said = _polar_stems(line) & set(_OPPOSITE)
    sides = [_polar_stems(phrase) for phrase in phrases]
    return [2 * sum(_OPPOSITE[side] in sides[1 - i] for side in said) for i in range(2)]


#: Sayings whose "on" sets nothing going: "Hold on", "on second thought", "on foot"; and whose
#: "off" stops nothing: "ward off spirits", "show it off", "see them off".
_IDIOMS = re.compile(
    r"\b(?:(?:hold|hang|come|go)\s+on|on\s+(?:second\s+thoughts?|foot)"
    r"|(?:ward|fend|show|fight|scare|drive|see|pay|kick|head|better|well)(?:s|ed|ing)?"
    r"(?:\s+(?:it|them|him|her|me|us))?\s+off)\b",
    re.IGNORECASE,
)
#: Verbs whose "on" or "off" is what they do to the thing after it ("turn on the lamp", "call
#: off the search"); after any other word, "on the" or "off my" says where: "a frost
#: enchantment on my longsword", "the lid off the pot".
_TAKES_PARTICLE = frozenset(
    STEMMER.stemWords(words("turn switch flick put keep kept leave left set shut cut call"))
)


def _polar_stems(text: str) -> set[str]:
    said = WORD.findall(_IDIOMS.sub(" ", text))
    found: set[str] = set()
    for i, word in enumerate(said):
        before = said[i - 1].lower() if i else ""
        after = said[i + 1].lower() if i + 1 < len(said) else ""
        low = word.lower()
        where = low in ("on", "off") and after in DETERMINERS
        if where and STEMMER.stemWord(before) not in _TAKES_PARTICLE:
            continue
        found |= word_stems(word, _POLAR)
        if (time := TIMES_OF_DAY.get(low) or TIMES_OF_DAY.get(low[:-1])) is not None:
            found.add(time)  # "tonight" says "the evening show", "mornings" "the morning"
        stem = STEMMER.stemWord(low)
        side = _SIDES.get(stem, "")
        if side and before not in DETERMINERS and not (stem == "out" and after == "of"):
            found.add(side)  # not "the light", nor "out of oil"
    return found


def object_words(tool_description: str, flag: set[str]) -> frozenset[str]:
    """The words of a tool's description that say no side of one of its flags: any call of the
    tool may say them ("Send a bird to my uncle" against "true to have the bird wait at the far
    end and carry the answer back"). Not the flag's own name's, nor those that set going or
    stop, raise or lower, which tell sides apart ("Light the lamp or put it out")."""
    named = {STEMMER.stemWord(w) for w in flag}
    found: set[str] = set()
    for word in WORD.findall(tool_description.lower()):
        stem = STEMMER.stemWord(word)
        if stem not in named and stem not in _SIDES and word not in _POLAR:
            found |= {word, word + "s", word.removesuffix("s")}
    return frozenset(found)


def says_a_flag(tool: ToolDefinition, line: str) -> bool:
    """Whether `line` says a side of one of `tool`'s flags, two words of its phrase or more
    ("I'll bring my own hawk" against "true if the student brings their own bird")."""
    return any(
        phrase_words(phrase, line) > 1
        for param in tool.parameters
        if param.type == "boolean"
        for phrase in boolean_phrases(param.description, tool.description)
    )


def phrase_words(phrase: str, line: str) -> int:
    """How many words of `phrase` (a boolean's "true to light it" or "false to put it out")
    `line` has, by stem, particles and negations counted."""
    return len(word_stems(phrase, _POLAR) & word_stems(line, _POLAR))


#: A clause a line (or a flag's phrase) denies: "won't be returning", "never opens", "don't
#: light it", "No wax needed", "nothing breakable", "it cannot wait"; to a dash ("Not the
#: matinee — the evening show"); and what someone does themselves, not the one asked ("ill fit
#: em myself", "Their carpenter will fit them himself"; not "all to myself").
DENIED = re.compile(
    r"\b(?:not|never|no|nothing|without|cannot|won't|wont|don't|dont|didn't|doesn't|isn't"
    r"|aren't|wasn't|can't|couldn't|shan't|mustn't)\b[^,.;:!?\u2014]*"
    r"|\b(?!(?:to|for|by|of|with|at|from|beside)\b)[\w']+\s+(?:(?:it|them|'?em|him|her)\s+)?"
    r"(?:myself|himself|herself|ourselves|themselves)\b",
    re.IGNORECASE,
)


def denied_clauses(text: str) -> str:
    """The clauses `text` denies (`DENIED`), one after another."""
    return " ".join(m.group(0) for m in DENIED.finditer(text))


def said_sides(
    phrases: Sequence[str], denied: str, heard: str, description: str, avoid: frozenset[str]
) -> tuple[list[int], str]:
    """How many words a line says of each of a boolean's two `phrases` (`polar_words`, and the
    sides it opposes: `opposed_sides`), read as `heard` (the tool's name taken out) with the
    clauses it `denied` (`denied_clauses` of the line as said), the words to `avoid` not
    counted; and `heard` without the names it holds. A name says no side
    ("board Old Bess" against "for dogs that are nervous, old, ..."), unless the `description`
    names it too. What the line says of one side only to deny it counts for the other ("I
    won't be returning" against "true = the guide returns with them"), unless the side's
    phrase denies it too ("or have never been away from home": "He's never been away from
    home before"); said plainly, what a phrase denies counts for the other side."""
    for name in proper_names(heard, frozenset()):
        if name not in description:
            heard = re.sub(rf"(?<![\w'-]){re.escape(name)}(?![\w'-])", " ", heard)
    opposed = opposed_sides(phrases, heard)
    told = [" ".join(w for w in WORD.findall(p) if w.lower() not in avoid) for p in phrases]
    plain = DENIED.sub("", heard)
    told_plain = [DENIED.sub("", p) for p in told]
    told_denied = [denied_clauses(p) for p in told]
    sides = [
        polar_words(p, plain) + polar_words(d, denied) + o
        for p, d, o in zip(told_plain, told_denied, opposed, strict=True)
    ]
    against = [
        polar_words(p, denied) + polar_words(d, plain)
        for p, d in zip(told_plain, told_denied, strict=True)
    ]
    return [sides[0] + against[1], sides[1] + against[0]], heard


def unaccented(text: str) -> str:
    """`text` without its accents: "rosé" is "rose", as a declared value is written."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def says_value(value: str, line: str) -> bool:
    """Whether `line` names a declared value, as written or in words ("storm_warning": "the
    storm warning"; "cave-in": "it caved in"; "drydock": "the dry dock")."""
    if phrase_words(value, line) or phrase_words(value_words(value), line):
        return True
    said = [w.lower() for w in WORD.findall(line)]
    return value.lower() in {a + b for a, b in itertools.pairwise(said)}


def explanations(description: str, enum: Sequence[str]) -> dict[str, str]:
    """Each declared value's explanation in `description` ("dunes = east across the deep sand
    to Tal Harir; wadi = north along ...", "merchant for the merchant quay, fishing for ...",
    "'brine' is the sea-water pool", "'roustabout' hauls canvas"): what follows its mention, up
    to the next value's."""
    at = sorted(
        (m.start(), m.end(), value)
        for value in enum
        for m in re.finditer(
            rf"\b{re.escape(value)}['\"]?\s*(?:=|:|-|for\b|means\b|is\b)"
            rf"|['\"]{re.escape(value)}['\"]\s",  # "'roustabout' hauls canvas"
            description,
        )
    )
    told: dict[str, str] = {}
    for (_, end, value), after in zip(at, [*at[1:], (len(description), 0, "")], strict=False):
        told[value] = f"{told.get(value, '')} {description[end : after[0]]}"
    return told


def explained(description: str, enum: Sequence[str], line: str) -> list[str]:
    """The declared values whose explanation (`explanations`) shares the most words with
    `line`, the words every explanation has aside; [] if none shares any."""
    told = {value: _content(text) for value, text in explanations(description, enum).items()}
    common = set.intersection(*told.values()) if len(told) > 1 else set()
    said = _content(line)
    shared = {value: len((words - common) & said) for value, words in told.items()}
    most = max(shared.values(), default=0)
    return [value for value in enum if most and shared.get(value) == most]


#: An enum value's explanation naming it the default: "(the default)", "is the one to give
#: when the visitor names no colour", "if none is said".
_VALUE_DEFAULT = re.compile(
    r"\bdefault\b|\b(?:when|if|unless|where)\b[^;.]*\b(?:no|none|nothing|not|n't)\b",
    re.IGNORECASE,
)


def described_value(description: str, enum: Sequence[str]) -> str | None:
    """The declared value `description` says holds when the line names none, if one does
    ("'clear' is plain glass, and is the one to give when the visitor names no colour")."""
    found = [
        v for v, text in explanations(description, enum).items() if _VALUE_DEFAULT.search(text)
    ]
    return found[0] if len(found) == 1 else None


def _content(text: str) -> set[str]:
    """The words of `text` that are no filler nor preposition ("off"), lowercase, singular and not
    possessive ("hull's": "hull"), and the time of day a word says ("tonight": evening)."""
    said = {w.lower() for w in WORD.findall(text)} - FILLER - PREPOSITIONS
    found = {singular(w.removesuffix("'s")) for w in said}
    return found | {TIMES_OF_DAY[w] for w in found if w in TIMES_OF_DAY}
