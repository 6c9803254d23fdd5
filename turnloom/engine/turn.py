"""A turn's data: its state (driven by the shared machine), interaction, counters and pause."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ..states import INITIAL_STATE
from .clock import TimerHandle
from .projection import Interaction
from .results import PauseInfo, Step, TurnResult


@dataclass(slots=True)
class OpenPause:
    """The pause a turn is parked in."""

    info: PauseInfo
    #: Where a timeout leads; '' = the turn ends `pause_timed_out`.
    timeout_target: str
    started_at: float
    seq: int
    #: Index of the paused node's entry in the debug list (to record a timeout exit).
    debug_index: int | None


class Turn:
    """One walk of the graph for one user message. Small on purpose: 100k may be paused at once."""

    __slots__ = (
        "debug_nodes",
        "interaction",
        "pause",
        "pause_count",
        "pause_seq",
        "paused_duration",
        "reply_parts",
        "result",
        "state",
        "steps",
        "task",
        "timers",
        "tokens",
        "turn_id",
        "waiters",
    )

    def __init__(self, turn_id: int, interaction: Interaction, diagnostics: bool) -> None:
        self.turn_id = turn_id
        self.state: str = INITIAL_STATE.value
        self.interaction = interaction
        self.steps = 0
        self.tokens = 0
        self.reply_parts: list[str] = []
        self.debug_nodes: list[dict[str, Any]] | None = [] if diagnostics else None
        self.pause: OpenPause | None = None
        self.pause_count = 0
        self.pause_seq = 0
        self.paused_duration = 0.0
        self.timers: tuple[TimerHandle, ...] = ()
        self.waiters: list[asyncio.Future[Step]] | None = None
        self.task: asyncio.Task[None] | None = None
        self.result: TurnResult | None = None

    @property
    def has_timeout_exit(self) -> bool:
        """Condition of the `time_out` rows of the transition table."""
        return self.pause is not None and bool(self.pause.timeout_target)

    def add_waiter(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[Step]:
        """A future resolved at the turn's next pause or at its completion."""
        future: asyncio.Future[Step] = loop.create_future()
        if self.waiters is None:
            self.waiters = []
        self.waiters.append(future)
        return future

    def settle_waiters(self, step: Step) -> None:
        """Resolve every pending waiter with `step`."""
        waiters, self.waiters = self.waiters, None
        for future in waiters or ():
            if not future.done():
                future.set_result(step)
