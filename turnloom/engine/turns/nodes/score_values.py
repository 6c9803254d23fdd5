"""The values the `score` decision chooses an argument among, read off the player's line.

The model decides (`score_decision`); this only lists what it decides between: for a string,
runs of the line's words; for a number, the numbers the line spells ("2", "two", "a dozen",
"a week"); for an enum, its declared values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...graph.params import ToolDefinition, ToolParamDefinition
from ..dialog.projection import Interaction

__all__ = [
    "DETERMINERS",
    "FILLER",
    "MORE",
    "SENTENCE_WORDS",
    "WORD",
    "after_numbers",
    "clauses",
    "counted_nouns",
    "earlier_values",
    "enum_values",
    "is_count",
    "is_number",
    "is_sentence",
    "numbers",
    "spans",
    "spelled",
    "takes_person",
    "unnegated",
    "value_words",
    "widened",
    "words",
]


def words(text: str) -> list[str]:
    return text.split()


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
        "are be this that these those please can could would will let let's lets just now here "
        "there some any do does how many much what which who where when why if whether than then "
        "so as not no into onto more again same instead another need want he him his she her "
        "hers they them their theirs we"
    )
)
_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
     "hundred": 100}  # fmt: skip
#: Words that multiply the number before them ("two hundred", "a thousand").
_SCALES = {"hundred": 100, "thousand": 1000}
#: Words that count by themselves after a number or "a" ("a dozen", "a couple", "two pairs").
_COUNTS = {"dozen": 12, "couple": 2, "pair": 2}
#: Words that say which one of a row, not how many ("the fifth level", "the 3rd cellar"): a
#: number too, for a level, a floor or a place in a queue, after the numbers the line counts.
_ORDINALS = {
    word: value
    for value, word in enumerate(
        words(
            "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
            "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
            "twentieth"
        )
    )
}
_ORDINAL_DIGITS = re.compile(r"(\d+)(?:st|nd|rd|th)")
#: Spans of time in days: "a week" is 7 of an argument counted in days or nights.
_DAYS = {"day": 1, "night": 1, "week": 7, "fortnight": 14}
#: Spans of time in minutes: "a quarter of an hour" is 15 of an argument counted in minutes.
_MINUTES: dict[str, float] = {"minute": 1, "hour": 60}
#: A number a span of time is counted in: digits, "a", "an" or a number word.
_SPAN_NUMBER = r"(?P<count>\d+(?:\.\d+)?|an?|[a-z]+-[a-z]+|" + "|".join(_NUMBER_WORDS) + ")"
#: "a quarter of an hour", "three quarters of an hour", "half an hour", "half a minute".
_FRACTION = (
    r"\b(?:(?P<quarters>a|one|three|\d+)\s+quarters?\s+of|(?P<half>half))\s+(?:a|an)\s+"
    r"(?P<unit>{units})s?\b"
)
_TENS_AND_UNITS = re.compile(
    r"\b(twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety)\s+"
    r"(one|two|three|four|five|six|seven|eight|nine)\b",
    re.IGNORECASE,
)
#: "two hours", "an hour and a half", "two and a half hours", "90 minutes".
_SPAN = (
    rf"\b{_SPAN_NUMBER}\s+(?P<inner>and\s+a\s+half\s+)?(?P<unit>{{units}})s?\b"
    r"(?P<outer>\s+and\s+a\s+half)?"
)
#: Words a noun phrase starts with ("some willow bark"), and words that end a description
#: of a noun before it ("a book about dragons"): `widened`.
DETERMINERS = frozenset(
    words("a an the some my your our his her their its this that these those any every each")
)
_PREPOSITIONS = frozenset(
    words(
        "about above across after against along among around before behind below beneath "
        "beside between beyond during except inside near off out outside over past since "
        "through toward towards under until up upon within without down"
    )
)
#: Words before "one" that make it a pronoun, not a count ("no one", "this one").
_NOT_A_COUNT = frozenset(words("no the this that which any each every"))
_NUMBER_OR_WORD = re.compile(r"[+-]?\d+(?:\.\d+)?(?![\w.])|[\w'-]+")
WORD = re.compile(r"[\w'-]+")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
#: Words of a string argument's name or description that make its value a sentence (a
#: message, an errand), not a name: its spans run longer.
SENTENCE_WORDS = frozenset(words("message text errand note reason says say what"))
#: Words after which a message's content starts ("tell her that ...", "saying ...").
_CLAUSE = re.compile(r"(?:\bthat|\bsaying|:)\s+([^.!?;]+)", re.IGNORECASE)
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
        if (
            _singular(word) in _COUNTS
            and i
            and (is_number(low[i - 1]) or low[i - 1] in ("a", "an"))
        ):
            if low[at] == "of" and _joined(line, found, at + 1):
                at += 1
        elif not is_number(word) or _singular(low[at]) in _COUNTS:
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
        if (
            (is_number(word) or word in ("a", "an"))
            and joined(at)
            and _singular(low[at]) in _COUNTS
        ):
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
    return word in FILLER or is_number(word) or word in _COUNTS


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


def clauses(line: str) -> list[str]:
    """What a line relays as a message: the words after "that", "saying" or a colon, to the
    end of the sentence."""
    return [" ".join(m.group(1).split()).strip(" ,") for m in _CLAUSE.finditer(line)]


def spans(
    line: str, avoid: frozenset[str], numeric: bool, longest: int = 4, *, strict: bool = False
) -> list[str]:
    """Runs of one to `longest` words of `line` (as written, not across punctuation) that neither
    start with its first word nor start or end with filler or an `avoid` word, nor (if
    `numeric`) hold a number; any runs if none is left (unless `strict`). A run ending in a
    possessive ends at its owner: "Farmer Hobb's tab" offers "Farmer Hobb", not "Hobb's"."""

    def edge(word: str) -> bool:
        return word in FILLER or word in avoid or (numeric and is_number(word))

    words = list(WORD.finditer(line))
    spans: dict[str, None] = {}
    for lenient in (False, True):
        for i, first in enumerate(words):
            for j in range(i, min(i + longest, len(words))):
                if j > i and line[words[j - 1].end() : words[j].start()].strip():
                    break  # a value does not run across punctuation
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
        if word in FILLER or word in _PREPOSITIONS or word in avoid or is_number(word):
            break
        if word.removesuffix("s") in _COUNTS:  # "a dozen sacks": the count is no description
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


def is_count(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_number(word: str) -> bool:
    return _spelled(word) is not None or _NUMBER.fullmatch(word) is not None


def _spelled(word: str) -> int | None:
    """The number a word spells ("seven", "twenty-five"), or None."""
    if word in _NUMBER_WORDS:
        return _NUMBER_WORDS[word]
    return _compound(word, _NUMBER_WORDS)


def _compound(word: str, units: dict[str, int]) -> int | None:
    """The number of tens and a unit joined by a hyphen, the unit one of `units` ("twenty-five"
    of the number words, "twenty-first" of the ordinals), or None."""
    tens, _, unit = word.partition("-")
    if _NUMBER_WORDS.get(tens, 0) in range(20, 100, 10) and 0 < units.get(unit, 0) < 10:
        return _NUMBER_WORDS[tens] + units[unit]
    return None


def numbers(line: str, param: ToolParamDefinition) -> list[object]:
    """The numbers `line` spells (digits, number words, "twenty-five", "a dozen", "half a dozen",
    "a couple", "both", then ordinals: "the fifth level", "the 3rd floor"; for a count of days or
    nights, spans of time: "a week" is 7, "two weeks" 14; for one of minutes, "a quarter of
    an hour" is 15, "an hour and a half" 90) without repeats. None: see `_fill` (a
    count the player does not say is one, "a dagger"; one the player says is no other)."""
    integer = param.type == "integer"
    if "minute" in f"{param.name} {param.description}".lower():
        spans = _spans_of_time(line, _MINUTES)
        if spans:  # how long, as for days below
            return list(dict.fromkeys(int(v) if integer or v.is_integer() else v for v in spans))
    in_days = any(w in f"{param.name} {param.description}".lower() for w in ("day", "night"))
    words: list[str] = []
    scaled = -1  # where the last "two hundred" is, which an "and fifty" adds to
    for word in _NUMBER_OR_WORD.findall(line):  # "twenty five" is "twenty-five"
        low = word.lower()
        joined = f"{words[-1]}-{word}".lower() if words else ""
        if _spelled(joined) is not None:
            words[-1] = joined
        elif low in _SCALES and words and (base := _plain(words[-1])) is not None:
            words[-1] = _digits(base * _SCALES[low])  # "two hundred", "a thousand"
            scaled = len(words) - 1
        elif 0 <= scaled == len(words) - 2 and words[-1].lower() == "and" and 0 < _units(low) < 100:
            words[-2:] = [_digits(float(words[-2]) + _units(low))]  # "two hundred and fifty"
        else:
            words.append(word)
    found: list[tuple[int, object]] = []  # (0 digits, 1 words, 2 ordinals; the value)
    timed: list[object] = []
    for i, word in enumerate(words):
        low = word.lower()
        value: float
        if _NUMBER.fullmatch(word):
            value = float(word)
        elif (spelled := _spelled(low)) is not None:
            value = spelled
        elif low in ("a", "an"):
            value = 1  # a number only with a unit after it ("a dozen", "a week")
        elif low == "both":  # "both lanterns", "Light both."
            value = 2
        else:
            if (ordinal := _ordinal(low)) is not None:
                found.append((2, ordinal))
            continue
        unit = _singular(words[i + 1].lower()) if i + 1 < len(words) else ""
        if unit in _COUNTS:
            value *= _COUNTS[unit]
            if i and words[i - 1].lower() == "half":  # "half a dozen" is six
                value /= 2
        elif in_days and unit in _DAYS:
            value *= _DAYS[unit]
            timed.append(int(value) if integer or float(value).is_integer() else value)
            continue
        elif low in ("a", "an"):
            continue
        number = int(value) if integer or float(value).is_integer() else value
        found.append((0 if _NUMBER.fullmatch(word) else 1, number))
    # A span of time says how long; the number of horses in the same line does not. Digits
    # come before words, words before ordinals (the first of equal scores wins).
    return list(dict.fromkeys(timed or [n for _, n in sorted(found, key=lambda f: f[0])]))


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


def _spans_of_time(line: str, units: dict[str, float]) -> list[float]:
    """The spans of time `line` says in `units` (the number of the argument's unit in each
    unit of time it knows), in the line's order: "a quarter of an hour" is 15 minutes, "half
    an hour" 30, "an hour and a half" 90, "two hours" 120, "ten minutes" 10."""
    found: list[tuple[int, float]] = []
    line = _TENS_AND_UNITS.sub(r"\1-\2", line)  # "twenty five minutes" is twenty-five
    rest = line
    named = "|".join(units)
    for fraction in re.finditer(_FRACTION.format(units=named), line, re.IGNORECASE):
        unit = fraction["unit"].lower()
        quarters = fraction["quarters"]
        share = 0.5 if fraction["half"] else 0.25 * (_plain(quarters) or 1.0)
        found.append((fraction.start(), share * units[unit]))
        rest = rest[: fraction.start()] + " " * len(fraction[0]) + rest[fraction.end() :]
    for span in re.finditer(_SPAN.format(units=named), rest, re.IGNORECASE):
        unit = span["unit"].lower()
        count = _plain(span["count"])
        if count is None:
            continue
        half = 0.5 if span["inner"] or span["outer"] else 0.0
        found.append((span.start(), (count + half) * units[unit]))
    return [value for _, value in sorted(found)]


def _plain(word: str) -> float | None:
    """The number a word says by itself (digits, a number word, "a"), or None."""
    if _NUMBER.fullmatch(word):
        return float(word)
    low = word.lower()
    return 1.0 if low in ("a", "an") else None if (n := _spelled(low)) is None else float(n)


def _units(word: str) -> float:
    """The number of a word under a hundred ("fifty", "twenty-five"), else 0."""
    spelled = _spelled(word)
    return float(spelled) if spelled is not None and spelled < 100 else 0.0


def _digits(value: float) -> str:
    return str(int(value)) if value.is_integer() else str(value)


def _ordinal(word: str) -> int | None:
    """The place an ordinal names ("fifth", "5th", "twenty-first"), or None."""
    if word in _ORDINALS:
        return _ORDINALS[word]
    if (digits := _ORDINAL_DIGITS.fullmatch(word)) is not None:
        return int(digits.group(1))
    return _compound(word, _ORDINALS)


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


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
