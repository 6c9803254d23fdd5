"""Whether a player's line asks for something at all, or is talk: the first step of the
`score` decision (`decision`).

Matching a line against the tools' words alone calls a tool for "Thanks for the ale" or
"Farewell, and good luck". Whether a line is a request is a question about the line, not the
tools, and a small model answers it well from a few examples of each kind ("Two apples,
please." is a request; "Thank you, that was kind of you." is talk): on the default model the
likelihood of " request" over " talk" ranks requests above talk almost perfectly. Where the
boundary lies between the two is the part the model does not know, and it moves with the
model and the prompt; so it is measured once per backend on the labelled lines of
`CALIBRATION` (requests and talk from other places than the examples: a bakery, a harbour, a
library), halfway between the average margin of each kind, and cached.

`request_margin` is then how far a line's margin lies past that boundary, in nats: above zero
the line is a request, and the tools are asked which one it is for.

A small model's answer moves with the examples it was shown, and the lines it is unsure of sit
within a few tenths of a nat of the boundary. So a line the short prompt is not sure of (within
`SURE` nats) is asked again after a longer prompt (`LONG_EXAMPLES`: each of the short prompt's
examples followed by three more, polite orders that end in "thanks" and remarks about things
among them), and the two margins past their own boundaries are averaged. Each prompt stays in
a cached prompt of its own, so the second question costs only the line again.

Thanks at the end of a line ("Turn the lamp off, thanks.", "Just some bread for me, cheers.")
says nothing about whether the rest asks for something, yet it pulls a small model to talk
by a nat or so (the talk examples are full of thanks): the step reads such a line without it
(`without_thanks`). A line that is only thanks, or opens with it ("Thanks, that was quick."),
is read as it is. "please" stays: unlike thanks, it marks a request.

A line of several sentences is a request if the whole of it or any sentence after the first
is (`sentences`): an order after a sentence of news ("A schooner went by at noon. Note her in
the book.") is pulled towards talk by the news when read whole, yet talk stays talk sentence
by sentence ("I'll be off before the tide turns. Goodbye!"). An order followed by its reason
reads as an order whole, so the first sentence is not asked alone.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import threading
import weakref
from collections.abc import Sequence

from ....inference.base import ModelBackend
from .reading.sentences import WHERE_ONE_WILL_BE, sentences, without_thanks

__all__ = [
    "BOUNDARIES",
    "CALIBRATION",
    "CALIBRATION_AFTER_CALL",
    "EXAMPLES",
    "LONG_EXAMPLES",
    "MEASURED_AS",
    "SURE",
    "line_kind",
    "measure_boundaries",
    "request_margin",
]

#: The few-shot examples of the prompt, in this order: each kind spread through it.
EXAMPLES: tuple[tuple[str, bool], ...] = (
    ("Good morning!", False),
    ("Two apples, please.", True),
    ("Thank you, that was kind of you.", False),
    ("Could you mend my coat?", True),
    ("Ride south.", True),
    ("How long have you worked here?", False),
    ("Open the window, it's hot.", True),
    ("Goodbye, see you soon.", False),
    ("I'd like a room for tonight.", True),
    ("Make it two instead.", True),
    ("Perfect, thanks!", False),
    ("Your garden is beautiful.", False),
    ("Fetch the guards, now!", True),
    ("What is that song called?", False),
    ("Tell Anna I said hello.", True),
    ("I once had a coat like that.", False),
)

#: More examples for the long prompt, talk and requests in turn.
_MORE_EXAMPLES: tuple[tuple[str, bool], ...] = (
    ("I rode in from the east this morning.", False),
    ("Just a coffee for me, thanks.", True),
    ("I dropped a cup once, it shattered everywhere.", False),
    ("Wrap it up for me, please.", True),
    ("My sister works at the mill.", False),
    ("Could you send for the blacksmith?", True),
    ("The bridge creaks when you cross it.", False),
    ("Let the innkeeper know we're leaving at dawn.", True),
    ("The stable door is falling apart.", False),
    ("Whenever you can, the fence by the well needs a coat of paint.", True),
    ("Your bread always sells out early.", False),
    ("Three candles.", True),
    ("Thanks a lot, that was quick.", False),
    ("Carry my bags upstairs.", True),
    ("Cheers, see you around.", False),
    ("We'll have two ales and a pie.", True),
    ("Good afternoon, miss.", False),
    ("Can you keep an eye on my horse?", True),
    ("Where do you get your wool?", False),
    ("Bring me the ledger.", True),
    ("Did you make this yourself?", False),
    ("Sing something cheerful.", True),
    ("What a cold morning.", False),
    ("Draw the curtains, the sun is in my eyes.", True),
    ("I've been walking all day.", False),
    ("Put out the fire before you go.", True),
    ("My feet are killing me.", False),
    ("Save me a seat by the window.", True),
    ("That candle smells of honey.", False),
    ("Some soup and bread, thanks.", True),
    ("You're very good at this.", False),
    ("I want my old room back.", True),
    ("Wow, that was fast.", False),
    ("Could I see the blue dress?", True),
    ("Sorry I'm late.", False),
    ("Go and find my brother.", True),
    ("I'm fine, thank you.", False),
    ("A pint for me and one for my friend, thanks.", True),
    ("It's been a long week.", False),
    ("Give the horses some water before we leave.", True),
    ("The soldiers marched past at noon.", False),
    ("Take this to the mayor's house.", True),
    ("My father kept bees.", False),
    ("Three more, then.", True),
    ("Have a safe trip.", False),
    ("Knock on my door at six.", True),
    ("Lovely, that's just what I wanted.", False),
    ("Pass the salt.", True),
)
#: The long prompt's examples: each of `EXAMPLES` followed by three of the others.
LONG_EXAMPLES: tuple[tuple[str, bool], ...] = tuple(
    example
    for i, first in enumerate(EXAMPLES)
    for example in (first, *_MORE_EXAMPLES[3 * i : 3 * i + 3])
)
#: Nats past its boundary beyond which the short prompt's answer stands alone: nearer, the
#: long prompt is asked too (about two lines in five of `bench.toolcall_quality`'s sets).
SURE = 0.5

_REQUESTS = """Bake me two loaves of rye bread.
Could you saddle my horse?
I'd like a map of the northern hills.
Fetch the doctor, quick!
Please light the lanterns.
Can I borrow a book on herbs?
Sell me five arrows.
Put the kettle on, would you?
Lower the drawbridge.
I need a potion of healing.
Take me across the river.
Sharpen my knife, please.
Pack some dried meat for the road.
Ring the bell, the enemy is coming!
Could I get a bowl of stew?
Open the gate for us.
Let the prisoner go.
Write down my order: three candles and a rope.
Send word to the captain that we are ready.
Close the shutters, it's cold.
Feed my dog while I'm away.
Three tickets to the harbour, please.
Turn down the lamp a little.
Wake me at dawn.
Show me your finest cloak.
Give the boy a coin for me.
We'll take the big table by the fire.
Hide this letter somewhere safe.
Stop the cart!
Repair the fence by tomorrow.
A loaf of bread and some cheese.
One more round for everyone!
Would you mind patching my boots?
Tell the cook to start dinner.
Lock the back door tonight.
Play us a song, bard.
Put it on my tab.
Can you shoe my horse today?
I'll have the fish.
Hurry, call the healer, he's not breathing!"""

_TALK = """Thank you so much for the bread.
Thanks, the horse looks great.
Goodbye, and safe travels.
Good morning to you!
See you next week.
Your bakery smells wonderful.
What a lovely cloak that is.
How old is this tavern?
Where did you learn to cook?
Do you like living by the sea?
What is that book about?
Is the river deep here?
Who built the drawbridge?
Nice weather today.
I had a long journey.
Much appreciated, friend.
Cheers for the help earlier.
Farewell, old friend.
Good night, sleep well.
I'm heading home now.
Your dog is very friendly.
That was the best stew I've ever had.
The lanterns look pretty at night.
Is the doctor a good man?
What kind of arrows are these?
When does the harbour close?
Hello there.
Hi!
My uncle used to be a baker.
I saw a huge ship at the harbour.
The fence looks sturdy.
Thank you for the potion, I feel better.
Bye for now.
You have a kind face.
Is it always this busy?
I love the smell of fresh bread.
The cart is pretty old, isn't it?
Have a nice evening."""

#: Lines said right after the NPC did something: another request, or thanks.
_FOLLOW_UPS = """And two more, please.
Make it four instead.
Actually, make that a large one.
Same again!
Now turn it back on.
Another one for my friend.
One more of those.
Actually, the blue one instead."""

_THANKS = """Thanks, that's perfect.
Great, cheers!
Lovely, goodbye then.
Ah, that hits the spot.
That was quick, thank you.
Wonderful, see you tomorrow."""

#: Lines of each kind that place the boundaries: (line, is a request).
CALIBRATION: tuple[tuple[str, bool], ...] = (
    *((line, True) for line in _REQUESTS.splitlines()),
    *((line, False) for line in _TALK.splitlines()),
)
#: The same, for a line right after a call.
CALIBRATION_AFTER_CALL: tuple[tuple[str, bool], ...] = (
    *((line, True) for line in _FOLLOW_UPS.splitlines()),
    *((line, False) for line in _THANKS.splitlines()),
)


def _header(examples: Sequence[tuple[str, bool]]) -> str:
    return "".join(
        f"Player: {line}\nKind: {'request' if asks else 'talk'}\n" for line, asks in examples
    )


#: The prompts, by name, in the order they are asked.
_HEADERS = {"short": _header(EXAMPLES), "long": _header(LONG_EXAMPLES)}
_CHOICES = (" request\n", " talk\n")
#: What the boundaries measure and how (the prompt and the lines), as `ModelBackend.measured`
#: names values shipped with a model: change either and shipped values no longer apply.
MEASURED_AS = (
    "request-boundaries/"
    + hashlib.sha256(
        json.dumps([_HEADERS, _CHOICES, CALIBRATION, CALIBRATION_AFTER_CALL]).encode("utf-8")
    ).hexdigest()[:16]
)
_KINDS = ("question", "statement", "after call")
#: The names of the boundaries: one per prompt and kind of line ("short/question").
BOUNDARIES = tuple(f"{name}/{kind}" for name in _HEADERS for kind in _KINDS)
#: Per backend, the raw margin halfway between requests and talk, per prompt and kind of line.
_BOUNDARIES: weakref.WeakKeyDictionary[ModelBackend, dict[str, float]] = weakref.WeakKeyDictionary()
_BOUNDARIES_LOCK = threading.Lock()  # engines on several threads may share a backend


async def request_margin(
    backend: ModelBackend, line: str, agent_id: int = 0, *, after_call: bool = False
) -> float:
    """How far `line` lies on the request side of its kind's boundary, in nats (<= 0: talk);
    `after_call`: the NPC has just called a tool (the line may follow that request up)."""
    boundaries = await _boundaries(backend, agent_id)
    said = sentences(line)
    # A sentence telling where the speaker will be ("I'll be in my dressing room.") asks for
    # nothing: the line is read without it ("Great, thanks." is talk), unless it is all.
    kept = [s for s in said if not WHERE_ONE_WILL_BE.match(s)]
    if kept and len(kept) < len(said):
        line, said = " ".join(kept), kept
    whole = await _margin(backend, boundaries, line, agent_id, after_call)
    if whole >= SURE or len(said) < 2:
        return whole
    # A line of several sentences asks for something if one of them does: "The fog's thick
    # out there. A dozen blasts on the horn." The news before an order pulls the whole line
    # to talk, while talk stays talk sentence by sentence ("I'm turning in. Good night."). An
    # order followed by its reason reads as an order whole ("Could you douse the light? We're
    # cleaning the lens."), so the first sentence is not asked alone: a question or two fewer.
    parts = [await _margin(backend, boundaries, s, agent_id, after_call) for s in said[1:]]
    return max(whole, *parts)


async def _margin(
    backend: ModelBackend, boundaries: dict[str, float], line: str, agent_id: int, after_call: bool
) -> float:
    """`line`'s margin past its kind's boundary: the short prompt's, or where it is not sure,
    the average of both prompts'."""
    line = without_thanks(line)
    kind = line_kind(line, after_call)
    short = await _raw_margin(backend, "short", line, agent_id) - boundaries[f"short/{kind}"]
    if abs(short) >= SURE:
        return short
    long = await _raw_margin(backend, "long", line, agent_id) - boundaries[f"long/{kind}"]
    return (short + long) / 2


def line_kind(line: str, after_call: bool) -> str:
    """Which boundary a line is measured against: "question", "after call" (said right after
    the NPC called a tool) or "statement"."""
    if line.rstrip().endswith("?"):
        return "question"
    return "after call" if after_call else "statement"


async def _raw_margin(backend: ModelBackend, header: str, line: str, agent_id: int) -> float:
    prompt = f"{_HEADERS[header]}Player: {' '.join(line.split())}\nKind:"
    request, talk = await backend.score_choices(prompt, _CHOICES, agent_id=agent_id)
    return request - talk


async def _boundaries(backend: ModelBackend, agent_id: int) -> dict[str, float]:
    """The backend's boundaries, measured on its first use. Two first decisions at once may
    both measure them: they find the same values, and it is rare enough not to coordinate."""
    with _BOUNDARIES_LOCK:
        boundaries = _BOUNDARIES.get(backend)
    if boundaries is None:
        shipped = backend.measured(MEASURED_AS)
        if shipped is not None and set(shipped) == set(BOUNDARIES):
            boundaries = dict(shipped)
        else:
            boundaries = await measure_boundaries(backend, agent_id)
        with _BOUNDARIES_LOCK:
            _BOUNDARIES[backend] = boundaries
    return boundaries


async def measure_boundaries(backend: ModelBackend, agent_id: int = 0) -> dict[str, float]:
    """The boundary between requests and talk for each prompt and kind of line (`BOUNDARIES`),
    measured on `backend` (about a hundred short scorings per prompt: what a model that ships
    them under `MEASURED_AS` skips)."""
    lines = {
        kind: [(line, asks) for line, asks in CALIBRATION if line_kind(line, False) == kind]
        for kind in _KINDS[:2]
    }
    lines["after call"] = list(CALIBRATION_AFTER_CALL)
    return {
        f"{header}/{kind}": await _measure(backend, header, of, agent_id)
        for header in _HEADERS
        for kind, of in lines.items()
    }


async def _measure(
    backend: ModelBackend, header: str, lines: Sequence[tuple[str, bool]], agent_id: int
) -> float:
    """Halfway between the average margins of the requests and the talk of `lines`."""
    margins = [(await _raw_margin(backend, header, line, agent_id), asks) for line, asks in lines]
    requests = [m for m, asks in margins if asks]
    talk = [m for m, asks in margins if not asks]
    return (statistics.fmean(requests) + statistics.fmean(talk)) / 2
