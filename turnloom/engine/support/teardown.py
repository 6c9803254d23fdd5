"""Freeing large values a step per loop iteration.

Dropping the last reference to a value of a million items frees it all in one call (20-40 ms
for a decoded 1 MiB frame, 35 ms for an agent's dialog of 50,000 turns), time during which the
loop serves nobody. `Teardown` takes such a value apart in bounded steps; `free_later` runs
them one per loop iteration.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from .collector import CollectorPause

#: Values dropped per teardown step (about 1 ms).
TEARDOWN_STEP_ITEMS = 2048


class Teardown:
    """Values freed over several `step`s: dropping the last reference to a million-item value
    would free it all in one call."""

    __slots__ = ("_stack",)

    def __init__(self, values: list[Any]) -> None:
        # Owned from here on: only what nothing else references is taken apart.
        self._stack = values

    def step(self, budget: int = TEARDOWN_STEP_ITEMS) -> bool:
        """Drop up to about `budget` values; True once everything is dropped."""
        stack = self._stack
        while stack and budget > 0:
            value = stack.pop()
            budget -= 1
            kind = type(value)
            # 2 = `value` and getrefcount's own argument: the stack held the last reference,
            # so nobody else (an agent keeping a list it was given) sees it emptied.
            if (kind is list or kind is dict) and sys.getrefcount(value) == 2:
                size = len(value)
                if size <= budget:
                    stack.extend(value)
                    if kind is dict:
                        stack.extend(value.values())
                    budget -= size
                    value.clear()  # the items live on in the stack, to be dropped one by one
                    continue
                # Too big for this step: take a part of it, and it goes back on the stack.
                take = max(budget, 1)
                stack.append(value)
                if kind is list:
                    stack.extend(value[-take:])
                    del value[-take:]
                else:
                    for _ in range(take):
                        stack.extend(value.popitem())
                budget = 0
        return not stack


class _FreeLater:
    """Values dropped a step per loop iteration, then a pause released. Nothing here refers
    back to itself (a closure calling itself would): if the loop closes first, its pending
    step is dropped, and the pause with it, without waiting for the (paused) collector."""

    __slots__ = ("_loop", "_pause", "_teardown")

    def __init__(self, values: list[Any], pause: CollectorPause | None) -> None:
        self._teardown = Teardown(values)
        self._pause = pause
        self._loop = asyncio.get_running_loop()
        self._loop.call_soon(self.step)

    def step(self) -> None:
        if not self._teardown.step():
            self._loop.call_soon(self.step)
        elif self._pause is not None:
            self._pause.release()


def free_later(values: list[Any], pause: CollectorPause | None = None) -> None:
    """Drop `values` (the only references to them) a step per loop iteration; then release
    `pause`. Outside a running loop, at once."""
    try:
        _FreeLater(values, pause)
    except RuntimeError:  # no running loop
        values.clear()
        if pause is not None:
            pause.release()
