"""What an engine's agents share: the loop they run on, the clock, the models, the settings.

The engine core owns one `Runtime`; every agent holds it. It knows nothing of agents, so the
agent, the turn executor and the engine core import it and not each other.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .backends.base import ModelBackend
from .clock import Clock, LoopClock


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Engine-wide limits and timings."""

    #: Warn once when a pause outlives this (R-P6); 0 disables the warning.
    pause_stall_warn_ms: int = 15_000
    #: Largest single tool result, in bytes of UTF-8 (R-T7).
    max_tool_result_bytes: int = 64 * 1024
    #: Largest tool_results batch, in bytes of UTF-8 (R-T7).
    max_tool_batch_bytes: int = 512 * 1024


class Runtime:
    """The loop, clock, models and settings of one engine. Every method runs on its loop."""

    def __init__(
        self,
        models: Iterable[ModelBackend],
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
        error_code_of: Callable[[BaseException], int | None] = lambda exc: None,
    ) -> None:
        self.models: dict[str, ModelBackend] = {m.name: m for m in models}
        self.clock = clock or LoopClock()
        self.settings = settings or EngineSettings()
        #: The error code of a turn failure: the engine never imports the protocol layer's
        #: table, the host hands it in.
        self.error_code_of = error_code_of
        self._turn_ids = itertools.count(1)
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach the engine (and its clock) to the loop it runs on."""
        self.loop = loop
        self.clock.bind(loop)

    def next_turn_id(self) -> int:
        """A turn id unique in this engine."""
        return next(self._turn_ids)
