"""How urgent a player's line is: evidence for a boolean argument that says so ("true if it
cannot wait"), for the `score` decision's arguments (`score_arguments`).

Asked as a call's argument (``urgent=true`` or ``false``), a small model hardly reads the
line: "No hurry, but tell the captain" and "Quick, tell the captain" score alike. It does
know how a line is answered, though: "At once!" after a cry for help, "Later, then." after
"when you have a moment". So the line is scored in a short dialog of examples, between those
two answers. Where the boundary between urgent and unhurried lies is measured once per
backend, as the request step's is (`score_request`): halfway between the median margins of
labelled lines of each kind (`CALIBRATION`, other places than the examples: a farm, a
village, a keep), and cached.

`urgency_margin` is how far a line lies past that boundary, in nats (above zero: urgent).
"""

from __future__ import annotations

import statistics
import threading
import weakref

from ...graph.params import ToolParamDefinition
from ...inference.base import ModelBackend
from .score_calibration import one_line
from .score_values import WORD, words

__all__ = ["CALIBRATION", "EXAMPLES", "URGENCY_WEIGHT", "is_urgency", "urgency_margin"]

#: A short dialog: urgent lines, unhurried ones and a plain one, each with its answer; a
#: message to pass on and an errand of each kind, so that neither kind of request leans.
EXAMPLES = """Player: Fetch the guard, a thief took my bag!
NPC: At once!
Player: When you have a moment, tell the cook the soup is cold.
NPC: Later, then.
Player: Bake me three loaves of rye.
NPC: Coming up.
Player: Quick, tell the captain a storm is coming!
NPC: At once!
Player: Sometime tomorrow, could you fetch more firewood?
NPC: Later, then.
"""
_CHOICES = (" At once!", " Later, then.")

_URGENT = """Quick, the stable is on fire!
Get the doctor, my father fell down the stairs!
Hurry, bar the door, the wolves are coming!
Send for help at once, the bridge collapsed!
Call the watch, a man is lying hurt in the street!
Right now, please, the baby has a fever!
Fetch water, fast, the barn is burning!
Bring the guards immediately, there are bandits at the gate!"""

_UNHURRIED = """When you get a chance, could you look at my cart wheel?
No need to hurry, but the shelf in the hall is wobbly.
Some time this month, could you clean the chimney?
Whenever it suits you, tell the baker I'd like a cake for Sunday.
If you're passing by later, let the tailor know my coat is ready.
Tomorrow or the day after, could someone fix the fence?
At your leisure, send the carpenter round about the door.
There's no rush, but the well bucket has a hole."""

#: Lines of each kind that place the boundary: (line, is urgent).
CALIBRATION: tuple[tuple[str, bool], ...] = (
    *((line, True) for line in _URGENT.splitlines()),
    *((line, False) for line in _UNHURRIED.splitlines()),
)
#: Words of a boolean's name or description that make it a flag of urgency.
_URGENCY_WORDS = frozenset(
    words("urgent urgency urgently wait emergency hurry once immediately quickly asap")
)
#: Nats a flag of urgency's true gains per nat of the line's urgency margin: the model's
#: answer outweighs its reading of the call, which hardly moves with the line.
URGENCY_WEIGHT = 2.0
#: Per backend, the raw margin halfway between urgent and unhurried lines.
_BOUNDARY: weakref.WeakKeyDictionary[ModelBackend, float] = weakref.WeakKeyDictionary()
_BOUNDARY_LOCK = threading.Lock()  # engines on several threads may share a backend


def is_urgency(param: ToolParamDefinition) -> bool:
    """Whether a boolean argument says how urgent the request is ("urgent", "true if it
    cannot wait", "true if it is an emergency")."""
    said = WORD.findall(f"{param.name.replace('_', ' ')} {param.description}".lower())
    return param.type == "boolean" and bool(_URGENCY_WORDS & set(said))


async def urgency_margin(backend: ModelBackend, line: str, agent_id: int = 0) -> float:
    """How far `line` lies on the urgent side of the boundary, in nats (<= 0: it can wait)."""
    with _BOUNDARY_LOCK:
        boundary = _BOUNDARY.get(backend)
    if boundary is None:
        # Two first decisions at once may both measure it: they find the same value.
        margins = [(await _raw(backend, said, agent_id), urgent) for said, urgent in CALIBRATION]
        # Medians, not means: the model misreads a line of each kind now and then ("At your
        # leisure" answered "At once!"), and one such line would move a mean by a third of
        # the distance between the kinds.
        urgent = statistics.median(m for m, is_urgent in margins if is_urgent)
        calm = statistics.median(m for m, is_urgent in margins if not is_urgent)
        boundary = (urgent + calm) / 2
        with _BOUNDARY_LOCK:
            _BOUNDARY[backend] = boundary
    return await _raw(backend, line, agent_id) - boundary


async def _raw(backend: ModelBackend, line: str, agent_id: int) -> float:
    prompt = f"{EXAMPLES}Player: {one_line(line)}\nNPC:"
    urgent, calm = await backend.score_choices(prompt, _CHOICES, agent_id=agent_id)
    return urgent - calm
