"""Per-session quotas: open turns at once, generations and tokens per minute.

Every session has its own `SessionQuota`, so a session that spends its budget is refused (2003
naming the quota) while every other session goes on as before. Rates are counted over a
sliding window of `WINDOW_S` seconds on the engine's clock (a `VirtualClock` in tests).

Where each quota is checked:

* open turns: SendMessage, against the agents of the session whose turn is open;
* generations and tokens per minute: SendMessage and ResumeAgent (refused at once, nothing
  starts), and again before every inference of a turn, through `SessionMeter`, the engine's
  generation meter while any rate quota is set. A generation refused there ends its turn
  `error` with code 2003 (`SessionQuotaExceeded`); the agent stays usable. A generation that
  starts within the budget runs to its end, so the token quota may be passed by at most one
  generation's `max_tokens`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from ..protocol.codes import SessionQuotaExceeded
from .limits import ServerLimits

#: The window the per-minute quotas count over, in seconds.
WINDOW_S = 60.0


class RateWindow:
    """How much was spent in the last `WINDOW_S` seconds (a running total over a queue)."""

    __slots__ = ("_events", "_total")

    def __init__(self) -> None:
        self._events: deque[tuple[float, int]] = deque()
        self._total = 0

    def spent(self, now: float) -> int:
        """The amount spent in the window ending at `now`."""
        events = self._events
        while events and events[0][0] <= now - WINDOW_S:
            self._total -= events.popleft()[1]
        return self._total

    def add(self, now: float, amount: int) -> None:
        """Spend `amount` at `now` (zero and negative amounts are not recorded)."""
        if amount > 0:
            self._events.append((now, amount))
            self._total += amount

    def frees_in(self, now: float) -> float:
        """Seconds until the oldest spending leaves the window (0 when nothing is spent)."""
        self.spent(now)
        return max(0.0, self._events[0][0] + WINDOW_S - now) if self._events else 0.0


class SessionQuota:
    """One session's budget: what it may still start, and what it has spent."""

    def __init__(self, limits: ServerLimits, now: Callable[[], float]) -> None:
        self.limits = limits
        self._now = now
        self.generations = RateWindow()
        self.tokens = RateWindow()

    def turn_refusal(self, open_turns: int) -> str | None:
        """Why the session may not open another turn now (None when it may)."""
        limit = self.limits.max_open_turns_per_session
        if limit and open_turns >= limit:
            return (
                f"quota max_open_turns_per_session: this session already has {open_turns} "
                f"open turns, its limit of {limit}; finish or cancel one first"
            )
        return self.rate_refusal()

    def rate_refusal(self) -> str | None:
        """Why the session may not generate now (None when it may)."""
        now = self._now()
        for name, window, limit, unit in (
            ("generations_per_minute", self.generations, self.limits.generations_per_minute, ""),
            ("tokens_per_minute", self.tokens, self.limits.tokens_per_minute, " tokens"),
        ):
            if limit and window.spent(now) >= limit:
                return (
                    f"quota {name}: this session spent {window.spent(now)}{unit} of its "
                    f"{limit} in the last {WINDOW_S:g} s; retry in {window.frees_in(now):.1f} s"
                )
        return None

    def charge_generation(self) -> None:
        """Count one generation."""
        self.generations.add(self._now(), 1)

    def charge_tokens(self, tokens: int) -> None:
        """Count `tokens` generated."""
        self.tokens.add(self._now(), tokens)


def metered(limits: ServerLimits) -> bool:
    """Whether `limits` has a rate quota, i.e. whether generations must be metered."""
    return bool(limits.generations_per_minute or limits.tokens_per_minute)


class SessionMeter:
    """The engine's `GenerationMeter` while a rate quota is set: each inference is charged to
    the quota of the session owning the agent (`quota_of(agent_id)`) and refused when that
    quota is spent. Agents of no session (an engine also used in process) are not metered."""

    def __init__(self, quota_of: Callable[[int], SessionQuota | None]) -> None:
        self._quota_of = quota_of

    def admit(self, agent_id: int) -> None:
        """Count one generation against the agent's session, or refuse it (2003)."""
        quota = self._quota_of(agent_id)
        if quota is None:
            return
        reason = quota.rate_refusal()
        if reason is not None:
            raise SessionQuotaExceeded(f"agent {agent_id}: {reason}")
        quota.charge_generation()

    def charge(self, agent_id: int, tokens: int) -> None:
        """Count the tokens an admitted generation produced."""
        quota = self._quota_of(agent_id)
        if quota is not None:
            quota.charge_tokens(tokens)
