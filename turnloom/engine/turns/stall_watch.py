"""The pause stall warning (docs/reference/pauses.md#stall-warning): one clock timer per engine,
not one per paused turn.

Every pause is watched for the same delay (`EngineSettings.pause_stall_warn_ms`), so the
deadlines fall due in the order the pauses started. A FIFO of (agent, turn, pause) with one
timer armed at its head does the work of a timer per paused turn for a fifth of the memory (no
timer handle, no copied context, no heap entry, not even a deadline: it is the pause's start
plus the delay), which counts when 100k turns are parked at once.

A pause that ends before its deadline leaves its entry behind (a deque cannot drop from the
middle): due entries of ended pauses are skipped, all entries go when no watched pause is
left, and a sweep drops the ended ones when they come to outnumber the open ones.

The timer is not cancelled when the last watched pause ends: it stays until its moment, finds
nothing due and is not armed again (or `close` drops it). A host that pauses and resumes turns
one after another (nothing left paused in between) so arms it once per stall period instead of
once per pause, which was a tenth of such a turn's cost. A new pause due after the armed moment
keeps the timer; one due before it (a pause restored from a snapshot) arms it earlier. A pause
restored from a snapshot may have begun before the newest watched one: it is inserted in order
(linear in the queue; `EngineCore.restore_stored` hands many over sorted by start).
"""

from __future__ import annotations

import bisect
from collections import deque
from typing import Any

from ...states import TurnState
from ..support.clock import Clock, TimerHandle
from ..support.logs import get_logger
from .turn import OpenPause, Turn

log = get_logger("turnloom.turn")

#: Entries of ended pauses tolerated beyond the open ones before a sweep.
_SLACK = 1024


def _still_open(turn: Turn, pause: OpenPause) -> bool:
    return turn.state is TurnState.PAUSED and turn.pause is pause


def _started(entry: tuple[Any, Turn, OpenPause]) -> float:
    return entry[2].started_at


class StallWatch:
    """Logs `pause.stalled` once for each pause still open `stall_ms` after it began, unless
    the pause's own timeout comes first; `stall_ms` 0 watches nothing."""

    __slots__ = ("_clock", "_delay_s", "_entries", "_open", "_stall_ms", "_timer", "_timer_at")

    def __init__(self, clock: Clock, stall_ms: int) -> None:
        self._clock = clock
        self._stall_ms = stall_ms
        self._delay_s = stall_ms / 1000
        self._entries: deque[tuple[Any, Turn, OpenPause]] = deque()
        #: Watched pauses that have not ended (warned or not).
        self._open = 0
        self._timer: TimerHandle | None = None
        #: When the armed timer fires: at or before the first entry's deadline.
        self._timer_at = 0.0

    def covers(self, pause: OpenPause) -> bool:
        """Whether `pause` is watched: the warning is on and the pause has no earlier timeout."""
        timeout_ms = pause.info.timeout_ms
        return bool(self._stall_ms) and (not timeout_ms or timeout_ms > self._stall_ms)

    def watch(self, agent: Any, turn: Turn, now: float | None = None) -> None:
        """Start watching the pause `turn` is in (a new one, or one restored from a snapshot);
        `now`: the clock's time, if the caller has just read it.

        A restored pause whose moment has already passed is counted but never warned about:
        its warning, if any, was given before the restore.
        """
        pause = turn.pause
        assert pause is not None
        if not self.covers(pause):
            return
        self._open += 1
        due = pause.started_at + self._delay_s
        if due <= (self._clock.now() if now is None else now):
            return
        entry = (agent, turn, pause)
        entries = self._entries
        if entries and pause.started_at < _started(entries[-1]):
            # Out of order: a pause restored from a snapshot began before the newest one.
            bisect.insort(entries, entry, key=_started)
        else:
            entries.append(entry)
        if self._timer is not None and due < self._timer_at:  # a new head: fire earlier
            self._timer.cancel()
            self._timer = None
        if self._timer is None:
            self._arm()
        elif len(entries) > 2 * self._open + _SLACK:
            self._entries = deque(e for e in entries if _still_open(e[1], e[2]))

    def ended(self, pause: OpenPause) -> None:
        """`pause` ended (resumed, timed out or cancelled)."""
        if not self.covers(pause):
            return
        self._open -= 1
        if self._open == 0:  # nothing left to watch: drop the leftovers (the timer stays)
            self._entries.clear()

    def close(self) -> None:
        """Drop the timer: the engine is closing."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._entries.clear()

    def _arm(self) -> None:
        self._timer_at = _started(self._entries[0]) + self._delay_s
        self._timer = self._clock.call_at(self._timer_at, self._fire)

    def _fire(self) -> None:
        self._timer = None
        entries, now = self._entries, self._clock.now()
        while entries and _started(entries[0]) + self._delay_s <= now:
            agent, turn, pause = entries.popleft()
            if _still_open(turn, pause):
                _warn(agent, turn, now)
        if entries:
            self._arm()


def _warn(agent: Any, turn: Turn, now: float) -> None:
    pause = turn.pause
    assert pause is not None
    log.warning(
        "pause.stalled",
        agent_id=agent.agent_id,
        turn_id=turn.turn_id,
        node=pause.info.node_name,
        paused_ms=round((now - pause.started_at) * 1000),
        hint="nothing has resumed this pause; resume it, cancel it, or give the node a "
        "pause_timeout_ms",
    )
