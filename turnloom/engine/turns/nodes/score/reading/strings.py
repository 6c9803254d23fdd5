"""Which spans of a player's line a free-text argument may take, for the `score` decision's
arguments (`arguments`, whose docstring gives the rules): the candidates of `values.spans`,
narrowed by what the line says of them (a quote, a message's clause, a correction, more of the
same, a proper name or a title, whom something is for, a reason, the name the line is said to,
a place, an owner, a sentence's subject).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .....graph.params import ToolParamDefinition
from .names import (
    DESCRIBED,
    KIN,
    LET_KNOW,
    PLACE_ENDS,
    PLACES,
    POINTED,
    WAS_AT,
    WHEN,
    WITHIN,
    capitalised,
    in_reason,
    is_for_whom,
    is_inside,
    is_kin,
    is_owner,
    is_placed,
    is_proper,
    is_titled,
    owns,
    people_said_whole,
    proper_names,
    said_route,
    starts_longer,
    starts_with,
    subjects,
    verb_led,
    with_kind,
    with_noun,
    with_street,
)
from .numbers import singular
from .quotes import is_worded, quoted
from .sentences import (
    CORRECTION,
    POINTED_BACK,
    asked_order,
    asks_same,
    labelled,
    pointed_at,
    redoes,
    said_as,
)
from .values import (
    MORE,
    SENTENCE_WORDS,
    WORD,
    after_numbers,
    clauses,
    declared_words,
    describes_person,
    is_name,
    is_place,
    is_sentence,
    singular_words,
    spans,
    spelled,
    takes_person,
    unnegated,
    words_of,
)

__all__ = ["MESSAGE", "SAME_FOR", "Fill", "is_message", "string_values"]

#: Words that make a string argument a message rather than an object ("What to carry" is one).
MESSAGE = SENTENCE_WORDS - {"what"}
#: A line that does again what the last call did for another ("Same for the Gravedigger.",
#: "The same for Hollis."): what follows "for" is the argument, not whom it is for.
SAME_FOR = re.compile(r"\b(?:the\s+)?same\s+(?:again\s+)?for\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Fill:
    """Where an argument is filled: the prompt's parts, what follows the value, the line."""

    header: str
    call_text: str
    end: str
    line: str
    #: Words a string value should not start or end with.
    avoid: frozenset[str]
    #: Whether numbers stay out of string values (the tool has a numeric argument).
    numeric: bool
    #: The values earlier calls of the tool gave this argument, oldest first.
    earlier: tuple[object, ...] = ()
    #: Words the call's earlier string arguments took (a recipient is not the message).
    taken: frozenset[str] = frozenset()
    #: The tool's description (what a boolean's values mean, where its own says one side).
    tool_description: str = ""
    #: The tool's name ("open_portal").
    tool_name: str = ""
    #: Whether a count argument comes after the tool's first one (a correction's is the first's).
    later_count: bool = False
    #: The numbers the call's earlier counts took (`count_values`: one number, one count).
    counted: tuple[object, ...] = ()
    #: Whether another argument of the tool counts time (a span of time is its number).
    time_elsewhere: bool = False
    #: The words the tool's counts say they are counted in ("How many bars, bottles, jars or
    #: flasks."), singular: what a number counts there is no object.
    units: frozenset[str] = frozenset()
    #: Whether another argument of the tool is a place ("to" then says whom).
    place_elsewhere: bool = False
    #: Whether another argument of the tool is whom something is for ("in" then says where).
    whom_elsewhere: bool = False
    #: What the last exchange of the dialog said (the player's line, then the replies): whom
    #: "him" or "her" is ("Sergeant Bram and his lads.").
    spoken: str = ""

    @property
    def tool_name_pattern(self) -> str:
        """The tool's name as a line says it: its words in order, up to two others between them
        ("Open a portal" for "open_portal")."""
        said = [re.escape(w) for w in WORD.findall(spelled(self.tool_name))]
        return r"\b" + r"(?:\W+[\w'-]+){0,2}?\W+".join(said) + r"\b"


def string_values(fill: Fill, param: ToolParamDefinition) -> list[str]:
    """What a string argument is chosen among: spans of the line (longer for a message or an
    errand, with the clause a message verb introduces first), not the words another argument
    of the call took, then the values earlier calls gave it."""
    sentence = is_message(param)
    message = is_message(param, MESSAGE)  # "What to carry" is a sentence, not a message
    # What a line quotes (or gives after a colon or what the description calls it: "the words
    # Happy Name-Day, Pell") is the message (not whom it is for), or the words to set down.
    declared = declared_words(param)
    said = (sentence or is_worded(param)) and not describes_person(param)
    if said and (given := quoted(fill.line) or labelled(fill.line, declared)):
        return given
    # Or the sentence an order points at: "The bridge is shut. Cry it at the quay."
    if said and message and (sentence_told := pointed_at(fill.line, fill.avoid)):
        return [sentence_told]
    if order := asked_order(param.description, fill.line):  # "take in these trousers"
        return [order]
    longest = 8 if sentence else 4
    found = spans(fill.line, fill.avoid, fill.numeric, longest, strict=True)
    if not sentence:
        # A thing, a name or a place does not start with what the tool counts in ("thirty gold
        # on the boar", "Forty crowns is all I have" for a reward in gold crowns), nor start or
        # end with when ("the charcoal burners' camp tonight"); nor is a place a verb and its
        # object ("to see the old watchtower").
        place = is_place(param)
        found = [v for v in found if not _loosely_cut(fill.line, v, fill.units, place)] or found
    # Nor a declared value said in two words ("the dry dock" for "drydock").
    found = [v for v in found if "".join(WORD.findall(v)).lower() not in fill.avoid]
    # The one the line is said to is not what it asks for: "Put it on my tab, Ilse." is said
    # to the shopkeeper.
    found = [v for v in found if not _addressed(fill.line, v, param.name)]
    # Nor what it turns down: "the oak chest, not the pine one".
    asked = unnegated(fill.line)
    found = [v for v in found if v in asked] or found
    # Nor, for an object, what a reason clause says ("Call the understudy for Lady Morwen,
    # Ilsa sprained her ankle."): a message may be one ("Tell her, we're ready"). A line whose
    # every candidate says why names nothing ("And two more for him, he's still hungry."):
    # the earlier call's value stays.
    reasons_only = False
    if not message:
        unreasoned = [v for v in found if not in_reason(fill.line, v)]
        reasons_only = bool(found) and not unreasoned
        found = unreasoned or found
    # A correction changes what it names after "make it" ("Actually, make it urgent, he's hurt
    # his leg."): the rest of the earlier call stays ("Tomas"), whatever the reason says.
    kept = [v for v in fill.earlier if isinstance(v, str) and v]
    # So do the words to relay of a line that changes or repeats the call ("No wait — give it
    # out on the quay", "And the same to the churchwarden"), unless it relays new ones.
    person = takes_person(param) or describes_person(param)
    redone = message and not person and redoes(fill.line) and not clauses(fill.line)
    if kept and (redone or asks_same(fill.line, param.name, message)):
        return kept[-1:]
    corrected = CORRECTION.search(fill.line)
    if corrected and kept:
        found = [v for v in found if v in corrected.group(1)]
        # Nor does one that names another argument's value ("Make it brass and set it in a ring").
        if not found or corrected.group(1).split()[0].strip(",").lower() in fill.avoid:
            return kept[-1:]
    # What an earlier call gave is kept only when the line names nothing itself, but whom
    # it is for: "And two more." and "And two more for my friend." keep the ale, "And pay
    # Sal the same." pays Sal.
    # "Same for X" does it again for X: X is the value ("Same for the Gravedigger.").
    same = SAME_FOR.search(fill.line) is not None
    named = found if same else [v for v in found if not is_for_whom(fill.line, v)]
    # More of the same is more of an earlier object, not of whom it is for: "And two more for
    # Rosa's crew." hands out the pickaxes again; a person or a name is the one it is for, if
    # the line names one ("Do the same for Hollis.", not "two more for him"), and no earlier
    # call's ("And one for my sister Wenna too.").
    a_name, a_place = is_name(param), is_place(param)
    whom = a_name or takes_person(param)
    for_whom = [v for v in found if v not in named] if not reasons_only else []
    someone = (whom or describes_person(param)) and for_whom
    # Nor a place, where the line says where ("he's at the market square. Send them there").
    anew = a_place and any(
        is_placed(fill.line, v) and not _loosely_cut(fill.line, v, fill.units, True) for v in found
    )
    # A line that says no place, nor names one, goes where the last call went ("And we'll
    # want him to bring us back too."; "My brother Edric wants one too" names a person).
    named_anew = [v for v in found if capitalised(fill.line, v)]  # "my brother Finn" too
    names = [v for v in named_anew if not is_kin(fill.line, v)]
    # "Same again for my sister Wenna" names where anew.
    if a_place and kept and not anew and not names and not corrected and not same:
        return kept[-1:]
    # A person the line points back at is the last call's ("Actually, put her in the vats
    # instead.").
    if whom and kept and POINTED_BACK.search(fill.line) and not named_anew and not same:
        return kept[-1:]
    earlier = [] if ((named or someone) and not reasons_only) or anew else kept
    earlier = [] if corrected and found else earlier  # "Sorry, I meant the west field"
    # A change to the last call that points back at its thing ("On second thought, smoke it
    # instead", "Actually, raise that to twenty-five") may mean the same thing as before.
    if kept and not (message or whom or a_place) and _POINTS_BACK.search(fill.line):
        earlier = kept
    if earlier and MORE.search(fill.line) and not message:
        return list(dict.fromkeys(earlier))
    found = found or spans(fill.line, fill.avoid, fill.numeric, longest)
    if sentence:
        # A message is the clause a message verb introduces, where the line has one ("let Old
        # Tobin know his grandson arrived safe"): the model may prefer a word before it.
        relayed = clauses(fill.line)
        if message and relayed and not (whom or describes_person(param)):
            return relayed
        found = [*relayed, *found]
    # What a number counts comes right after it ("three bandages", "Two coils, please."), for
    # an object described as what ("What to hand out") as for any object, not a message, nor a
    # name or a person: a number counts things, not whom they are for ("Give Sorrel 3 scoops
    # of oats" feeds Sorrel).
    if fill.numeric and not message and not (whom or a_place):
        # Not what the count is counted in ("One bottle.", "5 flasks" for a count of "bars,
        # bottles, jars or flasks"): the thing is the oil.
        found = [v for v in found if not singular_words(v) <= fill.units] or found
        counted = [fill.line[at:] for at in after_numbers(fill.line)]
        found = [v for v in found if any(starts_with(rest, v) for rest in counted)] or found
    # A place is where the line sends something ("to the Isle of Kerrow", "bound for Port
    # Amberly"), all of its name ("of" may be in it, not "with": "to Ashford with word"): not a
    # word that starts a longer one.
    if a_place:
        # A route is where it goes from and to: "a road map from Brinehaven to Kessel Ford".
        route = said_route(fill.line) if "route" in declared else ""
        if route:
            return [route]
        placed = [v for v in found if is_placed(fill.line, v) and not PLACE_ENDS & words_of(v)]
        # Beside whom it is for, "to" says whom and "in" or "at" where ("Same message to
        # Bashir the farrier in Port Sabra.").
        if fill.whom_elsewhere:
            placed = [v for v in placed if is_placed(fill.line, v, WITHIN)] or placed
        # All of its name, but no more than a name said capitalised: "to Mossbank Falls first
        # thing" goes to Mossbank Falls.
        placed = [o for o in placed if not any(_runs_on(fill.line, v, o) for v in placed)]
        found = [v for v in placed if not any(starts_longer(o, v) for o in placed)] or found
        # A place goes on with the kind of place it is and the street or the quarter it is
        # in: "the Saltmarsh lighthouse", "the fish market on Cobble Lane".
        found = [with_street(fill.line, with_kind(fill.line, v)) for v in found]
    # A proper name of two or more capitalised words ("the Widow's Seam", "Harrow's Cut", "the
    # Sea Lark") names one thing the line is about: an object takes it whole, not a word
    # beside it ("out", "silver"). Not a message, nor a person (a recipient "Ella in Port
    # Hollin"), nor a name after "for" or "to", nor one another argument took.
    elif not message and not takes_person(param):
        # Where a place argument takes the place ("in Port Sabra"), this one takes another;
        # a person is no place ("Black Jory robbed my uncle on the King's Road").
        person = describes_person(param)
        proper = [v for v in found if is_proper(fill.line, v) and not fill.taken & words_of(v)]
        if fill.place_elsewhere or person:
            within = WAS_AT if person else WITHIN
            proper = [v for v in proper if not is_placed(fill.line, v, within)]
        found = proper or found
        # So does a capitalised word after an article or a possessive, a title or a name
        # ("the Prince", "our Gravedigger"), not a person's name (which takes none), and not
        # where the thing goes ("to the Mill").
        if not person:
            found = [v for v in found if is_titled(fill.line, v)] or found
            # A name that says which one or where is said with what it is of: "this old map
            # of the Saltmarsh Road", "the orchard on Brindle Hill".
            found = list(dict.fromkeys(with_noun(fill.line, v) for v in found))
    # An owner is the one the line says something is of: "The magistrate's horse", "board
    # mistress odile's mare".
    if is_owner(param):
        found = [v for v in found if owns(fill.line, v)] or found
    # Whom the line asks to be told is the one: "let Mistress Harrow at the bakery know".
    if takes_person(param) and (told := LET_KNOW.search(fill.line)) is not None:
        return [told.group(1).strip()]
    # One the line calls "him" or "her" ("Then send a runner to him.") and names no one
    # itself is the one the last exchange named ("Sergeant Bram and his lads.").
    pointed = whom and fill.spoken and POINTED.search(fill.line)
    if pointed and not any(capitalised(fill.line, v) for v in found):
        before = proper_names(fill.spoken, fill.avoid)
        if before:
            return before
    # A name ("The ship's name.") is written capitalised: "the Sea Swallow", not "sister"
    # in "her sister ship"; not where something comes from or goes ("from Hollin Cross"). A
    # name that opens a sentence is one its verb follows ("Bramble looks half-starved.",
    # "Captain's running"), where an order opens with its verb ("Give him...").
    if a_name:
        named = [v for v in found if capitalised(fill.line, v)]
        # Beside a place argument, "to" says whom: "Same message to Bashir in Port Sabra."
        places = WITHIN if fill.place_elsewhere else PLACES
        placed = [v for v in named if is_placed(fill.line, v, places)]
        unplaced = [
            v for v in named if v not in placed and not any(is_inside(v, o) for o in placed)
        ]
        # All of a name, not a word of it: "the Maiden of Corrow", not "Maiden".
        unplaced = [v for v in unplaced if not any(is_inside(v, o) for o in unplaced)]
        written = unplaced or subjects(fill.line, fill.avoid) or named
        # A line that names no one describes them: "for whoever's been stealing horses".
        written = written or [m.group(0).strip() for m in DESCRIBED.finditer(fill.line)]
        # A line that names none ("Send her to the dry dock instead.") means the last one.
        if not written and kept:
            return kept[-1:]
        found = written or found
    # A span right before the argument's own name is its value: "the galley locker" says
    # which locker, "the north door" which door. A person is said whole ("my husband Bram").
    found = [v for v in found if _names(fill.line, v, param.name)] or found
    found = people_said_whole(fill.line, param, found, fill.taken)
    if fill.taken:
        free = [v for v in found if not fill.taken & words_of(v)]
        if not free and kept:  # "Tell the Crimson Pike too.": only whom, the message as before
            return kept[-1:]
        found = free or found
    return list(dict.fromkeys([*found, *earlier]))


def _addressed(line: str, value: str, name: str) -> bool:
    """Whether `value` is a name `line` is said to: capitalised, closing a sentence after a
    comma ("Put it on my tab, Ilse.", "Two more, Hilda!"); not one that names what the words
    before the comma are, the argument's own thing ("the other pack horse, Old Tam." for a
    "horse", "the white one, Son of the Wind.") or someone's kin ("her sister, Wenna
    Orrey.")."""
    said = rf",\s*{re.escape(value)}\s*(?:[.!?]|$)"
    if not value[:1].isupper() or re.search(said, line) is None:
        return False
    thing = said_as(name)
    # "the white one, Son of the Wind.": "one" stands for the thing too; "her sister, Wenna
    # Orrey." names the sister.
    things = rf"(?:{re.escape(thing)}s?|one|{KIN})" if thing else f"(?:one|{KIN})"
    return re.search(rf"\b{things}{said}", line, re.I) is None


def is_message(param: ToolParamDefinition, by: frozenset[str] = SENTENCE_WORDS) -> bool:
    """Whether a string argument holds a message (`is_sentence`), not whom it is for: "Who
    the message is for" is a name, widened as any name is ("the coast guard"); nor where it
    goes ("Where the message is sent to": a place, not what the line quotes)."""
    where = param.description.lstrip().lower().startswith("where ")
    return is_sentence(param, by) and not takes_person(param) and not where


def _names(line: str, value: str, name: str) -> bool:
    """Whether `value` is followed in `line` by `name`'s words ("galley" in "the galley
    locker" for a "locker"), singular or plural."""
    said = said_as(name)
    if not said:
        return False
    after = rf"{re.escape(value)}\s+{re.escape(said)}s?(?![\w'-])"
    return re.search(after, line, re.IGNORECASE) is not None


#: Words that open a noun phrase, which a noun does not go on with ("that" may: "the boar
#: that wrecked our camp"), or stand for one after a verb ("to bring us back").
_OPENERS = frozenset(
    WORD.findall("the a an this these those my your our his her their us me him them it")
)
#: The words a place follows (`PLACES`).
_BEFORE_PLACES = frozenset(WORD.findall(PLACES.replace(r"\s+", " ")))
#: A line changing the last call that points back at its thing: "smoke it instead".
_POINTS_BACK = re.compile(
    r"\b(?:instead|actually|on second thought)\b.*\b(?:it|that|them|those)\b"
    r"|\b(?:it|that|them|those)\b.*\binstead\b",
    re.IGNORECASE,
)


def _loosely_cut(line: str, value: str, units: frozenset[str], place: bool) -> bool:
    """Whether a span of `line` is cut loosely for a thing, a name or a `place`: it starts with
    a word a count is counted in (`units`), starts or ends with when (`WHEN`), or, for a
    place, starts with a word a place follows ("reach Wren's Crossing") or a lowercase word the
    line follows with what opens a noun phrase ("to see the old watchtower": "see", "see the
    old watchtower"); or it starts with a verb said after an auxiliary ("Someone's hexed")."""
    said = WORD.findall(value)
    low = [w.lower() for w in said]
    opener = rf"(?<![\w'-]){re.escape(said[0])}\s+(?i:{'|'.join(_OPENERS)})\b"
    object_led = said[0].islower() and re.search(opener, line) is not None
    object_led = place and (object_led or low[0] in _BEFORE_PLACES)
    loose = singular(low[0]) in units or bool(WHEN & {low[0], low[-1]}) or object_led
    return loose or verb_led(line, value)


def _runs_on(line: str, name: str, longer: str) -> bool:
    """Whether `longer` is the capitalised `name` and lowercase words after it in `line` ("Bir
    el Hamra" is a name)."""
    lowercase_end = longer.rsplit(maxsplit=1)[-1].islower()
    return starts_longer(longer, name) and capitalised(line, name) and lowercase_end
