"""Names of people and things in a player's line (or in what the dialog said just before), for the
`score` decision's free-text arguments (`strings`): capitalised runs that open no sentence, the
subject that opens one, someone described, pointed to ("him") or said with who they are to the
speaker, people named together, the street a place is on, whose something is.
"""

from __future__ import annotations

import re

from .....graph.params import ToolParamDefinition
from .values import FILLER, TITLES, WORD, declared_words, is_number

__all__ = [
    "DESCRIBED",
    "KIN",
    "LET_KNOW",
    "NAMED",
    "PLACES",
    "PLACE_ENDS",
    "POINTED",
    "WAS_AT",
    "WHEN",
    "WITHIN",
    "capitalised",
    "in_reason",
    "is_for_whom",
    "is_inside",
    "is_kin",
    "is_owner",
    "is_placed",
    "is_proper",
    "is_titled",
    "owns",
    "people_said_whole",
    "proper_names",
    "said_route",
    "starts_longer",
    "starts_with",
    "subjects",
    "through_name",
    "verb_led",
    "with_kind",
    "with_noun",
    "with_street",
]


def capitalised(line: str, value: str) -> bool:
    """Whether every word of `value` is capitalised in `line`, the first not opening a sentence
    ("the Sea Swallow."; not "Note" in "... noon. Note her"), but an "of" or "of the" between
    two ("Maiden of Corrow"); and not only "I", days or months ("till Thursday")."""
    said = re.search(rf"(?<![\w'-]){re.escape(value)}(?![\w'-])", line)  # "A", not in "Ash"
    opens = said is not None and re.search(r"(?:^|[.!?]\s*)$", line[: said.start()]) is not None
    only_dates = set(value.split()) <= _NOT_NAME_WORDS
    return not opens and not only_dates and NAMED.fullmatch(value) is not None


#: A capitalised word, or a title with its point ("St. Ebba's Rock"): a point ends any other.
_NAME_WORD = rf"(?:(?:{'|'.join(sorted(TITLES))})\.|[A-Z][\w'-]*)"
#: A name of capitalised words, "of" or "of the" joining two of them ("Maiden of Corrow").
NAMED = re.compile(rf"{_NAME_WORD}(?:\s+(?:of\s+(?:the\s+)?)?{_NAME_WORD})*")


def through_name(line: str, value: str) -> str:
    """`value` with the rest of the capitalised name it stops inside (a span is a few words
    long): "end of the North" in "at the end of the North Mole" is "end of the North Mole";
    not through "I" or a day or a month ("Bram Tuesday")."""
    last = value.split()[-1:]
    if not last or not last[0][:1].isupper():
        return value
    found = re.search(rf"(?<![\w'-]){re.escape(value)}((?:\s+[A-Z][\w'-]*)+)", line)
    if found is None:
        return value
    rest = []
    for word in found.group(1).split():
        if word.split("'")[0] in _NOT_NAME_WORDS:  # "Tuesday's" too
            break
        rest.append(word)
    return " ".join([value, *rest])


#: Capitalised words that go on no name: "I", the days, the months.
_NOT_NAME_WORDS = frozenset(
    WORD.findall(
        "I I'm I'll I'd I've Monday Tuesday Wednesday Thursday Friday Saturday Sunday January"
        " February March April May June July August September October November December"
    )
)


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
    r"(?:sister|brother|wife|husband|(?:grand)?(?:son|daughter|mother|father)|friend|cousin|"
    r"uncle|aunt|nephew|niece|partner|master|mistress|apprentice|servant|page|squire|maid)s?"
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


#: Where a route goes from and to, each a name: "from Brinehaven to Kessel Ford".
_ROUTE = re.compile(rf"\bfrom\s+(?:the\s+)?{NAMED.pattern}\s+to\s+(?:the\s+)?{NAMED.pattern}")


def is_kin(line: str, name: str) -> bool:
    """Whether `line` says `name` after who they are to someone ("my brother Edric")."""
    return re.search(rf"\b{KIN}\s+{re.escape(name)}", line, re.IGNORECASE) is not None


def said_route(line: str) -> str:
    """The route `line` says, from one name to another ("from Brinehaven to Kessel Ford"), or
    ""."""
    found = _ROUTE.search(line)
    return "" if found is None else found.group(0)


def with_kind(line: str, place: str) -> str:
    """`place` with the kind of place `line` says after it, the name between "the" and a
    lowercase noun ("the Saltmarsh lighthouse", "the Lantern Street bakery"); not a word that
    says when or how ("the Old Mill tonight", "the North Gate quickly") or what it does ("the
    Crimson Pike sails")."""
    found = re.search(rf"\bthe\s+{re.escape(place)}\s+([a-z]+)\b(?!['-])", line)
    if found is None or not place[:1].isupper():
        return place
    kind = found.group(1)
    if kind in FILLER or kind in _NOT_KINDS or kind.endswith(("s", "ly", "ing", "ed")):
        return place
    return f"{place} {kind}"


#: Words that say when: no edge of a thing, a name or a place ("the camp tonight").
WHEN = frozenset(WORD.findall("tonight today tomorrow yesterday tonite"))
#: Words after a place's name that are no kind of place.
_NOT_KINDS = WHEN | frozenset(WORD.findall("first before after soon"))


def with_street(line: str, place: str) -> str:
    """`place` with the named street or quarter `line` says it is on or in, if any ("fish
    market" in "at the fish market on Cobble Lane": "fish market on Cobble Lane")."""
    found = re.search(rf"{re.escape(place)}\s+(?:on|in|by)\s+(?:the\s+)?{NAMED.pattern}", line)
    return found.group(0) if found is not None else place


def with_noun(line: str, name: str) -> str:
    """`name` (capitalised) with the thing `line` says it is of or where it is, after a
    determiner: "old map of the Saltmarsh Road" in "this old map of the Saltmarsh Road",
    "orchard on Brindle Hill", "empty lot behind the Gull's Rest"; else `name`."""
    if not name[:1].isupper():
        return name
    found = _OF_NAME.search(line.replace(name, "\0"))
    # Not across words that say who does what ("the man who lives on") or where it goes ("dug
    # this out of the Widow's Seam").
    if found is None or (FILLER | _PARTICLES) & set(found.group(2).split()):
        return name
    return f"{found.group(1)}{name}"


#: Particles of a verb ("dug this out of"), no words of a thing.
_PARTICLES = frozenset(["out", "up", "down", "off", "away", "back", "over", "in", "into"])
#: A thing after a determiner, then what it is of or where it is: a name (put as "\0").
_OF_NAME = re.compile(
    r"\b(?:the|a|an|this|that|these|those|my|our|your|his|her|their)\s+"
    r"(((?:[a-z][\w'-]*\s+){1,3})(?:of|on|behind|below|beside|near|by)\s+(?:the\s+)?)\0"
)


def is_owner(param: ToolParamDefinition) -> bool:
    """Whether a string argument is whose something is ("The name of the horse's owner.")."""
    return "owner" in declared_words(param)


def owns(line: str, value: str) -> bool:
    """Whether `line` says `value` owns something ("Widow Greaves's"), not is ("name's Dace")."""
    if value.lower() in _IS_SAID:
        return False
    return re.search(rf"{re.escape(value)}'s?(?![\w'-])", line) is not None


#: Words whose "'s" is "is": "name's Dace", "it's", "that's".
_IS_SAID = frozenset(WORD.findall("name it that he she there here what who where this"))


#: Someone said with who they are to the speaker ("my husband Bram", "her sister Wenna").
_KIN_NAMED = re.compile(rf"\b(?P<kin>{KIN})\s+(?P<name>{NAMED.pattern})")
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
        # Who they are to the speaker stands for their name where one follows: "My son Pell's
        # been wasting away" for who or what carries a curse is Pell, not "son".
        kin = {m["kin"].lower(): m["name"].removesuffix("'s") for m in _KIN_NAMED.finditer(line)}
        return list(dict.fromkeys(kin.get(v.lower(), v) for v in found))
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


#: Words a place follows ("all the way from Hollin Cross", "bound for Port Amberly", "reach
#: Wren's Crossing"), and those a place something is in follows.
PLACES = r"from|to|at|in|into|near|past|bound\s+for|reach"
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
    said as a place ("to the Mill", "from the Lowe farm": where, not what)."""
    if not capitalised(line, value) or is_placed(line, value):
        return False
    said = rf"\b(?i:{_TITLE_OPENERS})\s+{re.escape(value)}(?![\w-])(?P<after>.*)"
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


def starts_longer(text: str, words: str) -> bool:
    """Whether `text` is `words` and more words ("St. Ebba's Rock" after "St")."""
    return len(text) > len(words) and text.startswith(words) and not text[len(words)].isalnum()


#: What a verb follows: an auxiliary shortened onto who does it ("Someone's hexed my
#: warehouse", "He's tied up outside", "they've gone"); a thing's "'s" is whose it is.
_AUXILIARY = re.compile(
    r"(?:'(?:ve|re|d)|\b(?:some|any|every|no)(?:one|body|thing)'s"
    r"|\b(?:he|she|it|that|who|what|there)'s)\s+$",
    re.IGNORECASE,
)


def verb_led(line: str, value: str) -> bool:
    """Whether `value` opens, where `line` says it, with a verb's participle after a shortened
    auxiliary ("hexed my warehouse" in "Someone's hexed my warehouse"): what is done, not a
    thing. After a whole one, it may be what happened ("has taken a bad fall")."""
    first = value.split(maxsplit=1)[0].lower()
    if not first.endswith(("ed", "en", "ing")):
        return False
    for found in re.finditer(rf"(?<![\w'-]){re.escape(value)}(?![\w'-])", line):
        if _AUXILIARY.search(line[: found.start()]) is not None:
            return True
    return False


def starts_with(text: str, words: str) -> bool:
    """Whether `text` starts with the whole words `words` ("gold" does not start with "go")."""
    return text.startswith(words) and not WORD.match(text[len(words) :])
