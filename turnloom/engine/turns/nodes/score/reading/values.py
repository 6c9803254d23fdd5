"""The values the `score` decision chooses an argument among, read off the player's line.

The model decides (`decision`); this only lists what it decides between: for a string,
runs of the line's words; for a number, the numbers the line spells (`numbers`: "2", "two",
"a dozen", "a week"); for an enum, its declared values; and whether a line counts in an
argument's own unit (`counts_own`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .....graph.params import ToolDefinition, ToolParamDefinition
from ....dialog.projection import Interaction
from .numbers import COUNTS, DAY_SPANS, TIME_UNITS, counts_time, is_number, singular

__all__ = [
    "DETERMINERS",
    "FILLER",
    "MORE",
    "PREPOSITIONS",
    "SENTENCE_WORDS",
    "TAGGED",
    "WORD",
    "after_numbers",
    "clauses",
    "counted_nouns",
    "counts_own",
    "earlier_values",
    "enum_values",
    "is_sentence",
    "one_line",
    "spans",
    "spelled",
    "takes_person",
    "unnegated",
    "value_words",
    "widened",
    "words",
]


def one_line(text: str) -> str:
    """`text` with its whitespace runs (newlines included) made single spaces."""
    return " ".join(text.split())


def words(text: str) -> list[str]:
    return text.split()


def words_of(text: str) -> set[str]:
    """The words of `text`, lowercase."""
    return {w.lower() for w in WORD.findall(text)}


def singular_words(text: str) -> set[str]:
    """The words of `text`, lowercase and singular."""
    return {singular(w) for w in words_of(text)}


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def spelled(name: str) -> str:
    """A tool's or an argument's name as words: "open_door" and "openDoor" -> "open door"."""
    return _CAMEL.sub(" ", name).replace("_", " ")


def value_words(value: str) -> str:
    """A declared value as a player says it: "storm_warning" and "stormWarning" -> "storm
    warning", "cave-in" -> "cave in" (a line may say "caved in")."""
    return spelled(value).replace("-", " ")


FILLER = frozenset(
    words(
        "a an the to of for in on at by with from and or but me my your our us you i it its is "
        "are be was were been am this that these those please can could would will let let's lets "
        "just now here there some any do does how many much what which who where when why if "
        "whether than then so as not no into onto more again same instead another need want he "
        "him his she her hers they them their theirs we too also"
    )
)
#: Words a noun phrase starts with ("some willow bark"), and words that end a description
#: of a noun before it ("a book about dragons"): `widened`.
DETERMINERS = frozenset(
    words("a an the some my your our his her their its this that these those any every each")
)
PREPOSITIONS = frozenset(
    words(
        "about above across after against along among around before behind below beneath "
        "beside between beyond during except inside near off out outside over past since "
        "through toward towards under until up upon within without down"
    )
)
#: Words before "one" that make it a pronoun, not a count ("no one", "this one").
_NOT_A_COUNT = frozenset(words("no the this that which any each every"))
WORD = re.compile(r"[\w'-]+")
#: Titles written with a point, which ends no sentence nor value ("the Abbey of St. Wenna").
TITLES = frozenset(("St", "Mr", "Mrs", "Ms", "Dr", "Mt"))
#: Words of a string argument's name or description that make its value a sentence (a
#: message, an errand), not a name: its spans run longer.
SENTENCE_WORDS = frozenset(words("message text errand note reason says say what happened"))
#: Words after which a message's content starts ("tell her that ...", "tell her the ship is
#: late", not "tell her captain that", "saying ...", "let Old Tobin know ...", "let her know by
#: falcon that ...").
_CLAUSE = re.compile(
    r"(?:\bthat|\bsaying|:|\btell\s+(?:him|her|them)(?:\s+(?:to|that)|(?![^.!?;]*\bthat\b))|\btell\s+[A-Z][\w'-]*\s+to"
    r"|\blet\s+(?!me\b|us\b)(?:[\w'-]+\s+){1,6}?know(?:\s+(?:by|via|through)\s+[\w'-]+)?(?:\s+that)?"
    r"|(?:^|[.!?,;]\s*)(?:(?:just|and|then)\s+)?say)\s+([^.!?;]+)",
    re.IGNORECASE,
)
_ENUM = re.compile(r"one of:?\s*([^.;]+)", re.IGNORECASE)


def enum_values(param: ToolParamDefinition) -> tuple[str, ...]:
    """A string parameter's allowed values: its `enum`, else those its description lists as
    ``one of: a, b, c`` (else none)."""
    if param.type != "string":
        return ()
    if param.enum:
        return tuple(param.enum)
    found = _ENUM.search(param.description)
    if not found:
        return ()
    parts = re.split(r",|\bor\b|\|", found.group(1))
    return tuple(dict.fromkeys(v for p in parts if (v := p.strip().strip("'\"`").strip())))


def after_numbers(line: str) -> set[int]:
    """Where the words right after a number of `line` start (not across punctuation), past a
    word that counts by itself and an "of" after it ("a dozen candles", "a couple of
    ropes"); and, where the counted word is a measure of something ("three crates of candles",
    "a dozen barrels of lamp oil"), where that something starts."""
    found = list(WORD.finditer(line))
    low = [w.group().lower() for w in found]
    starts: set[int] = set()
    for i, word in enumerate(low[:-1]):
        at = i + 1
        if not _joined(line, found, at):
            continue
        if singular(word) in COUNTS and i and (is_number(low[i - 1]) or low[i - 1] in ("a", "an")):
            if low[at] == "of" and _joined(line, found, at + 1):
                at += 1
        elif not is_number(word) or singular(low[at]) in COUNTS:
            continue  # counts nothing, or its count word does ("a dozen", "two pairs")
        starts.add(found[at].start())
        if _joined(line, found, at + 1) and low[at + 1] == "of" and _joined(line, found, at + 2):
            starts.add(found[at + 2].start())  # "crates of candles"
    return starts


def counted_nouns(line: str) -> list[tuple[str, ...]]:
    """What `line` counts: per number it spells before a noun ("2 torches", "three old maps",
    "a pair of boots", "two dozen eggs", "four more apples"), the noun's words, lowercase (the
    run of telling words right after the count, up to three, not across punctuation)."""
    found = list(WORD.finditer(line))
    low = [w.group().lower() for w in found]

    def joined(i: int) -> bool:
        return _joined(line, found, i)

    counted: list[tuple[str, ...]] = []
    for i, word in enumerate(low):
        at = i + 1
        if word in ("a", "an") and joined(at):
            # "a week", "a single night": a span of time counts one of itself.
            span = at + (low[at] == "single" and joined(at + 1))
            if low[span] in DAY_SPANS:
                counted.append((low[span],))
                continue
        if (is_number(word) or word in ("a", "an")) and joined(at) and singular(low[at]) in COUNTS:
            at += 1  # "a dozen", "two pairs"
        elif not is_number(word) or (word == "one" and i and low[i - 1] in _NOT_A_COUNT):
            continue
        while joined(at) and low[at] in ("of", "more", "other"):
            at += 1
        noun: list[str] = []
        while joined(at) and len(noun) < 3 and not _edge(low[at]):
            noun.append(low[at])
            at += 1
        if noun:
            counted.append(tuple(noun))
    return counted


def _joined(line: str, found: Sequence[re.Match[str]], i: int) -> bool:
    """Whether word `i` of `line` (`found` are its words) follows word i - 1 with nothing but
    spaces between."""
    return i < len(found) and not line[found[i - 1].end() : found[i].start()].strip()


def _edge(word: str) -> bool:
    """Whether `word` ends a counted noun: filler or another number."""
    return word in FILLER or is_number(word) or word in COUNTS


def is_sentence(param: ToolParamDefinition, by: frozenset[str] = SENTENCE_WORDS) -> bool:
    """Whether a string argument holds a sentence (a message, an errand), not a name: its
    name or description has one of the words `by` (default `SENTENCE_WORDS`)."""
    return bool(by & set(WORD.findall(f"{param.name} {param.description}".lower())))


#: A free-text argument's description that takes a person: "Who gets the message.", "Whose tab."
_PERSON = re.compile(r"\s*(?:who|whom|whose)\b", re.IGNORECASE)


def takes_person(param: ToolParamDefinition) -> bool:
    """Whether a free-text argument names a person: its description starts "Who", "Whom" or
    "Whose" ("Who gets the message.")."""
    return (
        param.type == "string"
        and not enum_values(param)
        and _PERSON.match(param.description) is not None
    )


def declared_words(param: ToolParamDefinition) -> frozenset[str]:
    """The words of an argument's name (spelled as words) and description, lowercase."""
    return frozenset(WORD.findall(f"{spelled(param.name)} {param.description}".lower()))


def describes_person(param: ToolParamDefinition) -> bool:
    """Whether an argument's name or description calls its value a person ("The person the
    message goes to")."""
    return "person" in declared_words(param)


def is_name(param: ToolParamDefinition) -> bool:
    """Whether a string argument is a thing's name ("The ship's name."), not a person
    (whom a player may call "the doctor")."""
    return "name" in declared_words(param) and not takes_person(param)


#: Words that make a string argument a place ("The port or island the travellers are going
#: to.", "Where the rider should go.").
_PLACE_WORDS = frozenset(words("where destination port island town city place going bound"))


def is_place(param: ToolParamDefinition) -> bool:
    """Whether a free-text argument is a place things are sent or go to."""
    return (
        param.type == "string"
        and not enum_values(param)
        and bool(_PLACE_WORDS & declared_words(param))
    )


def clauses(line: str) -> list[str]:
    """What a line relays as a message: the words after "that", "saying", a colon, "tell
    him to" ("tell Tom to bring the cart") or a "say" that opens a sentence or a clause ("Just
    say the north road is blocked."), to the end of the sentence, less a question or a
    "please" tagged on to it ("Send him word that I'll take the job, would you?")."""
    found = (" ".join(m.group(1).split()).strip(" ,") for m in _CLAUSE.finditer(line))
    return [TAGGED.sub("", clause) for clause in found]


#: What asks politely at the end of a clause, after a comma: "..., would you", "..., please".
TAGGED = re.compile(
    r",\s*(?:please|(?:would|will|could|can|won't)\s+(?:you|ya)(?:\s+please)?"
    r"|if\s+you\s+(?:would|could|please|don't\s+mind)|if\s+that's\s+all\s+right)\s*$",
    re.IGNORECASE,
)


#: Words no span starts or ends with: filler, and how often or for whom of a count ("three
#: times", "one each").
_EDGES = FILLER | {"times", "each"}


def spans(
    line: str, avoid: frozenset[str], numeric: bool, longest: int = 4, *, strict: bool = False
) -> list[str]:
    """Runs of one to `longest` words of `line` (as written, not across punctuation) that neither
    start with its first word nor start or end with filler or an `avoid` word, nor (if
    `numeric`) hold a number; any runs if none is left (unless `strict`). A run ending in a
    possessive ends at its owner: "Farmer Hobb's tab" offers "Farmer Hobb", not "Hobb's"."""

    def edge(word: str) -> bool:
        return word in _EDGES or word in avoid or (numeric and is_number(word))

    words = list(WORD.finditer(line))
    spans: dict[str, None] = {}
    for lenient in (False, True):
        for i, first in enumerate(words):
            for j in range(i, min(i + longest, len(words))):
                gap = line[words[j - 1].end() : words[j].start()].strip()
                if j > i and gap and not (gap == "." and words[j - 1].group() in TITLES):
                    break  # a value does not run across punctuation, but a title's point
                inner = [w.group().lower() for w in words[i : j + 1]]
                cut = _possessive(inner[-1])  # "Hobb's" ends at "Hobb"
                end = words[j].end() - cut
                inner[-1] = inner[-1][: len(inner[-1]) - cut]
                # A number inside is as wrong as one at an edge ("me 2 torches").
                counted = numeric and any(is_number(w) for w in inner)
                # A request's first word is its verb ("Hand me two torches"), not its object.
                kept = lenient or not (i == 0 or edge(inner[0]) or edge(inner[-1]) or counted)
                if kept and end > first.start():
                    spans[line[first.start() : end]] = None
        if spans or strict:
            break
    return list(spans)


def widened(line: str, value: str, avoid: frozenset[str], numeric: bool) -> str:
    """`value` (a span of `line`) with the words that describe it, up to the determiner or
    number its phrase starts with: "willow bark" for "bark" in "some willow bark", "old axe"
    in "my old axe"; not "sell swords" in "Do you sell swords?" (no determiner) nor "book
    about dragons" (a preposition ends a description)."""
    words = list(WORD.finditer(line))
    starts = [i for i, w in enumerate(words) if line.startswith(value, w.start())]
    if not value or not starts:
        return value
    i, end = starts[0], words[starts[0]].start() + len(value)
    k = i
    while k > 1 and not line[words[k - 1].end() : words[k].start()].strip():
        word = words[k - 1].group().lower()
        if word in FILLER or word in PREPOSITIONS or word in avoid or is_number(word):
            break
        if word.removesuffix("s") in COUNTS:  # "a dozen sacks": the count is no description
            break
        k -= 1
    before = words[k - 1].group().lower() if k > 0 else ""
    opens = before in DETERMINERS or is_number(before) or _possessive(before)
    if k == i or not opens or line[words[k - 1].end() : words[k].start()].strip():
        return value
    return line[words[k].start() : end]


def _possessive(word: str) -> int:
    """How many characters of `word` (lowercase) mark it as an owner's ("Hobb's": 2)."""
    return 2 if len(word) > 2 and word.endswith("'s") else 0


#: A line that asks for more of the same: "And two more for Rosa's crew.", "Another, please.",
#: "Do the same for Hollis."
MORE = re.compile(r"\b(?:more|another|the same)\b", re.IGNORECASE)
#: A value the line turns down: "level four, not five", "the south bank, not the north",
#: "three instead of two", up to the clause's end or a "but".
_NEGATED = re.compile(
    r"\b(?:not|instead of|rather than)\b[^,.;:!?]*?(?=\s+but\b|[,.;:!?]|$)", re.IGNORECASE
)


def unnegated(line: str) -> str:
    """`line` without what it turns down ("Send it to four, not five." -> "Send it to four,
    ."): the values an argument is chosen among are those it asks for."""
    return _NEGATED.sub("", line)


def earlier_values(
    tool: ToolDefinition, dialog: Sequence[Interaction], turns: int
) -> dict[str, list[object]]:
    """The values earlier calls of `tool` in the recent dialog gave each argument, oldest
    first ("and two more" keeps the drink)."""
    found: dict[str, list[object]] = {}
    for past in dialog[-turns:]:
        for message in past.messages:
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                if function.get("name") != tool.name:
                    continue
                for name, value in (function.get("arguments") or {}).items():
                    found.setdefault(str(name), []).append(value)
    return found


def counts_own(line: str, param: ToolParamDefinition) -> bool:
    """Whether `line` counts in `param`'s own unit: a span of time for a count of time, else
    the argument's name ("three crates" for "crates")."""
    units = set(TIME_UNITS) if counts_time(param) else set()
    units.add(singular(" ".join(WORD.findall(spelled(param.name))).lower()))
    said = {singular(w.lower()) for w in WORD.findall(line)}
    return bool(said & units)
