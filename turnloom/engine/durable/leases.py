"""A worker's leases on the agents of a shared store
(docs/reference/durability.md#leases-between-workers).

Every agent an engine has in memory is leased to it in the store, and only the holder writes
it. The leases of one worker stand or fall together: they last while the worker's own key in
the store lives, and the `LeaseKeeper` renews that key every third of the lease. A worker that
dies (or stops renewing for a whole lease) loses them all, and any other worker can claim its
agents from then on.

Pause deadlines fire exactly once:
* an agent in memory fires its own, by the timer its pause armed, as without a store;
* an agent nobody holds (its worker let it go, or died) is in the store's deadline index, and
  every worker sweeps that index: the first to claim a due agent restores it, and restoring a
  past deadline fires it at once. The turn then goes on to its next rest on that worker,
  which writes it and lets it go again.

A claim is atomic in the store and a write by a worker that is no longer the holder is refused
(`LeaseLost`), so two workers never both carry a deadline's consequences into the store. The
sweep runs every `sweep_s`, and also at the deadline of each pause this worker let go of. Both
periods are the store's (`SharedStore.lease_s`, `sweep_s`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Protocol

from ..support.clock import Clock
from ..support.logs import get_logger
from ..turns.agent import AgentCore
from .agent import DurableAgentCore
from .snapshot import absolute_offset
from .store.base import SharedStore

log = get_logger("turnloom.leases")

#: The most due agents one sweep claims (the next sweep follows at once if there were more).
SWEEP_BATCH = 256
_WAKE_LATE_S = 0.002


class Worker(Protocol):
    """What the lease keeper needs of its engine (`EngineCore`)."""

    @property
    def agents(self) -> Mapping[int, AgentCore]:
        """The agents in memory, by id."""

    @property
    def clock(self) -> Clock:
        """The engine's clock."""

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The engine's loop."""

    def adopt_due(self, agent_id: int, document: bytes) -> None:
        """Restore an agent claimed for its due deadline."""

    def lease_lost(self, agent: AgentCore) -> None:
        """End the copy of an agent another worker holds now."""


class LeaseKeeper:
    """Renews a worker's leases and sweeps the shared deadline index, on the engine loop."""

    def __init__(self, core: Worker, store: SharedStore) -> None:
        self.core = core
        self.store = store
        self.lease_s = store.lease_s
        self.sweep_s = store.sweep_s
        self._last_renewed: float | None = None
        self._beat_timer: asyncio.TimerHandle | None = None
        self._sweep_timer: asyncio.Handle | None = None
        #: Due agents this worker cannot restore (say, a model it lacks): logged once each.
        self._unrestorable: set[int] = set()
        self._stopped = False

    def start(self) -> None:
        """Take the worker's key (before any claim: a claim needs a live holder), and sweep."""
        self._beat()
        self.core.loop.call_soon(self.sweep)

    def _beat(self) -> None:
        loop = self.core.loop
        try:
            kept = self.store.heartbeat(self.lease_s)
        except Exception:
            log.exception("lease.renew_failed", worker=self.store.worker)
            if self._last_renewed is not None and loop.time() - self._last_renewed > self.lease_s:
                self._drop(self._held_ids())  # lapsed: other workers may be taking them now
                self._last_renewed = None
        else:
            if not kept and self._last_renewed is not None:
                log.warning("lease.lapsed", worker=self.store.worker)
                self._recheck()
            self._last_renewed = loop.time()
        self._beat_timer = loop.call_later(self.lease_s / 3, self._beat)

    def _held_ids(self) -> list[int]:
        return [
            agent_id
            for agent_id, agent in self.core.agents.items()
            if isinstance(agent, DurableAgentCore) and agent.store is not None
        ]

    def _recheck(self) -> None:
        """After a lapse: end the copies of the agents another worker took meanwhile."""
        ids = self._held_ids()
        try:
            still = self.store.held(ids)
        except Exception:
            log.exception("lease.recheck_failed", worker=self.store.worker)
            return
        self._drop([agent_id for agent_id in ids if agent_id not in still])

    def _drop(self, agent_ids: list[int]) -> None:
        for agent_id in agent_ids:
            agent = self.core.agents.get(agent_id)
            if agent is not None:
                self.core.lease_lost(agent)

    def sweep(self) -> None:
        """Claim the due deadlines nobody holds and restore those agents (they fire at once)."""
        if self._stopped:
            return
        if self._sweep_timer is not None:
            self._sweep_timer.cancel()
        clock = self.core.clock
        more = False
        try:
            due = self.store.claim_due(clock.now() + absolute_offset(clock), SWEEP_BATCH)
        except Exception:
            log.exception("lease.sweep_failed", worker=self.store.worker)
        else:
            more = len(due) >= SWEEP_BATCH
            for agent_id, document in due:
                if agent_id not in self.core.agents:  # one in memory fires by its own timer
                    self._fire(agent_id, document)
        loop = self.core.loop
        self._sweep_timer = (
            loop.call_soon(self.sweep) if more else loop.call_later(self.sweep_s, self.sweep)
        )

    def _fire(self, agent_id: int, document: bytes) -> None:
        try:
            self.core.adopt_due(agent_id, document)
        except Exception as exc:
            if agent_id not in self._unrestorable:
                self._unrestorable.add(agent_id)
                log.error("lease.restore_failed", agent_id=agent_id, reason=str(exc))
            self.store.release([agent_id])

    def wake_at(self, deadline: float) -> None:
        """Sweep at `deadline` (absolute time): a pause this worker let go of times out then."""
        clock = self.core.clock
        # A hair late: a loop timer may run a little early, and a sweep that comes before the
        # deadline finds nothing due (the next regular sweep would then be the one to fire it).
        clock.call_at(deadline - absolute_offset(clock) + _WAKE_LATE_S, self.sweep)

    def stop(self) -> None:
        """Stop renewing and sweeping; release every agent held and end the worker's key."""
        self._stopped = True
        for timer in (self._beat_timer, self._sweep_timer):
            if timer is not None:
                timer.cancel()
        try:
            self.store.leave(self._held_ids())
        except Exception:
            log.exception("lease.leave_failed", worker=self.store.worker)
