"""The numbers a player's line spells, for the `score` decision's integer and number
arguments (`arguments`): digits, number words ("seven", "twenty-five", "two hundred and fifty"),
counts ("a dozen", "another couple", "both", "twice"), ordinals ("the fifth level"), and
spans of time in an argument's unit ("a week" of days, "a quarter of an hour" of minutes).
"""

from __future__ import annotations

import re

from .....graph.params import ToolParamDefinition

__all__ = [
    "COUNTS",
    "TIMES_OF_DAY",
    "TIME_UNITS",
    "against_last",
    "counts_days",
    "counts_people",
    "counts_time",
    "is_count",
    "is_number",
    "numbers",
    "says_one",
    "singular",
]


def _words(text: str) -> list[str]:
    return text.split()


_NUMBER_WORDS = {
    word: value
    for value, word in enumerate(
        _words(
            "zero one two three four five six seven eight nine ten eleven twelve thirteen "
            "fourteen fifteen sixteen seventeen eighteen nineteen twenty"
        )
    )
} | {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
     "hundred": 100}  # fmt: skip
#: Words that multiply the number before them ("two hundred", "a thousand").
_SCALES = {"hundred": 100, "thousand": 1000}
#: Words that count by themselves after a number or "a" ("a dozen", "a couple", "two score").
COUNTS = {"dozen": 12, "couple": 2, "pair": 2, "brace": 2, "score": 20}
#: Words that are a count alone ("twice more", "both lanterns"), and a number only before a unit.
_WORD_COUNTS = {"twice": 2, "thrice": 3, "both": 2}  # not "once": "at once"
_UNIT_OPENERS = ("a", "an", "another", "the")  # "another week", "for the day"
#: Words that say which one of a row, not how many ("the fifth level", "the 3rd cellar"): a
#: number too, for a level, a floor or a place in a queue, after the numbers the line counts.
_ORDINALS = {
    word: value
    for value, word in enumerate(
        _words(
            "zeroth first second third fourth fifth sixth seventh eighth ninth tenth eleventh "
            "twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth "
            "twentieth"
        )
    )
}
_ORDINAL_DIGITS = re.compile(r"(\d+)(?:st|nd|rd|th)")
#: Spans of time in days: "a week" is 7 of an argument counted in days or nights.
_DAYS = {"day": 1, "night": 1, "evening": 1, "week": 7, "fortnight": 14}
_WEEKS = {"week": 1, "fortnight": 2}
#: Spans of time an argument counted in days or nights counts in too.
DAY_SPANS = frozenset(_DAYS)
#: Spans of time in hours: "an hour", "a couple of hours", "a day" of an argument counted in
#: hours.
_HOURS = {"hour": 1, "day": 24}
#: Spans of time in minutes: "a quarter of an hour" is 15 of an argument counted in minutes.
_MINUTES: dict[str, float] = {"minute": 1, "hour": 60}
#: The units of time a count may be in: a number before one counts time, not things.
TIME_UNITS = frozenset(_DAYS) | frozenset(_MINUTES)
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
_NUMBER_OR_WORD = re.compile(r"[+-]?\d+(?:\.\d+)?(?![\w.])|[\w'-]+")
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")


def is_count(value: object) -> bool:
    """Whether `value` is a number (not a bool): an argument's count."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_number(word: str) -> bool:
    """Whether `word` is a number, in digits or spelled ("7", "seven", "twenty-five")."""
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


def counts_days(param: ToolParamDefinition) -> bool:
    """Whether a numeric argument is counted in days, nights or evenings ("For how many
    days..."; not "weeks", whose description may say "A fortnight is 2 weeks")."""
    return not _unit_words(param).isdisjoint(_DAY_UNITS)


def counts_time(param: ToolParamDefinition) -> bool:
    """Whether a numeric argument is counted in a unit of time (minutes, hours, days, nights,
    evenings, weeks), said as a word of its own: "tonight" or "a fortnight's board" is none."""
    return not _unit_words(param).isdisjoint((*_DAY_UNITS, "minute", "hour", "week"))


def _unit_words(param: ToolParamDefinition) -> set[str]:
    """The words of an argument's name and description, each as its singular: what it may be
    counted in ("duration_days": "day")."""
    return _singular_words(f"{param.name.replace('_', ' ')} {param.description}")


def _singular_words(text: str) -> set[str]:
    """The words of `text`, lowercase, each as its singular."""
    return {singular(word) for word in _LETTERS.findall(text.lower())}


_LETTERS = re.compile(r"[a-z]+")
#: The units of an argument counted in days, nights or evenings.
_DAY_UNITS = ("day", "night", "evening")


def says_one(line: str) -> bool:
    """Whether `line` says one of something with "a", "an" or "another" ("And a sleeping
    draught."), not a span of time ("Make it a week instead.": how long, not how many)."""
    said = [w.lower() for w in _NUMBER_OR_WORD.findall(line)] + [""]
    ones = [i for i, w in enumerate(said) if w in ("a", "an", "another")]
    return any(singular(said[i + 1]) not in _DAYS for i in ones)


#: A count's description naming the value to take where the player says none: "If the
#: visitor does not say, 1.", "If the visitor gives no number, 12.", "0 if the visitor offers
#: none", "defaults to 2", "(default 3)".
_COUNT_DEFAULT = re.compile(
    r"\bdefaults?\s+(?:to|is)\s+([\w-]+)|\(default:?\s+([\w-]+)\)"
    r"|\bif\b[^.;]*\b(?:not|no|none|nothing)\b[^.;]*,\s*(?:assume|use|take|it's|it\s+is)?\s*"
    r"([\w-]+)\s*(?:[.;)]|$)"
    r"|(?:^|[.;]\s*)([\w-]+)\s+if\b[^.;]*\b(?:none|not|no|nothing)\b",
    re.IGNORECASE,
)


def described_count(description: str) -> int | None:
    """The count a description says to take where the line gives none (`_COUNT_DEFAULT`)."""
    found = _COUNT_DEFAULT.search(description)
    value = None if found is None else _number_said(next(g for g in found.groups() if g))
    return None if value is None else int(value)


#: Where a line gives someone's age: "he's six", "She was eighty-seven", "six years old",
#: "aged 70": no count of things, but for an argument described by age.
_AGE = re.compile(
    r"\b(?:he|she)(?:'s|\s+is|\s+was)\s+([\w-]+)(?=\s*(?:[,.;!?]|$|years?\b))"
    r"|\b([\w-]+)\s+years?\s+old\b|\baged\s+([\w-]+)",
    re.IGNORECASE,
)


def ages(line: str, param: ToolParamDefinition) -> set[float]:
    """The ages `line` gives, unless `param` is described by age ("the dead person's age")."""
    if re.search(r"\bage\b|\byears?\s+old\b", param.description, re.IGNORECASE):
        return set()
    said = (_number_said(next(g for g in m.groups() if g)) for m in _AGE.finditer(line))
    return {v for v in said if v is not None}


def numbers(line: str, param: ToolParamDefinition, *, time_elsewhere: bool = False) -> list[object]:
    """The numbers `line` spells (digits, number words, "twenty-five", "a dozen", "half a dozen",
    "a couple", "both", then ordinals: "the fifth level", "the 3rd floor"; for a count of days or
    nights, spans of time: "a week" is 7, "two weeks" 14, "for the day" 1; for one of hours,
    "an hour" is 1, "a couple of hours" 2, "a day" 24; for one of minutes,
    "a quarter of an hour" is 15, "an hour and a half" 90) without repeats. None: see `_fill`
    (a count the player does not say is one, "a dagger"; one the player says is no other).
    `time_elsewhere`: another argument of the tool counts time, so a span of time ("for two
    days", "three hours") is none of this one's numbers."""
    integer = param.type == "integer"
    unit_words = _unit_words(param)
    if "minute" in unit_words:
        spans = _spans_of_time(line, _MINUTES)
        if spans:  # how long, as for days below
            return list(dict.fromkeys(int(v) if integer or v.is_integer() else v for v in spans))
    in_days = not unit_words.isdisjoint(_DAY_UNITS)  # `counts_days`, from the words read above
    # The spans of time the argument counts in, if it counts time: days or hours.
    in_hours = "hour" in unit_words
    # Or weeks: "Two weeks" is 2, "a fortnight" 2.
    in_weeks = not in_days and "week" in unit_words
    span_units = _DAYS if in_days else _WEEKS if in_weeks else _HOURS if in_hours else {}
    # A count said in pairs ("How many pairs of boots", "(pairs, for trousers)") is of
    # pairs: "three pairs" is three, not six.
    in_pairs = "pair" in _singular_words(param.description)
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
        elif low in _WORD_COUNTS and " ".join(words[i + 1 : i + 2]).lower() != "as":  # "twice as"
            value = _WORD_COUNTS[low]
        elif low in _UNIT_OPENERS and (low != "the" or (in_days and i + 1 < len(words))):
            value = 1  # a number only with a unit after it ("a dozen", "for the day")
        else:
            if (ordinal := _ordinal(low)) is not None:
                found.append((2, ordinal))
            continue
        after = [singular(w.lower()) for w in words[i + 1 : i + 4] if w.lower() not in _WHOLE]
        after += ["", "", ""]  # "a whole day" is a day
        unit = after[0]
        halved = unit == "half" and after[1] in COUNTS  # "a half dozen" is six
        if halved:
            unit = after[1]
        counted = unit in COUNTS
        if counted and not (in_pairs and unit == "pair"):
            value *= COUNTS[unit]
            if halved or (i and words[i - 1].lower() == "half"):  # "half a dozen" too
                value /= 2
            if after[1] == "of" and after[2] in TIME_UNITS:  # "a couple of hours"
                unit = after[2]
        if unit in span_units:
            value *= span_units[unit]
            timed.append(int(value) if integer or float(value).is_integer() else value)
            continue
        if (time_elsewhere and unit in TIME_UNITS) or (not counted and low in _UNIT_OPENERS):
            continue
        number = int(value) if integer or float(value).is_integer() else value
        found.append((0 if _NUMBER.fullmatch(word) else 1, number))
    # Someone's age counts no things ("my son Davy, he's six" offers no reward of six).
    if aged := ages(line, param):
        found = [f for f in found if not (isinstance(f[1], int | float) and f[1] in aged)]
    # A party the line lists counts its people: "for me and my wife" is two, "me and my two
    # brothers" three (the two are of the party, no count of their own).
    if counts_people(param) and (party := _PARTY.search(line)) is not None:
        members = [_plain(m) or 1.0 for m in _MEMBER.findall(party.group(0))]
        found = [f for f in found if f[1] not in {m for m in members if m > 1}]
        found.append((1, int(1 + sum(members))))
    # "5 of us", "the three of us" says how many the people are, whatever else is counted.
    said = _OF_US.search(line) if counts_people(param) else None
    if said is not None and (whole := _plain(said.group(1))) is not None:
        return [int(whole)]
    # A span of time says how long; the number of horses in the same line does not. Digits
    # come before words, words before ordinals (the first of equal scores wins).
    return list(dict.fromkeys(timed or [n for _, n in sorted(found, key=lambda f: f[0])]))


#: Words for the same time of day, as a line or an explanation may say it ("'dusk' for evening
#: or nightfall": "tonight").
TIMES_OF_DAY = {
    word: f"<{time}>"
    for time, said in (
        ("morning", "morning dawn daybreak sunrise sunup"),
        ("noon", "noon midday lunchtime"),
        ("afternoon", "afternoon matinee"),
        ("evening", "evening tonight dusk nightfall sundown sunset twilight"),
    )
    for word in said.split()
}


#: Words between a number and its unit of time that leave the span as it is ("a whole day").
_WHOLE = frozenset(["whole", "full", "entire"])
#: The people of a party a line lists with the speaker: "me and my wife" ("me n my wife"),
#: "my brother and I", "me, my wife and our son".
_PARTY = re.compile(
    r"\b(?:me|myself|i)(?:\s*,\s*(?:my|our)\s+[\w'-]+)*\s+(?:and|n|&)\s+(?:my|our)\s+[\w'-]+"
    r"|\b(?:my|our)\s+[\w'-]+(?:\s*,\s*(?:my|our)\s+[\w'-]+)*\s+(?:and|n|&)\s+(?:me|myself|i)\b",
    re.IGNORECASE,
)


#: How many the speaker's party is, said as so many "of us".
_OF_US = re.compile(r"\b([\w-]+)\s+of\s+us\b", re.IGNORECASE)
#: Each member of such a party but the speaker: "my wife", "our two sons".
_MEMBER = re.compile(r"\b(?:my|our)\s+([\w'-]+)", re.IGNORECASE)


def counts_people(param: ToolParamDefinition) -> bool:
    """Whether a numeric argument counts people ("How many people will use the room")."""
    said = f"{param.name} {param.description}".lower()
    return re.search("people|persons|guests|passengers|travellers|pupils", said) is not None


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
    return 1.0 if word.lower() in ("a", "an") else _number_said(word)


def _number_said(word: str) -> float | None:
    """The number a word spells: digits, or a number word ("seven", "twenty-five"); or None."""
    if _NUMBER.fullmatch(word):
        return float(word)
    return None if (n := _spelled(word.lower())) is None else float(n)


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


def singular(word: str) -> str:
    """A plural noun's singular, as far as counting needs ("dozens", "crates")."""
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


#: A count said against the last call's: "twice as long", "three times as many".
_TIMES = re.compile(
    r"\b(?P<factor>twice|two times|three times|thrice|half)\s+as\s+(?P<what>long|many|much)\b",
    re.IGNORECASE,
)
_FACTORS = {"twice": 2, "two times": 2, "three times": 3, "thrice": 3, "half": 0.5}


def against_last(line: str, param: ToolParamDefinition, last: float) -> float | None:
    """The count `line` says against the last call's `last` of `param`, or None: "twice as
    long" for a span of time, "twice as many" for a count of things."""
    times = _TIMES.search(line)
    if times is None or (times["what"].lower() == "long") != counts_time(param):
        return None
    value = last * _FACTORS[times["factor"].lower()]
    return round(value) if param.type == "integer" else value
