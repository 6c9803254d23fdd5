"""A count argument's value in the `score` decision (`arguments`, whose module docstring gives
the rules for every kind of argument): the numbers the line says, as the argument counts them
(`reading.numbers`), the model choosing among several.

A later count whose every number an earlier count of the call took reads as one the line
gives no number, unless the line says its number in its own unit: one number, one count.
"Could you teach my lads? There's four of them." is four pupils for the one evening the
lessons default to, not four evenings as well.
"""

from __future__ import annotations

import json
import math

from ....graph.params import ToolParamDefinition
from ....inference.base import ModelBackend
from .calibration import best, prompt
from .reading.numbers import against_last, described_count, is_count, numbers, says_one
from .reading.quotes import unquoted
from .reading.sentences import CORRECTION
from .reading.strings import Fill
from .reading.values import MORE, counts_own, unnegated

__all__ = ["count_value"]


async def count_value(
    backend: ModelBackend, fill: Fill, param: ToolParamDefinition, opened: str, agent_id: int
) -> tuple[object, float | None]:
    """The count `param` takes from `fill.line`, after the call's text so far (`opened`), and
    its margin over the runner-up (nan: nothing to choose between; None: not read at all)."""
    counts = [v for v in fill.earlier if is_count(v)]
    line = unquoted(fill.line)  # "Thirty posters reading '... three nights only'": thirty
    # "Twice as long" as the last call is twice its time; "twice as many" twice its count.
    last = counts[-1] if counts else None
    if isinstance(last, int | float) and (said_against := against_last(line, param, last)):
        return said_against, math.nan
    # A correction's number is the call's first count ("Make that six." after four
    # dockhands for two days: six dockhands), as is one asking for more ("Add two more
    # men to that."); a later count stays unless it says its own unit ("Make it three
    # days.").
    correcting = fill.later_count and counts and (CORRECTION.search(line) or MORE.search(line))
    own = counts_own(line, param)
    if correcting and not own:
        return counts[-1], math.nan
    timed = fill.time_elsewhere
    # The first count's correction says it ("Actually make it five, I've got two birds").
    corrected = CORRECTION.search(line) if not fill.later_count else None
    made = numbers(corrected.group(1), param, time_elsewhere=timed) if corrected else []
    if len(made) == 1:
        return made[0], math.nan
    values = numbers(unnegated(line), param, time_elsewhere=timed) or numbers(
        line, param, time_elsewhere=timed
    )  # "four, not five"
    if fill.counted and not own and set(values) <= set(fill.counted):
        values = []  # one number, one count (module docstring)
    if not values:  # no number: the description's count for none, unread (not after a call),
        # else 1 for "a" or "another", else an earlier call's ("pay Sal the same"), else 1
        untold = described_count(param.description)
        if untold is not None and not counts:
            return untold, None
        if says_one(line) and not (corrected and counts):  # not "make it leather, a gift"
            return 1, math.nan
        return (counts[-1], math.nan) if counts else (1, None)
    if len(values) < 2:
        return values[0], math.nan
    choices = [f"{json.dumps(v)}{fill.end}" for v in values]
    scores = await backend.score_choices(  # the line as said, quotes and all
        prompt(fill.header, fill.line, opened), choices, agent_id=agent_id
    )
    chosen, margin = best(scores)
    return values[chosen], margin
