"""A turn's data: its state (driven by the shared machine), interaction, counters and pause."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from ...states import INITIAL_STATE, TurnState
from ..support.clock import TimerHandle
from .dialog.projection import Interaction
from .results import PauseInfo, Step, TurnResult

#: Items of a turn's log per event: its kind, its time on the engine clock, its values.
LOG_SLOTS = 3
#: Events a turn's log keeps: one that walks many nodes is cut back, at a node's start, to
#: its first event (the player's message) and its latest ones (from a node's start on).
LOG_KEPT_EVENTS = 200
#: A log longer than this is cut at the next node's start.
LOG_CUT_PAST = LOG_SLOTS * LOG_KEPT_EVENTS


def cut_log(log: list[Any]) -> None:
    """Cut a long turn log back to its first event and its latest ones, from a node's start
    on (about half of `LOG_KEPT_EVENTS`)."""
    keep = len(log) - LOG_SLOTS * (LOG_KEPT_EVENTS // 2)
    while keep < len(log) and log[keep] != "node_started":
        keep += LOG_SLOTS
    del log[LOG_SLOTS:keep]


def paused_log_values(info: PauseInfo) -> tuple[Any, ...]:
    """What a turn's log carries of a pause: (node, pending exit, its target, timeout ms, the
    pending call ids, awaits results)."""
    calls = tuple([call.call_id for call in info.pending_calls]) if info.pending_calls else ()
    values = (info.node_name, info.pending_exit, info.pending_target, info.timeout_ms, calls)
    return (*values, info.awaits_results)


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
    """One walk of the graph for one user message. Small on purpose: 100k may be paused at once.

    An agent always has a current turn: a fresh one is `idle` (no id, no interaction yet) until
    `begin` gives it both and the `start` trigger fires.
    """

    __slots__ = (
        "debug_nodes",
        "interaction",
        "log",
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

    #: Set by `begin`; an idle turn has none (agents are many, most of them idle).
    interaction: Interaction

    def __init__(self) -> None:
        self.turn_id = 0
        self.state: TurnState = INITIAL_STATE
        self.steps = 0
        self.tokens = 0
        #: The reply's pieces so far; None until the first (a turn paused before it speaks
        #: holds no list).
        self.reply_parts: list[str] | None = None
        self.debug_nodes: list[dict[str, Any]] | None = None
        self.pause: OpenPause | None = None
        self.pause_count = 0
        self.pause_seq = 0
        self.paused_duration = 0.0
        self.timers: tuple[TimerHandle, ...] = ()
        self.waiters: list[asyncio.Future[Step]] | None = None
        self.task: asyncio.Task[None] | None = None
        self.result: TurnResult | None = None
        #: The turn's event log, kept while an engine observer reads logs (the inspector):
        #: each event as `LOG_SLOTS` items, appended where it happens, without a call (see
        #: `TurnObserver.reads_turn_logs`); None when nobody does.
        self.log: list[Any] | None = None

    def begin(self, turn_id: int, user_message: str, diagnostics: bool) -> None:
        """Give an idle turn its id and interaction, before `start` fires."""
        self.turn_id = turn_id
        self.interaction = Interaction(user_message)
        if diagnostics:
            self.debug_nodes = []

    @property
    def has_timeout_exit(self) -> bool:
        """Condition of the `time_out` rows of the transition table."""
        return self.pause is not None and bool(self.pause.timeout_target)

    def add_waiter(self, future: asyncio.Future[Step]) -> asyncio.Future[Step]:
        """Resolve `future` at the turn's next pause or at its completion."""
        if self.waiters is None:
            self.waiters = []
        self.waiters.append(future)
        return future

    def discard_waiter(self, future: asyncio.Future[Step]) -> None:
        """Forget a waiter whose caller gave up (a timed-out poll), so polls leave nothing."""
        if self.waiters is not None and future in self.waiters:
            self.waiters.remove(future)
            if not self.waiters:
                self.waiters = None

    def settle_waiters(self, step: Step) -> None:
        """Resolve every pending waiter with `step`."""
        waiters, self.waiters = self.waiters, None
        for future in waiters or ():
            if not future.done():
                future.set_result(step)
