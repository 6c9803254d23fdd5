"""What an engine's agents share: the loop they run on, the clock, the models, the settings.

The engine core owns one `Runtime`; every agent holds it. It knows nothing of agents, so the
agent, the turn executor and the engine core import it and not each other.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from ..graph.fields import invalid_field, param
from ..graph.params import MAX_TIMEOUT_MS
from ..inference.base import ModelBackend
from ..support.clock import Clock, LoopClock, fast_now
from .observers import ObserverList
from .stall_watch import StallWatch

#: The largest byte limit a setting takes (2 GiB - 1): far past any frame or result a host sends.
MAX_BYTES = 2**31 - 1


class GenerationMeter(Protocol):
    """What a host may put in front of every inference (the server's per-session quotas)."""

    def admit(self, agent_id: int) -> None:
        """Allow one inference for `agent_id` and count it, or raise a `TurnFailure` to refuse
        it (the turn then ends `error` with that failure's code)."""
        ...

    def charge(self, agent_id: int, tokens: int) -> None:
        """Count the tokens an admitted inference produced (also when it failed midway)."""
        ...


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Engine-wide limits and timings, checked when made.

    A value of the wrong type raises `TypeError`, one out of range `ValueError`; the message
    names the field. (These are a developer's constructor arguments, not an operation on an
    agent, so they fail the way any Python constructor does, not with an error code.)
    """

    #: Warn once when a pause outlives this (docs/reference/pauses.md#stall-warning); 0 disables
    #: the warning.
    pause_stall_warn_ms: int = param(
        15_000, min=0, max=MAX_TIMEOUT_MS, doc="warn once when a pause outlives this; 0 = never"
    )
    #: Largest single tool result, in bytes of UTF-8 (docs/reference/tools.md#tool-results-batches).
    max_tool_result_bytes: int = param(
        64 * 1024, min=0, max=MAX_BYTES, doc="largest single tool result, bytes of UTF-8"
    )
    #: Largest tool_results batch, in bytes of UTF-8.
    max_tool_batch_bytes: int = param(
        512 * 1024, min=0, max=MAX_BYTES, doc="largest tool_results batch, bytes of UTF-8"
    )
    #: Most messages an agent under the `enqueue` input policy holds while its turn is open
    #: (docs/reference/turns.md#input-policies); one more is 3004.
    max_queued_messages: int = param(
        8, min=1, max=1024, doc="most messages waiting for an agent's open turn to end"
    )
    #: Most save slots one agent keeps (docs/reference/durability.md#save-slots): a save past
    #: it deletes that agent's oldest slots, so a game saving every turn stays bounded.
    max_slots_per_agent: int = param(
        16, min=1, max=10_000, doc="most save slots kept per agent; older ones are deleted"
    )

    def __post_init__(self) -> None:
        bad = invalid_field(self)
        if bad:
            error = TypeError if bad.wrong_type else ValueError
            raise error(f"EngineSettings: field '{bad.path}' {bad.reason}")


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
        if settings is not None and not isinstance(settings, EngineSettings):
            raise TypeError(f"settings must be an EngineSettings, got {type(settings).__name__}")
        self.settings = settings or EngineSettings()
        #: The error code of a turn failure: the engine never imports the protocol layer's
        #: table, the host hands it in.
        self.error_code_of = error_code_of
        self._turn_ids = itertools.count(1)
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        #: Warns about pauses nobody attends.
        self.stall_watch = StallWatch(self.clock, self.settings.pause_stall_warn_ms)
        #: Consulted before every inference and told what it cost; None = nothing to meter.
        self.meter: GenerationMeter | None = None
        #: Engine-wide watchers of every agent (the inspector, traces, metrics): empty = none.
        self.observers = ObserverList()
        #: The engine clock's time, as turn logs are stamped (`fast_now`).
        self.log_time: Callable[[], float] = self.clock.now
        #: Run once the hosts of a group of stored rests have been told (a server writes the
        #: frames those tells queued at once: they would otherwise wait behind the requests
        #: that arrived meanwhile, and so would every client waiting for them).
        self.after_rests_told: Callable[[], None] | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach the engine (and its clock) to the loop it runs on."""
        self.loop = loop
        self.clock.bind(loop)
        self.log_time = fast_now(self.clock)

    def forget(self, agent_id: int) -> None:
        """Drop a destroyed agent (the engine core keeps the agents; a bare runtime has none)."""

    def evict(self, agent: Any) -> None:
        """Let go of a durable agent at rest (the engine core does, with a shared store)."""

    def lease_lost(self, agent: Any) -> None:
        """End the copy of an agent another worker holds now (the engine core does)."""

    def rests_told(self) -> None:
        """The hosts of a group of stored rests have been told (see `after_rests_told`)."""
        if self.after_rests_told is not None:
            self.after_rests_told()

    def next_turn_id(self) -> int:
        """A turn id unique in this engine."""
        return next(self._turn_ids)
