"""The arguments of a call the `score` decision chose (`decision`), one by one, each
chosen by the model among the values the line offers (`values`).

They are asked of one prompt: examples of calls written from player lines (an object, a count,
a message and its recipient, an urgent and an unhurried errand, a light put out and one lit),
the recent calls of this dialog in the same form, then the line and the call so far, as
``Call: tool(name=``. The examples are the same for every graph: they show the model how a
line becomes arguments, not what any game's tools are, so the tools' own examples (the tool
choice's prompt) are not needed here.

- **Booleans and enums** are scored and calibrated (`calibration`) among their values; a boolean
  gains from the words of its description's phrase for each value the line has ("true to light it,
  false to put it out", "true = ...; false = ...", a phrase running to the other value's; the tool's
  own words aside, and those of a clause the line denies counting for the other value: "I won't be
  returning", unless the phrase denies them too ("or has never been away from home"), and a name's
  words saying no side ("board Old Bess" against "for dogs that are nervous, old, ..."); a
  correction saying a side is that side: "Actually, make it properly hot."; a line denying it by
  name: "don't bar it" is false), any word that lights, opens or starts something matching another
  such word, and any that puts out, closes or stops something another ("Douse the lamp" says "put it
  out": `booleans.polar_words`), as any word that raises matches another, and any that lowers
  ("Bring the curtain down"), a side whose opposite one value's phrase says counting for the other
  ("keep the hood down" against "true to raise the hood"); a flag the line says nothing of keeps an
  earlier call's value, else takes its described default; and a flag of urgency ("true if it cannot
  wait") is what the line says outright ("No hurry", "right now": `calibration.says_urgent`), else
  how urgent it sounds (`calibration.urgency_margin`).
- **Strings** are spans of the line (one to four words, not across punctuation, not starting with
  the line's first word, not starting or ending with a filler word, a word of the tool's or its
  arguments' names or a value another argument declares, nor holding a number when the tool has a
  numeric argument; a possessive gives its owner: "Farmer Hobb"), followed greedily along the
  model's likeliest tokens. A message or an errand (a string whose name or description says so, but
  not whom it is for: "Who the message is for" is a name, nor "Where the message is sent to", a
  place) is a longer span, the clause after "that" or "saying" first, and never the words another
  argument of the call took; what a number counts comes right after it ("three bandages"), unless it
  is what a count of the tool is counted in ("One bottle." of oil for "How many bars, bottles, jars
  or flasks"), and the words right before the argument's own name are its value ("the galley
  locker"), and a thing's name ("The ship's name.") is capitalised ("the Sea Swallow"); the one the
  line is said to ("Put it on my tab, Ilse.") is no value; a name (not a message) takes the words
  describing it, back to its determiner ("some willow bark"), and a value that stops inside a
  capitalised name goes on to its end ("end of the North Mole"); a line that names nothing (but whom
  it is for: "And two more for my friend.") keeps an earlier call's value, and one that asks for
  more of the same ("And two more for Rosa's crew.") has only that value for an object, as has a
  correction ("Actually, make it urgent, he's hurt his leg.") that names no other after "make it"
  (and a flag it names is set: "make it urgent"), or names another argument's value there ("Make it
  brass and set it in a ring"); a proper name of several capitalised words ("the Widow's Seam") is
  taken whole by an object or a place, and so is a capitalised word after an article or a possessive
  ("the Prince", "our Gravedigger"); what the line turns down ("the oak chest, not the pine one") is
  no value, nor, for an object, what a reason clause says ("..., Ilsa sprained her ankle."); "Same
  for X" after a call gives X, not whom it is for, and "the same message" the last one. A number
  counts things, not a name, a person or a place ("Give Sorrel 3 scoops of oats" feeds Sorrel); a
  name said only as a place ("from Hollin Cross") gives way to another, and a sentence's capitalised
  subject ("Bramble looks half-starved.") is a name when the line has no other, and a name is all of
  it ("the Maiden of Corrow"), or the earlier call's if the line says none ("Send her to the dry
  dock instead."), and beside a place argument, "to" says whom and "in" or "at" where ("to Bashir
  the farrier in Port Sabra"); an owner is whose the line says something is ("The magistrate's
  horse"); a place (a string described by where it goes) is where the line sends something, all of
  its name ("to the Isle of Kerrow"); a message, or words to set down (a poster's wording, a book's
  title), is the words the line quotes, if it quotes any, or the sentence an order points at ("The
  bridge is shut. Cry it at the quay."), never the order to its carrier it goes on with ("..., and
  bring me back word"), and the earlier call's if the line's only words are whom it goes to ("Tell
  the Crimson Pike too.") or it changes or repeats the call ("No wait — give it out on the quay",
  "And the same to the churchwarden"). Every free-text value is the last call's where the line goes
  on from it to say how, in a flag's words, and names no one ("Oh, and have it wait for her
  answer."); whom it is for, where it names no one ("And my owl as well").
- **Enums** are chosen among the values the line names, as written or in words ("storm_warning":
  "the storm warning", "drydock": "the dry dock"), not among those it turns down ("the south
  bank, not the north"), else among those whose explanation in the description it names most
  ("dunes = east ... to Tal Harir": "sick in Tal Harir"), else an earlier call's value
  ("Actually, one way only."), else the one its description gives where none is named ("clear is
  the one to give when the visitor names no colour"), else among all.
- **Integers and numbers** are chosen among those the line spells (digits, number words, "a dozen",
  "a score", "both", "twice more", "two hundred and fifty"; for a count of days, nights or evenings,
  "a week", "another couple of nights", "two weeks" or "for the day", and a span of time is no count
  of things ("Three hours should do." is no number of guests); for one of hours, "an hour", "a
  couple of hours", "a whole day"; for one of minutes, "a quarter of an hour", "an hour and a half";
  for one of people, a party the line lists: "me and my wife"), not those it turns down ("four, not
  five") nor those inside a quote; "twice as long" as the last call is twice its span of time,
  "twice as many" twice its count; else 1 if it says "a" or "another" (not "a week", nor in a
  correction), else the value an earlier call gave, else 1. A correction's bare number is the call's
  first count ("Make that six." after four dockhands for two days), as is the number of one asking
  for more ("Add two more men to that."), the others keeping theirs unless it says their unit. One
  number is one count's (`count_values`): a later count whose every number an earlier one took has
  none, unless the line says it in its own unit ("my lads, four of them" is four pupils for one
  evening). A count the line does not say at all (no number, no "a", no earlier call) is listed as
  unread.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ....graph.params import ToolDefinition, ToolParamDefinition
from ....inference.base import ModelBackend
from ...dialog.projection import Interaction
from .calibration import (
    URGENCY_WEIGHT,
    best,
    calibrated_scores,
    is_urgency,
    prompt,
    says_unhurried,
    says_urgent,
    urgency_margin,
)
from .count_values import count_value
from .reading.booleans import (
    boolean_phrases,
    denied_clauses,
    described_default,
    described_value,
    explained,
    object_words,
    polar_words,
    said_sides,
    says_a_flag,
    says_value,
    unaccented,
)
from .reading.names import KIN, through_name
from .reading.numbers import (
    counts_time,
    is_count,
    singular,
)
from .reading.sentences import CORRECTION, PRONOUN, before_order, goes_on_unnamed
from .reading.strings import MESSAGE, Fill, is_message, string_values
from .reading.values import (
    FILLER,
    WORD,
    describes_person,
    earlier_values,
    enum_values,
    is_name,
    is_place,
    spelled,
    takes_person,
    unnegated,
    widened,
    words_of,
)
from .reading.words import WORDS_WEIGHT
from .tool_prompt import DIALOG_TURNS, EXAMPLES, last_exchange, recent_calls

__all__ = ["Arguments", "fill_arguments"]


@dataclass(frozen=True, slots=True)
class Arguments:
    """A call's arguments as the score decision filled them."""

    values: dict[str, object]
    #: Each scored argument's margin over its runner-up, in nats.
    margins: dict[str, float]
    #: The arguments the line (and the dialog) did not give, whose values are defaults.
    unread: tuple[str, ...]


async def fill_arguments(
    backend: ModelBackend,
    tool: ToolDefinition,
    line: str,
    dialog: Sequence[Interaction],
    agent_id: int,
) -> Arguments:
    """`tool`'s arguments for `line` after `dialog`, each after those before it."""
    header = EXAMPLES + recent_calls(dialog, tool)
    earlier = earlier_values(tool, dialog, DIALOG_TURNS)
    values: dict[str, object] = {}
    margins: dict[str, float] = {}
    unread: list[str] = []
    taken: set[str] = set()
    numbers_taken: tuple[object, ...] = ()
    call_text = f"\nCall: {tool.name}("
    # Words that name the tool are not its arguments ("open" in "open the iron gate"), nor
    # are the arguments' own names ("gold" is not the item of "12 gold for a dagger"); and a
    # number goes to a numeric argument rather than into a string.
    numeric = any(p.type in ("integer", "number") for p in tool.parameters)
    # Nor is a value another argument declares ("left" in "Put the dagger in my left hand").
    names = [tool.name, *(p.name for p in tool.parameters)]
    names += [v for p in tool.parameters for v in enum_values(p)]
    words = [w.lower() for n in names for w in WORD.findall(spelled(n))]
    avoid = frozenset(form for w in words for form in (w, w + "s", w.removesuffix("s")))
    counted = [p for p in tool.parameters if p.type in ("integer", "number")]
    units = frozenset(singular(w.lower()) for p in counted for w in WORD.findall(p.description))
    units -= FILLER | {"how"}
    # Going on from the last call naming no one keeps whose it is ("And my owl as well"); said
    # in a flag's words ("Oh, and have it wait for her answer."), all that call's free text.
    goes_on = goes_on_unnamed(line)
    keeps = goes_on and says_a_flag(tool, line)
    for i, param in enumerate(tool.parameters):
        end = ", " if i + 1 < len(tool.parameters) else ")"
        others = [p for p in tool.parameters if p is not param and p.type == "string"]
        fill = Fill(
            header, call_text, end, line, avoid, numeric,
            tuple(earlier.get(param.name, ())), frozenset(taken), tool.description, tool.name,
            later_count=param in counted[1:], counted=numbers_taken, units=units,
            spoken=last_exchange(dialog),
            time_elsewhere=any(counts_time(p) for p in counted if p is not param),
            place_elsewhere=any(is_place(p) for p in others),
            whom_elsewhere=any(is_name(p) or takes_person(p) for p in others),
        )  # fmt: skip
        free_text = param.type == "string" and not enum_values(param)
        keep = free_text and (keeps or (goes_on and takes_person(param)))
        kept = earlier.get(param.name) if keep else None
        value, read = (kept[-1], math.nan) if kept else await _fill(backend, fill, param, agent_id)
        if isinstance(value, str) and not enum_values(param):
            taken |= words_of(value) - FILLER
        if param in counted and is_count(value):
            numbers_taken += (value,)
        values[param.name] = value
        if read is None:
            unread.append(param.name)
        elif not math.isnan(read):
            margins[param.name] = round(read, 3)
        call_text += f"{param.name}={json.dumps(value)}{end}"
    return Arguments(values, margins, tuple(unread))


async def _fill(
    backend: ModelBackend, fill: Fill, param: ToolParamDefinition, agent_id: int
) -> tuple[object, float | None]:
    """One argument's value, by the rule for its declared type (module docstring), and its
    margin over the runner-up (nan: nothing to choose between; None: not read at all)."""
    header, end, line = fill.header, fill.end, fill.line
    opened = f"{fill.call_text}{param.name}="
    values: Sequence[object]
    enum = enum_values(param)
    if enum:
        line = unaccented(line)  # "the rosé" names `rose`
        # The values the line names, if any ("And this one into dwarvish" after an elvish
        # one): the model chooses among those, else among all.
        # What it turns down is not among them ("the south bank, not the north").
        said = [v for v in enum if says_value(v, line)]
        # Else those whose explanation in the description it names most ("dunes = east
        # across the deep sand to Tal Harir": "my brother is sick in Tal Harir"), else an
        # earlier call's ("Actually, one way only." keeps the dunes).
        said = said or explained(param.description, enum, line)
        # Else, for "him" or "it", the one the last exchange named ("Then give him four
        # portions." after "that'll be Bramble, our dancing bear").
        if not said and fill.spoken and PRONOUN.search(line):
            spoken = fill.spoken
            said = [v for v in enum if says_value(v, spoken)] or explained(
                param.description, enum, spoken
            )
        kept = [v for v in fill.earlier if v in enum]
        if not said and kept:
            return kept[-1], math.nan
        # Else the one its description gives where none is named ("... when no colour is named").
        if not said and (given := described_value(param.description, enum)) is not None:
            return given, None
        values = [v for v in said if says_value(v, unnegated(line))] or said or enum
        if len(values) == 1:
            return values[0], math.nan
    elif param.type == "boolean":
        values = (True, False)
        # What its description says each value means ("true to light it, false to put it out").
        phrases = boolean_phrases(param.description, fill.tool_description)
        # Its own name's words, and what the line says only to deny it ("won't be returning").
        flag = words_of(spelled(param.name))
        denied = denied_clauses(line)
        # A correction that names the flag says it: "Actually, make it urgent" is urgent,
        # "make it not urgent" is not, whatever the earlier call said.
        corrected = CORRECTION.search(line)
        said = [w.lower() for w in WORD.findall(corrected.group(1))] if corrected else []
        if spelled(param.name).lower() in said:
            return "not" not in said, math.nan
        # So does a line that denies it by name: "Shut the east gate, but don't bar it."
        if flag <= words_of(denied):
            return False, math.nan
        # So does one that says a side of it: "Actually, make it properly hot." against "true
        # means heat it as hot as the boilers allow".
        if corrected:
            sides = [polar_words(p, corrected.group(1)) for p in phrases]
            if sides[0] != sides[1]:
                return sides[0] > sides[1], math.nan
        # The words of its description's phrase for each value. The tool's own name is said
        # whichever value is meant ("Hire a guide", "Open a portal" for `keep_open`): a side is
        # told by the rest of its phrase, this argument's own name with it ("the person must be
        # brought in alive" for `alive_only`: "taken alive").
        # Nor do the words of what the tool does to what ("the bird" of a messenger bird).
        heard = re.sub(fill.tool_name_pattern, "thing", line, flags=re.IGNORECASE)
        avoid = fill.avoid - flag | object_words(fill.tool_description, flag)
        named, heard = said_sides(phrases, denied, heard, param.description, avoid)
        # A flag the line says nothing of, not even its name (every word of it but "for"...),
        # keeps an earlier call's value ("so three of us" after a portal), else is the default
        # its description names ("false (the default) if they just deliver it").
        default = described_default(param.description)
        name = flag - FILLER
        unsaid = not any(named) and not (name and name <= words_of(heard))
        if unsaid and not is_urgency(param) and (fill.earlier or default is not None):
            return (fill.earlier[-1], math.nan) if fill.earlier else (default, None)
        # A line that says outright how urgent it is says so: "No hurry, but...", "Cry it
        # right now".
        if is_urgency(param) and says_unhurried(line):
            return False, math.nan
        if is_urgency(param) and says_urgent(line):
            return True, math.nan
    if param.type == "boolean" or enum:
        choices = [f"{json.dumps(v)}{end}" for v in values]
        # Calibrated on the examples alone: the value an earlier call gave stays likelier
        # ("And four more." after the eggs: eggs), as it is for the model.
        scores = await calibrated_scores(
            backend, header, opened, choices, line, agent_id, calibrate_on=EXAMPLES
        )
        if param.type == "boolean":
            scores = [s + WORDS_WEIGHT * w for s, w in zip(scores, named, strict=True)]
            if is_urgency(param):  # how the line would be answered: "At once!" or "Later."
                scores[0] += URGENCY_WEIGHT * await urgency_margin(backend, line, agent_id)
        chosen, margin = best(scores)
        return values[chosen], margin
    if param.type == "string":
        spans = string_values(fill, param)
        if is_message(param, MESSAGE):  # not the order to its carrier it goes on with
            spans = list(dict.fromkeys(before_order(v) for v in spans))
        if len(spans) < 2:
            if not spans:
                return "", None
            return _finished(fill, param, spans[0]), math.nan
        choices = [f"{json.dumps(v)[1:]}{end}" for v in spans]
        text = prompt(header, line, opened + '"')
        scores = await backend.score_choices(text, choices, greedy=True, agent_id=agent_id)
        chosen, margin = best(scores)
        # A message keeps its span; an object described as "What was lost" takes the words
        # describing it ("my son's toy boat"), as any object does, but words another argument
        # took ("son" in "My son has a fever").
        if is_message(param, MESSAGE):
            return spans[chosen], margin
        value = widened(line, spans[chosen], fill.avoid | fill.taken, fill.numeric)
        return _finished(fill, param, value), margin
    return await count_value(backend, fill, param, opened, agent_id)


def _finished(fill: Fill, param: ToolParamDefinition, value: str) -> str:
    """A string argument's `value` as chosen, made whole: all of a name it stops inside, what
    the tool calls the thing after it (`_with_tool_noun`), and a person without the "'s" of
    what is theirs ("my cousin Ysolde's wedding": "cousin Ysolde")."""
    value = _as_person(param, value, fill.line)
    return _with_tool_noun(fill, param, through_name(fill.line, value))


def _as_person(param: ToolParamDefinition, value: str, line: str) -> str:
    """`value` without the "'s" of what is theirs, for an argument that names a person."""
    if not (takes_person(param) or describes_person(param)):
        return value
    owner = value.removesuffix("'s")  # and one of theirs is "Lady Anwen's page"
    theirs = re.search(rf"(?<![\w'-]){re.escape(owner)}'s\s+{KIN}\b", line, re.IGNORECASE)
    return theirs.group(0) if theirs else owner


def _with_tool_noun(fill: Fill, param: ToolParamDefinition, value: str) -> str:
    """`value` with what the tool's name calls the thing, where the line says it right after:
    "treasure map" in "this treasure map" for the map `copy_map` copies (not where the
    argument is named by it: "the tower door" says which door `open_door` opens)."""
    if is_message(param, MESSAGE):
        return value
    kind = words_of(spelled(fill.tool_name)) - words_of(spelled(param.name))
    after = re.search(rf"(?<![\w'-]){re.escape(value)}\s+([\w'-]+)(?![\w'-])", fill.line)
    if after is not None and after.group(1).lower().removesuffix("s") in kind:
        return after.group(0)
    return value
