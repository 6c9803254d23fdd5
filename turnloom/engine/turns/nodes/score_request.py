"""Whether a player's line asks for something at all, or is talk: the first step of the
`score` decision (`score_decision`).

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
"""

from __future__ import annotations

import hashlib
import json
import statistics
import threading
import weakref
from collections.abc import Sequence

from ...inference.base import ModelBackend

__all__ = [
    "CALIBRATION",
    "CALIBRATION_AFTER_CALL",
    "EXAMPLES",
    "MEASURED_AS",
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

_HEADER = "".join(
    f"Player: {line}\nKind: {'request' if asks else 'talk'}\n" for line, asks in EXAMPLES
)
_CHOICES = (" request\n", " talk\n")
#: What the boundaries measure and how (the prompt and the lines), as `ModelBackend.measured`
#: names values shipped with a model: change either and shipped values no longer apply.
MEASURED_AS = (
    "request-boundaries/"
    + hashlib.sha256(
        json.dumps([_HEADER, _CHOICES, CALIBRATION, CALIBRATION_AFTER_CALL]).encode("utf-8")
    ).hexdigest()[:16]
)
_KINDS = ("question", "statement", "after call")
#: Per backend, the raw margin halfway between requests and talk, per kind of line.
_BOUNDARIES: weakref.WeakKeyDictionary[ModelBackend, dict[str, float]] = weakref.WeakKeyDictionary()
_BOUNDARIES_LOCK = threading.Lock()  # engines on several threads may share a backend


async def request_margin(
    backend: ModelBackend, line: str, agent_id: int = 0, *, after_call: bool = False
) -> float:
    """How far `line` lies on the request side of its kind's boundary, in nats (<= 0: talk);
    `after_call`: the NPC has just called a tool (the line may follow that request up)."""
    boundaries = await _boundaries(backend, agent_id)
    return await _raw_margin(backend, line, agent_id) - boundaries[_kind(line, after_call)]


def _kind(line: str, after_call: bool) -> str:
    if line.rstrip().endswith("?"):
        return "question"
    return "after call" if after_call else "statement"


async def _raw_margin(backend: ModelBackend, line: str, agent_id: int) -> float:
    prompt = f"{_HEADER}Player: {' '.join(line.split())}\nKind:"
    request, talk = await backend.score_choices(prompt, _CHOICES, agent_id=agent_id)
    return request - talk


async def _boundaries(backend: ModelBackend, agent_id: int) -> dict[str, float]:
    """The backend's boundaries, measured on its first use. Two first decisions at once may
    both measure them: they find the same values, and it is rare enough not to coordinate."""
    with _BOUNDARIES_LOCK:
        boundaries = _BOUNDARIES.get(backend)
    if boundaries is None:
        shipped = backend.measured(MEASURED_AS)
        if shipped is not None and set(shipped) == set(_KINDS):
            boundaries = dict(shipped)
        else:
            boundaries = await measure_boundaries(backend, agent_id)
        with _BOUNDARIES_LOCK:
            _BOUNDARIES[backend] = boundaries
    return boundaries


async def measure_boundaries(backend: ModelBackend, agent_id: int = 0) -> dict[str, float]:
    """The boundary between requests and talk for each kind of line, measured on `backend`
    (about a hundred short scorings: what a model that ships them under `MEASURED_AS` skips)."""
    lines = {
        kind: [(line, asks) for line, asks in CALIBRATION if _kind(line, False) == kind]
        for kind in _KINDS[:2]
    }
    lines["after call"] = list(CALIBRATION_AFTER_CALL)
    return {kind: await _measure(backend, of, agent_id) for kind, of in lines.items()}


async def _measure(
    backend: ModelBackend, lines: Sequence[tuple[str, bool]], agent_id: int
) -> float:
    """Halfway between the average margins of the requests and the talk of `lines`."""
    margins = [(await _raw_margin(backend, line, agent_id), asks) for line, asks in lines]
    requests = [m for m, asks in margins if asks]
    talk = [m for m, asks in margins if not asks]
    return (statistics.fmean(requests) + statistics.fmean(talk)) / 2
