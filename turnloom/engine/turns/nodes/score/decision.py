"""The ToolCall node's `score` decision: pick a tool (or none) and its arguments by likelihood.

A model too small to write a good call (the embedded Gemma 3 270M calls a tool for "Hello
there!" when the grammar makes it, and never when it does not) still ranks texts sensibly. So
instead of generating, this asks the backend how likely each option is to follow a short
few-shot prompt (`ModelBackend.score_choices`), in three steps:

1. **A request, or talk?** (`request`): whether the line asks for something at all, whatever it
   mentions: "Thanks for the ale" and "Farewell, and good luck" are talk. Talk calls nothing,
   except that a question may call a tool that looks something up (one whose description starts
   "Look up", "Check", "Find"...: "Any rope in stock?"; or one that examines what the player
   brings, "Identify", "Test"..., if the question asks for it: "Can you tell me what it is?"). A
   question that asks to be told something rather than for something (no "could", "can",
   "would"...: "How many berths are there below deck?", or one without its mark: "what do all
   those flags mean", "is the castle open today"), or one that opens with a question no order
   follows ("What's the pay like for a gate guard? Asking for my cousin."), or one asking leave
   to ask ("Can I ask who...?"), may call only such a tool too. A line the step is unsure of
   with a sentence that opens with a tool's own verb ("Walk north.", "Not the grey camel. Stable
   the white one.") or with what the speaker wants ("I'll buy a sack of dates."), or that counts
   what a tool counts in ("Foghorn, 5 blasts.", "Berth for 2 days.") is a request; so is one
   right after a call that goes on with "And..." ("And her sister ship, the Sea Swallow."). So,
   however sure the step is that it is talk, is a line with an order in so many words ("Put 3
   hounds on the trail of the thief. He ran off past the tannery."; not "Take care."), one that
   asks politely ("..., please.", "Would you mind drawing a chart...?") and one that opens with
   a count of what a tool counts in ("A couple of casks of white, then."). A line that opens
   with a tool's verb and reads as talk has its first sentence asked alone: an order followed by
   news ("Send a dozen guards to the market. The harvest fair is starting.") reads as news
   whole. An order with a question tagged on ("Assay this lump, would you?") is no question; a
   line that opens by taking leave, with thanks or a greeting ("Goodbye, and mind the shaft.",
   "Thank you kindly. You've a gift with horses.", "Peace be upon you!") is talk unless the step
   is sure it asks, and after a farewell or a warning (alone or after thanks) only a clause
   opening with a tool's verb asks ("Farewell, Hesper. Keep the boilers burning." is a wish, as
   are "Mind you ..." and "Thanks. Mind your fingers."), as after a line that declines.
2. **Which tool.** The options are the tools' names spelled as words ("open door") and
   "talk" for no tool, after a prompt of examples only: per tool, its description said by the
   player (that tool) and two remarks that mention its object without asking for it (talk),
   with plain talk around; all of it twice, the tools in their order and then reversed. The
   likelihoods are calibrated (`calibration`), and each tool gains from the words the
   line shares with its declaration (`words`): players name what they want; and from
   what the line counts ("2 torches") where the tool takes a count of it, so "Hand me 2
   torches" asks the tool that hands items over, not the one named after torches; and from
   what the line asks to be carried (`words` too): words to pass on ("Let the Sea Lantern
   know...") for the tools that take a message, a named place to go to ("across to Highcliff
   Harbour") for those that take a place. A request adds its margin to the tools' side
   against talk. The tool is chosen on the line alone: after a dialog the model leans to the
   last call shown, except that a line right after a call asking for more of it ("And two
   more for Rosa's crew.") or correcting it ("Actually, make it Highcliff Harbour.")
   repeats it, whatever it says that is for. A line that names the chosen tool's verb only
   to negate it ("Don't bother fetching Marta") calls nothing.
3. **Its arguments** (`arguments`), one by one, after the recent calls of the dialog.

How close each choice was (its margin in nats) is in `ScoreDecision.diagnostics`, the node's
diagnostics ``score``. The outcome is what the parser would have returned (`ParseOutcome`), so
everything after it (events, call ids, dispositions, pauses) is the ToolCall node's one
shared path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ....graph.params import ToolDefinition
from ....inference.base import ModelBackend
from ....tools.parsing import ParsedCall, ParseOutcome
from ...dialog.projection import Interaction
from .arguments import fill_arguments
from .calibration import best, calibrated_scores
from .reading.booleans import says_a_flag
from .reading.sentences import GOES_ON, gives_order, opens_with_correction, sentences
from .reading.values import MORE, enum_values
from .reading.words import (
    WORDS_WEIGHT,
    counted_words,
    counts_in_units,
    opens_with_count,
    opens_with_verb,
    people_words,
    place_words,
    refuses,
    shared_words,
    telling_words,
)
from .request import SURE, request_margin
from .tool_prompt import first_verb, last_call_of, tool_header, tool_labels

__all__ = [
    "DECISIONS",
    "ScoreDecision",
    "decide_by_score",
    "enum_values",
    "resolve_decision",
    "score_unsupported",
]

#: The values of `ToolCallParams.decision` ('' = the model's default).
DECISIONS = ("", "generate", "score")


#: Types the score decision can fill; a tool with another (array, object) makes it generate.
_SCORABLE_TYPES = frozenset({"string", "boolean", "integer", "number"})
#: A tool whose description starts with one of these finds something out: a question calls it.
_LOOKUP_VERBS = frozenset({"look", "check", "find", "search", "count", "list", "read", "inspect"})
#: A tool whose description starts with one of these examines a thing the player brings: a
#: question that asks for it calls it ("Found this amulet. Can you tell me what it is?"), not
#: one about the NPC ("Who taught you magic?").
_EXAMINE_VERBS = frozenset({"identify", "study", "examine", "appraise", "assess", "test"})
#: A question with one of these asks for something ("Could you unlock my chest?"); without,
#: it asks to be told something.
_ASKS_FOR = re.compile(r"\b(?:could|can|would|will|may|might|shall)\b", re.IGNORECASE)
#: A line that asks politely: "A plan of the streets of Old Varrow, please.", "Would you mind
#: drawing a chart of the coast?" (not "Oh, please, you flatter me.").
_POLITE = re.compile(
    r"(?<!\boh )(?<!\boh, )\bplease\b|\b(?:would|do)\s+you\s+mind\s+\w+ing\b", re.IGNORECASE
)
#: A line that does the last call again for another: "Same for the Gravedigger.", "The same
#: again for table four." (not "Same to you!").
_SAME = re.compile(r"\W*(?:the\s+)?same\s+(?:again\s+)?for\b", re.IGNORECASE)
#: A question tagged on an order ("Assay this lump, would you?"): the line is the order.
_TAG = re.compile(
    r",\s*(?:would|could|will|can|won't)\s+(?:you|ya)(?:\s+please)?\s*\?\s*$", re.IGNORECASE
)
#: What a line says something is for ("for Rosa's crew"): whom, not which tool.
_FOR = re.compile(r"\bfor\b[^,.;:!?]*", re.IGNORECASE)
#: Ways of taking leave, and of warning ("Mind you don't let the furnace go out tonight.").
_FAREWELLS = (
    r"good-?bye|farewell|bye|good ?night|so long|see you|take care|fair winds|safe travels|"
    r"godspeed|mind (?:you|your|how)"
)
#: A line that opens by taking leave, with thanks or a greeting: what follows is a wish or a
#: remark ("Goodbye, and mind the shaft.", "Thank you kindly. You've a gift with horses.",
#: "Peace be upon you, caravan master!"), not an errand, unless the request is sure.
_OPENS_AS_TALK = re.compile(
    rf"\W*(?:{_FAREWELLS}|thanks|thank you|many thanks|much obliged|cheers|hello|hi|hey|"
    r"greetings|good (?:morning|afternoon|evening|day)|well met|peace be (?:upon|with) you)\b",
    re.IGNORECASE,
)
#: A line asking the NPC to tell or teach the player something ("Tell me a joke.", "Could you
#: tell me where the nearest inn is?"): answered in words.
_TELL_ME = re.compile(
    r"\W*(?:(?:can|could|would|will)\s+you\s+)?(?:please\W+)?(?:tell|teach)\s+(?:me|us)\b",
    re.IGNORECASE,
)
#: A line that opens by withdrawing, forbidding or declining ("Never mind, ...", "Don't send
#: anything yet", "No, I don't need a room, I'm camping.", "Oh, not yet.", "Not today",
#: "Actually, forget it."; not "Don't forget to...").
_WITHDRAWS = re.compile(
    r"\W*(?:never\s*mind\b|(?:don't|do\s+not)\s+(?!forget\b)|no\s+need\b"
    r"|(?:(?:no|nah)\W+)?(?:i|we)\s+(?:don't|do\s+not)\s+(?:need|want)\b"
    r"|(?:(?:oh|no)\W+)?not\s+(?:yet|today|now|this\s+time)\b"
    r"|(?:(?:actually|oh|no)\W+)?forget\s+(?:it|that|about\s+it)\b)",
    re.I,
)
#: A line that is one question about what would happen if: "If I bought twenty stamps, would
#: you give me a discount?", "If my horse went lame, would you be able to heal it?"
_SUPPOSES = re.compile(r"\W*if\s+(?:i|we|my|our)\b[^.!?]*\?\s*$", re.IGNORECASE)
#: A line that opens by taking leave ("Farewell, Hesper.", "Goodbye, and mind the shaft.").
_FAREWELL = re.compile(rf"\W*(?:{_FAREWELLS})\b", re.IGNORECASE)
#: Where a clause ends: "Goodbye, and walk north." is "Goodbye" and "walk north".
_CLAUSES = re.compile(r"[,.;:!?]+\s*(?:and\s+)?")
#: A sentence saying what the speaker wants ("I'll buy a sack of dates.", "We need someone to
#: lead us...", "I'd like the blue one."): an order in the speaker's words.
_WANTS = re.compile(
    r"\W*(?:i|we)(?:'ll|'d|\s+will|\s+would)?\s+(?:like|want|need|buy|take|have)\b", re.I
)
#: What the speaker wants, said anywhere in a sentence ("My back aches and I'd like an hour",
#: "we'd love a private show"; not "I love the smell of a torch").
_WANTED = re.compile(
    r"\b(?:i|we)(?:'d|\s+would)\s+(?:like|love)\b|\b(?:i|we)\s+(?:want|need)\b", re.I
)
#: A question written without its question mark ("what do all those flags mean").
_ASKED = re.compile(
    r"\W*(?:what|how|why|where|when|who|which)"
    r"(?:\s+(?:do|does|did|is|are|was|were|has|have)\b|'s\b|'re\b)",
    re.IGNORECASE,
)
#: A question of yes or no written without its mark ("is the castle open to visitors today").
_ASKED_IF = re.compile(
    r"\W*(?:is|are|was|were|has)\s+(?:the|a|an|your|my|it|there|this|that|he|she|they)\b",
    re.IGNORECASE,
)
#: A question asking the NPC to do something to a thing or someone in particular ("Burned my
#: arm at the forge, can you look at it?", "Could you unlock my chest?"): a request, where
#: "Can you open gates?" asks what the NPC can do.
_ASKS_TO_DO = re.compile(
    r"\b(?:can|could|would|will)\s+you\s+(?:please\s+)?"
    r"(?!(?:tell|teach|show|believe|imagine|guess|hear|see|feel|remember|say)\b)\w+\s+"
    r"(?:(?:at|to|after|over|into|up|out|in|on|for)\s+)?"
    r"(?:(?:it|him|her|them|this|that|these|those)\b|(?:my|our)\s)",
    re.IGNORECASE,
)
#: A question asking leave to ask ("Can I ask who I should talk to?"), or one whose "can"
#: follows its question word ("Where can I find the road to Kell?"): it asks to be told.
_ASKS_LEAVE = re.compile(
    r"\b(?:can|could|may|might)\s+i\s+ask\b"
    r"|^\W*(?:what|how|why|where|when|who|which)\s+(?:can|could|would|will|may|might|should)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class ScoreDecision:
    """What the score decision chose: the call or no call, as a parse would give it, and how
    close it was (the node's diagnostics ``score``)."""

    outcome: ParseOutcome
    #: ``request``: nats the line lies on the request side of the request/talk boundary
    #: (<= 0: talk); ``margin``: nats the best tool led "no tool" by, the request's included
    #: (small: a close call); ``tool``: the tool called; ``refused``: the tool the line
    #: chose but negated ("Don't open anything"), calling nothing; ``arguments``: each scored
    #: argument's margin over its runner-up.
    diagnostics: dict[str, Any] = field(default_factory=dict)
    #: The arguments the line (and the dialog) did not give, whose values are defaults.
    unread: tuple[str, ...] = ()


def score_unsupported(backend: ModelBackend, tools: Sequence[ToolDefinition]) -> str | None:
    """Why the score decision cannot run for these tools on this backend, or None."""
    reason = backend.scoring_error()
    if reason:
        return reason
    for tool in tools:
        for param in tool.parameters:
            if param.type not in _SCORABLE_TYPES:
                return f"tool '{tool.name}' takes an {param.type} ('{param.name}')"
    return None


def resolve_decision(
    requested: str, backend: ModelBackend, tools: Sequence[ToolDefinition]
) -> tuple[str, str | None]:
    """The decision a node runs ('generate' or 'score') and, if it asked for `score` (itself
    or by the model's default) but cannot have it, why it generates instead."""
    wanted = requested or backend.default_tool_decision()
    if wanted != "score":
        return "generate", None
    reason = score_unsupported(backend, tools)
    return ("generate", reason) if reason else ("score", None)


async def decide_by_score(
    backend: ModelBackend,
    tools: Sequence[ToolDefinition],
    line: str,
    agent_id: int = 0,
    *,
    dialog: Sequence[Interaction] = (),
) -> ScoreDecision:
    """The call (or no call) `line` asks for among `tools`, after `dialog`, as a parse of
    generated text, with its margins."""
    no_call = ParseOutcome((), "", ())
    # Typographic apostrophes are the plain one ("Widow\u2019s Seam" is "Widow's Seam").
    line = line.replace("\u2019", "'").replace("\u2018", "'")
    last_call = last_call_of(dialog[-1]) if dialog else None
    after = last_call is not None
    asks = await request_margin(backend, line, agent_id, after_call=after)
    diagnostics: dict[str, Any] = {"request": round(asks, 3)}
    # An order that opens with a tool's own verb ("Walk north.", "Not the grey camel. Stable
    # the white one.") or with what the speaker wants ("I'll buy a sack of dates.") or that
    # counts what a tool counts in ("Foghorn, 5 blasts.") asks for something, where the
    # request step is unsure of it.
    said = sentences(line)
    orders = [bool(opens_with_verb(tools, s) or _WANTS.match(s)) for s in said]
    # A question is one whole, or one followed by no order ("What's the pay like for a gate
    # guard? Asking for my cousin."), and not one tagged on an order ("..., would you?").
    asked = [s.rstrip().endswith("?") and not _TAG.search(s) for s in said]
    wanted = any(orders[1:]) or any(_WANTED.search(s) for s in said[1:])
    question = (bool(said) and asked[-1]) or (asked[:1] == [True] and not wanted)
    question = question or bool(_ASKED.match(line))
    question = question or ("?" not in line and _ASKED_IF.match(line) is not None)
    if len(said) > 1 and orders[0] and asks <= 0 and not question:
        # An order whose reason is news reads as news whole ("Send a dozen guards through
        # the market square. The harvest fair is starting."): its first sentence is asked
        # alone (the request step asks only those after the first).
        asks = max(asks, await request_margin(backend, said[0], agent_id, after_call=after))
        diagnostics["request"] = round(asks, 3)
    # So does a line that says what the player wants anywhere ("Our guild's feast is on
    # Thursday and we'd love a private show."), where the request step is unsure.
    ordered = any(orders) or bool(_WANTED.search(line)) or counts_in_units(tools, line)
    # Right after a call, a line that goes on with "And..." adds to that request ("And her
    # sister ship right behind, the Sea Swallow.").
    goes_on = after and GOES_ON.match(line) is not None
    ordered = ordered or goes_on
    requested = asks > 0 or (not question and asks > -SURE and ordered)
    requested = requested or (asks > -SURE and _ASKS_TO_DO.search(line) is not None)
    # An order in so many words ("Put 3 hounds on the trail of the thief. He ran off past the
    # tannery.", "Print me a gross of bills: '...'") asks for something, however sure the
    # request step is that its news is talk.
    requested = requested or (not question and any(gives_order(s) for s in said))
    # So does one that asks politely ("please", "would you mind..."), or opens with a count of
    # what a tool counts in ("A couple of casks of white for Reeve Aldous, then.").
    requested = requested or _POLITE.search(line) is not None or opens_with_count(tools, line)
    # "Same for the Gravedigger, he's gone home sick." right after a call asks for that call
    # again, however much its reason reads as news.
    same = after and _SAME.match(line) is not None
    # So does a correction of it ("Actually, make it seven. He had seven grandchildren.").
    corrects = after and opens_with_correction(line)
    requested = requested or same or corrects
    if _OPENS_AS_TALK.match(line) and asks < SURE:  # "Goodbye, and mind the shaft.": a wish
        requested = False
    if _TELL_ME.match(line):  # "Tell me a joke, ringmaster.": answered in words
        requested = False
    # What follows a farewell is a wish, however much it reads as an order ("Farewell,
    # Hesper. Keep the boilers burning."), unless it opens with a tool's verb ("Goodbye, and
    # walk north.").
    # So is what follows a line withdrawing ("Never mind, I'll ride there myself.", "Don't
    # send anything yet, I'm still writing."), which says the tool it refuses by its verb;
    # and a line asking what would happen if ("If I bought twenty stamps, would you give me
    # a discount?") asks nothing yet.
    withdraws = _WITHDRAWS.match(line) is not None
    if withdraws and (refused := [tool.name for tool in tools if refuses(tool, line)]):
        diagnostics["refused"] = refused[0]
    # Thanks and then a warning or a farewell is one too ("Thanks, Bram. Mind your fingers.").
    thanks_then = _OPENS_AS_TALK.match(line) and said[1:] and all(map(_FAREWELL.match, said[1:]))
    if _FAREWELL.match(line) or thanks_then or withdraws:
        clauses = _CLAUSES.split(line)[1:]
        requested = requested and any(opens_with_verb(tools, c) for c in clauses)
    if _SUPPOSES.match(line):
        requested = False
    # A question that asks to be told something ("How many berths are there?"), not for
    # something ("Could you..."), can only call a tool that looks it up.
    asks_for = _ASKS_FOR.search(line) is not None
    only_lookups = not requested or (question and (not asks_for or bool(_ASKS_LEAVE.search(line))))
    # Or, for a question that asks for something, one that examines what the player brings.
    answering = _LOOKUP_VERBS | _EXAMINE_VERBS if asks_for else _LOOKUP_VERBS
    lookups = set()
    if only_lookups:
        lookups = {i for i, tool in enumerate(tools) if first_verb(tool) in answering}
    if only_lookups and not (lookups and question):
        return ScoreDecision(no_call, diagnostics)
    # What the line names, and what it counts ("2 torches") where a tool takes a count of it.
    named = _named(tools, line)
    names = [tool.name for tool in tools]
    follows = not any(named) or same or corrects or _more_of(tools, line)
    # So does one going on to say how, in a flag's words ("Oh, and I'll bring my own hawk."
    # after lessons, against "true if the student brings their own bird").
    if goes_on and last_call in names:
        follows = follows or says_a_flag(tools[names.index(last_call)], line)
    if requested and last_call in names and follows:
        # A request right after a call that names no tool follows that call up ("And four
        # more.", "Now put it out again."): the same tool, its arguments read anew; so does
        # one that asks for more of it, whatever it says that is for ("And two more for
        # Rosa's crew.": "crew" is no word of what to do).
        # "Same for...", "And..." and "make it..." say it in words: as sure as a sure request,
        # whatever the step read within `SURE` of its boundary ("And the crown as well.").
        sure = same or goes_on or corrects
        chosen, lead = names.index(last_call), max(asks, SURE) if sure else asks
    else:
        labels = tool_labels(tools)
        choices = [f" {label}\n" for label in labels]
        scores = await calibrated_scores(
            backend, tool_header(tools, labels), "\nAction:", choices, line, agent_id
        )
        # The people it names count for the tools that take a person, but do not stop a
        # follow-up ("And the same for his brother Aldo."): only the tools' own words do.
        # So do a message to pass on and a named place to go to, for the tools that take one.
        people, told = people_words(tools, line), telling_words(tools, line)
        sent = place_words(tools, line)
        evidence = [sum(e) for e in zip(named, people, told, sent, strict=True)]
        scores = [s + WORDS_WEIGHT * w for s, w in zip(scores, [*evidence, 0.0], strict=True)]
        chosen, _ = best(scores[:-1])
        # How much likelier the tool is than talk, with what the line's request adds to it:
        # a clear request still calls when the tools' prompt leans a little to talk.
        lead = scores[chosen] - scores[-1] + max(asks, 0.0)
    diagnostics["margin"] = round(lead, 3)
    if lead <= 0 or (only_lookups and chosen not in lookups):
        return ScoreDecision(no_call, diagnostics)
    tool = tools[chosen]
    if refuses(tool, line):  # "Don't bother fetching Marta": it names the tool to refuse it
        diagnostics["refused"] = tool.name
        return ScoreDecision(no_call, diagnostics)
    diagnostics["tool"] = tool.name
    filled = await fill_arguments(backend, tool, line, dialog, agent_id)
    diagnostics["arguments"] = filled.margins
    raw = json.dumps({"name": tool.name, "arguments": filled.values})
    outcome = ParseOutcome((ParsedCall(tool.name, filled.values, raw),), "", ())
    return ScoreDecision(outcome, diagnostics, filled.unread)


def _more_of(tools: Sequence[ToolDefinition], line: str) -> bool:
    """Whether `line` asks for more of what was just done ("more", "another", "the same")
    and names no tool but in what it says that is for ("And two more for Rosa's crew.")."""
    if not MORE.search(line):
        return False
    return not any(_named(tools, _FOR.sub("", line)))


def _named(tools: Sequence[ToolDefinition], line: str) -> list[float]:
    """Per tool, how much `line` names it: its words, and what it counts where the tool takes
    a count of it ("2 torches")."""
    counted = counted_words(tools, line)
    return [w + c for w, c in zip(shared_words(tools, line), counted, strict=True)]
