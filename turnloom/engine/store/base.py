"""The one small interface every store implements.

An engine with a store writes an agent's whole snapshot at the moments that matter (its turn
paused, its turn completed, its params changed, it was created or restored) and deletes it when
the agent is destroyed. Each write replaces the agent's previous one atomically, so a crash at
any instant leaves every agent at its last complete write (R-R3, R-R4). Writes happen on the
engine loop, before the host hears of the event they record: a pause the host saw is stored.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator


class Store(ABC):
    """Agents' snapshots by agent id."""

    @abstractmethod
    def save(self, agent_id: int, document: bytes) -> None:
        """Replace the agent's stored snapshot with `document`, atomically."""

    @abstractmethod
    def delete(self, agent_id: int) -> None:
        """Forget the agent (nothing happens if it is not stored)."""

    @abstractmethod
    def load_all(self) -> Iterator[tuple[int, bytes]]:
        """Every stored agent as (agent id, snapshot), in no particular order."""

    @abstractmethod
    def close(self) -> None:
        """Release the store's connection (its data stays)."""
