"""The words a player's line shares with each tool's declaration: evidence for the `score`
decision's choice of tool (`decision`).

A small model's likelihood of a tool's label hardly moves with the line ("Bring me two books"
scores "fetch books" no higher than "N/A" does on the default model), while players name what
they want: the books, the horseshoes, the days. So each tool has the words of its name,
description, parameters and their values, stemmed ("horseshoes" and "horseshoe" are one), and
a line scores, per tool, the words it shares with it, each weighted by how few of the tools
have it (a word every tool has tells them apart no better than none).

What a line counts tells as much: "Hand me 2 torches" names the tool that lights the torch,
yet asks for a count of torches, which only a tool with a count and an object to count takes.
So a counted noun is a word of the tools that can take a count of it (`counted_words`), those
with a numeric argument counted in it ("two nights") or, failing any, those with a numeric
argument and an object argument the noun can fill.

Not every word of a description says what the tool does: in "Carry goods or animals across on
the ferry" or "Open the crossing to boats", the words after a preposition say where or with
what it acts, so they count half (a player shutting the ferry down is not shipping cargo).
Nor does a boolean's condition ("true if the message must go at once": when it is true):
its words are none of the tool's ("blow the foghorn once" sends no pigeon). Nor do the words
of a name of two or more capitalised words after "the" ("Log the Sea Swallow": no sea).

A line that names someone ("Let Elsa know I'll be late": a capitalised word inside the line,
none of the tools' words, not after "the": "the Sea Lark" is a ship) is evidence for the
tools that take a person, a free-text argument described as who ("Who gets the message."):
`people_words`.

A line that opens with a tool's own verb as it is written ("Walk north." for a tool described
"Walk the party in a direction", not "Crafting is my hobby") is an order: `opens_with_verb`;
so is a line that counts what a tool counts in, verb or not ("Foghorn, 5 blasts."):
`counts_in_units`.

A tool a line names only to refuse it ("Don't open anything", "Don't bother fetching Marta")
is not asked for: `refuses`.

What a line asks to be carried somewhere tells too. Players send word and people in their own
words: "Let the Sea Lantern know her cargo has been sold." names no word of a tool that "Sends
a message by signal flags", and "Get a dozen of my men across to Highcliff Harbour" none of
one that "Books places for travellers". What they ask is still plain: words passed on are a
message, so the tools that take one (`telling_words`); someone or something sent to a named
place goes there, so the tools that take a place (`place_words`). Each weighs as a word that
only those tools have (`takers_evidence`, as the people a line names do).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

import snowballstemmer

from .....graph.params import ToolDefinition, ToolParamDefinition
from .numbers import COUNTS, DAY_SPANS, TIME_UNITS, counts_days, is_number, singular
from .sentences import past_leading
from .strings import MESSAGE
from .values import (
    FILLER,
    SENTENCE_WORDS,
    WORD,
    counted_nouns,
    describes_person,
    enum_values,
    is_name,
    is_place,
    is_sentence,
    spelled,
    takes_person,
    value_words,
    words,
)

__all__ = [
    "STEMMER",
    "WORDS_WEIGHT",
    "counted_words",
    "counts_in_units",
    "opens_with_count",
    "opens_with_verb",
    "people_words",
    "place_words",
    "refuses",
    "shared_words",
    "takers_evidence",
    "telling_words",
    "word_stems",
]

#: Nats a choice gains per word it alone shares with the line: most of a label's own lead.
WORDS_WEIGHT = 2.0

#: Words that say nothing of what a tool is for: filler, particles of phrasal verbs ("hire
#: out", "put out"), and the words boolean parameters are described with.
_SILENT = FILLER | frozenset(
    [
        *words("out up off down over away back true false them someone something one many few"),
        *words("set get e.g"),
        # Auxiliaries: "someone who has died" says nothing of a line's "has taken a bad fall".
        *words("has had was were been"),
        # What any request may say ("I'd like..."): no word of one tool or value.
        "like",
        # Where, not what: "behind the tavern" asks nothing of "the door behind the barracks".
        *words("behind beside across along around through toward towards under beneath"),
        *words("between inside outside near beyond within"),
    ]
)
#: Words that make a string argument a message, not an object: "What to buy" is an object.
_MESSAGE = SENTENCE_WORDS - {"what"}
STEMMER = snowballstemmer.stemmer("english")
#: Words that open a phrase of where or with what a tool acts ("across on the ferry", "to
#: boats"); punctuation, "and" or "or" end it.
_SETTING_OPENERS = frozenset(
    words("on to from for in into at across of with by about through over under")
)
#: What a word of such a phrase counts, against one that says what the tool does.
_SETTING_WEIGHT = 0.5
_CLAUSE_END = re.compile(r"[,.;:!?()]")
#: A boolean's condition ("true if the message must go at once"): it says when the value is
#: true, not what the tool does ("blow the foghorn once" is no pigeon).
_CONDITION = re.compile(r"\b(?:if|when|unless)\b[^,;.]*", re.IGNORECASE)
#: Two or more capitalised words after "the": a name ("the Sea Swallow").
_TITLE = re.compile(r"\bthe\s+([A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)+)")
#: Capitalised words that name no one.
_NOT_PEOPLE = frozenset(["I", "I'm", "I'll", "I'd", "I've"])
#: A negated verb: "don't open", "do not bother fetching", "never send".
_REFUSAL = re.compile(
    r"\b(?:don't|do not|dont|never|no need to)\s+(?:bother\s+)?([\w'-]+)", re.IGNORECASE
)


def shared_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of the words `line` shares with its declaration (module
    docstring): each shared stem adds log((tools + 1) / tools that have it)."""
    vocabularies = [_vocabulary(tool) for tool in tools]
    said = word_stems(line) - word_stems(" ".join(_titles(line)))
    weights = []
    for vocabulary in vocabularies:
        weight = 0.0
        for stem in said & vocabulary.keys():
            having = sum(stem in other for other in vocabularies)
            weight += math.log((len(tools) + 1) / having) * vocabulary[stem]
        weights.append(weight)
    return weights


def people_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of the people `line` names (module docstring): if it names
    someone, log((tools + 1) / tools that take a person) to each tool that takes one."""
    known = set().union(*(_vocabulary(tool) for tool in tools))
    said = any(not word_stems(name) & known for name in _names(line))
    return takers_evidence(tools, said, takes_person)


def takers_evidence(
    tools: Sequence[ToolDefinition], said: bool, takes: Callable[[ToolParamDefinition], bool]
) -> list[float]:
    """Per tool, if the line `said` what an argument that `takes` is for: log((tools + 1) /
    tools with such an argument) to each of those tools, as a word only they have weighs."""
    takers = [i for i, tool in enumerate(tools) if any(takes(p) for p in tool.parameters)]
    weights = [0.0] * len(tools)
    if said and takers:
        for i in takers:
            weights[i] = math.log((len(tools) + 1) / len(takers))
    return weights


def refuses(tool: ToolDefinition, line: str) -> bool:
    """Whether `line` negates a verb of `tool`'s ("Don't bother fetching Marta" for a tool
    that fetches someone): it refuses the tool rather than asks for it. What the tool does is
    in its name and description: a word of its arguments' only ("Shut the east gate, but
    don't bar it." for a gate's `bar` flag) says how, not whether."""
    declared = f"{spelled(tool.name)} {tool.description}"
    # Not what the tool's own words deny: "a parcel ... that never arrived" is what it files a
    # report for, and "My parcel never arrived" asks for it.
    denied = {stem for m in _REFUSAL.finditer(declared) for stem in word_stems(m.group(1))}
    verbs = word_stems(declared) - denied
    return any(
        word_stems(m.group(1)) & verbs for m in _REFUSAL.finditer(line.replace("\u2019", "'"))
    )


def opens_with_verb(tools: Sequence[ToolDefinition], line: str) -> bool:
    """Whether `line`'s first word is, as written, the first word of a tool's name or
    description (its verb: "Test these mushrooms." for test_sample)."""
    # After a word that only softens or times it ("Just wash these shirts").
    first = past_leading(WORD.findall(line))[:1]
    if not first:
        return False
    verbs: set[str] = set()
    for tool in tools:
        for text in (spelled(tool.name), tool.description):
            verbs.update(w.lower() for w in WORD.findall(text)[:1])
    return first[0].lower() in verbs


def _titles(line: str) -> list[str]:
    """The words of the names of two or more capitalised words after "the" in `line` ("the
    Sea Swallow", "the Northern Star"): a ship's or an inn's name, whose words say nothing of
    what is asked (no sea in "Log the Sea Swallow")."""
    found: list[str] = []
    for run in _TITLE.finditer(line):
        found += run.group(1).split()
    return found


def _names(line: str) -> list[str]:
    """The capitalised words of `line` that open no sentence: names, mostly. A name that
    follows "the" ("the Sea Lark", "the Brave Anna") is a ship's, an inn's or a place's: a
    person's name takes no article."""
    found = []
    for clause in re.split(r"[.!?]+\s*", line):
        said = WORD.findall(clause)
        thing = False  # within a name "the" opened
        for before, word in itertools.pairwise(said):
            if not (word[:1].isupper() and word not in _NOT_PEOPLE and word.isalpha()):
                thing = False
                continue
            thing = before.lower() == "the" or (thing and before[:1].isupper())
            if not thing:
                found.append(word)
    return found


def counted_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of what `line` counts ("2 torches") that the tool can take as a
    count of it: each counted noun adds log((tools + 1) / tools that take it) to those.

    A tool takes a counted noun if it has a numeric argument and either that argument counts
    in the noun ("for two nights", "30 gold") or the noun can fill another argument, an object
    (a free-text one, or an enum with the noun among its values). Where some tool counts in
    the noun, only those take it: "two nights" is no object to hand over."""
    weights = [0.0] * len(tools)
    for noun in counted_nouns(line):
        stems = word_stems(" ".join(noun))
        if not stems:
            continue
        units = [i for i, tool in enumerate(tools) if _counts_in(tool, noun, stems)]
        if not units and singular(noun[0]) in TIME_UNITS:  # "for three days": how long, no thing
            continue
        takers = units or [i for i, tool in enumerate(tools) if _takes_object(tool, stems)]
        for i in takers:
            weights[i] += math.log((len(tools) + 1) / len(takers))
    return weights


def counts_in_units(tools: Sequence[ToolDefinition], line: str) -> bool:
    """Whether `line` counts something a tool's numeric argument counts in ("Foghorn, 5
    blasts." for a tool taking how many blasts, "Berth for 2 days." for one counted in days):
    what an order without a verb says."""
    for noun in counted_nouns(line):
        stems = word_stems(" ".join(noun))
        if stems and any(_counts_in(tool, noun, stems) for tool in tools):
            return True
    return False


def opens_with_count(tools: Sequence[ToolDefinition], line: str) -> bool:
    """Whether `line` opens with a count of what a tool counts in, no verb before it ("One jar
    of honey", "A couple of casks of white for Reeve Aldous, then", "Half a dozen, please";
    not "My old nag ate three scoops of oats a day"): an order without a verb."""
    said = [w.lower() for w in WORD.findall(line)[:3]]
    counted = bool(said) and (
        is_number(said[0]) or (said[0] in ("a", "half") and any(w in COUNTS for w in said[1:]))
    )
    return counted and counts_in_units(tools, line)


def _numeric(tool: ToolDefinition) -> list[ToolParamDefinition]:
    return [p for p in tool.parameters if p.type in ("integer", "number")]


def _counts_in(tool: ToolDefinition, noun: tuple[str, ...], stems: frozenset[str]) -> bool:
    """Whether a numeric argument of `tool` counts in `noun` ("nights": "How many nights"; a
    week or a day: an argument in days or nights)."""
    for param in _numeric(tool):
        if stems & word_stems(f"{param.name} {param.description}"):
            return True
        if counts_days(param) and any(w.removesuffix("s") in DAY_SPANS for w in noun):
            return True
    return False


def _takes_object(tool: ToolDefinition, stems: frozenset[str]) -> bool:
    """Whether `tool` takes a count of something the noun (`stems`) can be: it has a numeric
    argument and an object argument, free text or an enum among whose values the noun is."""
    if not _numeric(tool):
        return False
    for param in tool.parameters:
        values = enum_values(param)
        if values and stems & word_stems(" ".join(values)):
            return True
        # Not a name nor a person: a number counts things, not whose they are.
        whose = is_name(param) or takes_person(param) or describes_person(param)
        if param.type == "string" and not (values or whose or is_sentence(param, _MESSAGE)):
            return True
    return False


def _vocabulary(tool: ToolDefinition) -> dict[str, float]:
    """The stems of `tool`'s declaration, each with what it counts: 1, or `_SETTING_WEIGHT`
    where the description has it only in a phrase of where or with what the tool acts."""
    parts = [tool.name.replace("_", " ")]
    for param in tool.parameters:
        said = param.description
        if param.type == "boolean":  # "true if the message must go at once": when, not what
            said = _CONDITION.sub("", said)
        values = enum_values(param)  # as written and in words ("storm_warning": storm)
        parts += [param.name.replace("_", " "), said, *values, *map(value_words, values)]
    vocabulary = dict.fromkeys(word_stems(" ".join(parts)), 1.0)
    for clause in _CLAUSE_END.split(tool.description):
        setting = False
        for word in WORD.findall(clause):
            low = word.lower()
            if low in ("and", "or") or low in _SETTING_OPENERS:
                setting = low in _SETTING_OPENERS
                continue
            weight = _SETTING_WEIGHT if setting else 1.0
            for stem in word_stems(word):
                vocabulary[stem] = max(vocabulary.get(stem, 0.0), weight)
    return vocabulary


@lru_cache(maxsize=4096)  # the tools' texts come back at every decision
def word_stems(text: str, keep: frozenset[str] = frozenset()) -> frozenset[str]:
    """The stems of `text`'s telling words (`keep`: silent words that tell here)."""
    return frozenset(
        STEMMER.stemWord(low)
        for word in WORD.findall(text)
        if (low := word.lower()) in keep or (len(low) > 2 and low not in _SILENT)
    )


#: A line asking to pass words on: "tell them", "let X know", "send word", "warn the guard"
#: (not "tell me", "let me know").
_TELLS = re.compile(
    r"\b(?:tell|warn|inform)\s+(?!me\b|us\b)\w|\blet\s+(?!me\b|us\b)(?:[\w'-]+\s+){1,4}know\b"
    r"|\bsend\s+(?:word|news)\b|\bpass\s+(?:it\s+)?(?:on|along)\b",
    re.IGNORECASE,
)
#: A line sending someone or something to a named place: "across to Highcliff Harbour",
#: "bound for Port Amberly", "ride to Kell's Ferry", "we need to reach Wren's Crossing".
_SENDS_TO = re.compile(r"\b(?:to|towards?|bound\s+for|reach)\s+(?:the\s+)?[A-Z]")


def telling_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of a line asking to pass words on (module docstring) for the
    tools that take a message."""
    return takers_evidence(
        tools, _TELLS.search(line) is not None, lambda p: is_sentence(p, MESSAGE)
    )


def place_words(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, the weight of a line sending something to a named place (module docstring)
    for the tools that take a place."""
    return takers_evidence(tools, _SENDS_TO.search(line) is not None, is_place)
