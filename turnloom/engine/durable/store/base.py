"""The small interfaces every store implements.

An engine with a store writes an agent's whole snapshot at the moments that matter (its turn
paused, its turn completed, its params changed, it was created or restored) and deletes it when
the agent is destroyed. Each write replaces the agent's previous one atomically, so a crash at
any instant leaves every agent at its last complete write. Writes happen on the
engine loop, before the host hears of the event they record: a pause the host saw is stored.
The snapshots of agents that come to rest together go in one `save_many` (`write_queue`), and
the host hears of those rests once it returns. A store that keeps each agent's dialog apart
(`keeps_dialog_apart`, the built-in ones: see `parts`) is given only what changed: the head of
the snapshot, and the dialog's new part when turns joined it.

A `SharedStore` is one several processes (workers) use at once. There an engine
holds a lease on every agent it has in memory, and only the holder may write the agent; see
`engine/leases.py` for how the leases are kept and how pause deadlines fire exactly once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal

from .parts import SplitWrite

if TYPE_CHECKING:
    from .write_queue import WriteQueue

#: One agent's write: (agent id, snapshot, pause deadline or None), as `Store.save` takes it;
#: for a store that `keeps_dialog_apart`, the snapshot may be a `SplitWrite` instead.
Write = tuple[int, bytes | SplitWrite, float | None]


class Store(ABC):
    """Agents' snapshots by agent id."""

    #: Whether other processes use the same agents (then it is a `SharedStore`).
    shared: ClassVar[bool] = False
    #: The snapshots waiting for this store's next grouped write (`write_queue`), once any was.
    queued: WriteQueue | None = None
    #: Whether `save_many` takes `SplitWrite`s (the head, and the dialog's parts that changed:
    #: see `parts`); a store that does not is given whole snapshots.
    keeps_dialog_apart: ClassVar[bool] = False
    #: Whether its grouped writes may be made by a thread of their own, one group at a time,
    #: while the loop goes on (a store whose write is a network round trip or a file write;
    #: they are while most groups wait: `write_queue`); `save_many` must then be safe to call
    #: from that thread while the loop uses the store's other methods.
    writes_off_loop: ClassVar[bool] = False

    #: Whether it can start a group's write and finish it later (`send_ahead`, `read_sent`).
    sends_ahead: ClassVar[bool] = False

    def send_ahead(self, writes: Sequence[Write]) -> bool:
        """Start `save_many(writes)` without waiting for it to finish (`read_sent` finishes it),
        so the loop's other work goes on meanwhile; False if nothing was started (`save_many`
        them). This default starts nothing."""
        return False

    def read_sent(self) -> list[int]:
        """Finish the writes `send_ahead` started: the ids refused, as `save_many` gives them."""
        raise RuntimeError(f"{type(self).__name__} has no writes sent ahead")

    @abstractmethod
    def save(self, agent_id: int, document: bytes, deadline: float | None = None) -> None:
        """Replace the agent's stored snapshot with `document`, atomically. `deadline`: the
        absolute time its paused turn times out, if it does (a shared store indexes it)."""

    def save_many(self, writes: Sequence[Write]) -> list[int]:
        """Do every write as `save` does, each atomic per agent, at once where the store can
        (one transaction, one round trip); the ids refused because another worker holds them
        (`LeaseLost`). This default writes them one by one."""
        refused = []
        for agent_id, document, deadline in writes:
            if isinstance(document, SplitWrite):  # only for a store that keeps_dialog_apart
                raise TypeError(f"{type(self).__name__} takes whole snapshots, not SplitWrites")
            try:
                self.save(agent_id, document, deadline)
            except LeaseLost:
                refused.append(agent_id)
        return refused

    def flush_queued(self) -> None:
        """Write what is queued for this store now, and what is in flight, and end the thread
        that writes off the loop, if any (a store calls it before it closes, and a shared one
        before it lets go of its leases)."""
        if self.queued is not None:
            self.queued.stop()

    @abstractmethod
    def delete(self, agent_id: int) -> None:
        """Forget the agent (nothing happens if it is not stored)."""

    @abstractmethod
    def load_all(self) -> Iterator[tuple[int, bytes]]:
        """Every stored agent as (agent id, snapshot), in no particular order (a shared store:
        every one no live worker holds, each now held by this one)."""

    @abstractmethod
    def close(self) -> None:
        """Release the store's connection (its data stays)."""


class LeaseLost(Exception):
    """A write refused by a shared store: another worker holds the agent now (this one's lease
    lapsed, and the agent was taken over)."""


@dataclass(frozen=True, slots=True)
class Claim:
    """What `SharedStore.claim` found.

    `status`: "claimed" (this worker holds the agent now; `document` is its snapshot), "busy"
    (a live worker, `owner`, holds it; `document` is its snapshot, for checking a token) or
    "missing" (no such agent is stored)."""

    status: Literal["claimed", "busy", "missing"]
    document: bytes | None = None
    owner: str | None = None


#: The largest agent id a store holds or an engine gives: far below SQLite's and msgpack's
#: integer limits (2**63 - 1, 2**64 - 1), so the id after any stored one is still storable.
LARGEST_AGENT_ID = 1 << 62

#: How long a worker's leases last without a renewal, by default (seconds).
LEASE_S = 5.0
#: How often a worker looks for due deadlines nobody holds, by default (seconds).
SWEEP_S = 0.25


class SharedStore(Store):
    """A store several workers share: every agent in a worker's memory is leased to it.

    A worker proves it is alive by `heartbeat` (its lease on all its agents at once expires
    without one); `claim` takes an agent no live worker holds; writes by a worker that is not
    the holder raise `LeaseLost`, so a worker whose lease lapsed cannot overwrite the agent's
    new holder."""

    shared: ClassVar[bool] = True

    #: This worker's name in the store (unique per store object).
    worker: str
    #: How long this worker's leases last without a renewal (seconds); it renews every third.
    lease_s: float = LEASE_S
    #: How often this worker sweeps for due deadlines nobody holds (seconds).
    sweep_s: float = SWEEP_S

    @abstractmethod
    def allocate_id(self, durable: bool) -> int:
        """A new agent id no worker has given; a durable one is held by this worker already."""

    @abstractmethod
    def claim(self, agent_id: int, *, adopt: bool = False) -> Claim:
        """Hold the stored agent unless a live worker does. `adopt`: an agent not stored yet is
        claimed too (its id is then this worker's to write)."""

    @abstractmethod
    def release(self, agent_ids: Sequence[int]) -> None:
        """Let go of these agents (those this worker still holds); their snapshots stay."""

    @abstractmethod
    def claim_due(self, now: float, limit: int) -> list[tuple[int, bytes]]:
        """Hold up to `limit` agents whose pause deadline is at or before `now` and that no
        live worker holds, with their snapshots."""

    @abstractmethod
    def held(self, agent_ids: Sequence[int]) -> set[int]:
        """Which of these agents this worker still holds."""

    @abstractmethod
    def heartbeat(self, lease_s: float) -> bool:
        """Keep this worker's leases for `lease_s` more seconds; False if they had lapsed (the
        agents may have been taken over meanwhile: check with `held`)."""

    @abstractmethod
    def leave(self, agent_ids: Sequence[int]) -> None:
        """Release these agents and end this worker's lease (on close), after writing what is
        queued (`flush_queued`): a write after the leases end would be refused."""
