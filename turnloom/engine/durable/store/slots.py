"""Save slots: named snapshots a game keeps beside its live agents
(docs/reference/durability.md#save-slots).

A slot holds one agent's snapshot under a name the game picks ("autosave", "before-the-duel"),
with the agent it came from and when. Both stores keep slots, each in its own table or keys,
apart from the agents' write-through snapshots, so saving a slot never touches what a crash
restores. The mixins here give `SQLiteStore` and `RedisStore` their slot methods; a custom
`Store` that keeps slots implements `SlotShelf`.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class SlotInfo:
    """One save slot: its name, the agent saved into it, when (absolute seconds), its size."""

    slot: str
    agent_id: int
    saved_at: float
    size: int


class SlotShelf(ABC):
    """What a store that keeps save slots does. Each call is atomic on its own."""

    @abstractmethod
    def save_slot(self, info: SlotInfo, document: bytes) -> None:
        """Write (or replace) the slot `info.slot`."""

    @abstractmethod
    def load_slot(self, slot: str) -> bytes | None:
        """The slot's snapshot, or None if there is no such slot."""

    @abstractmethod
    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """The slots (of one agent, or all), newest first."""

    @abstractmethod
    def delete_slot(self, slot: str) -> bool:
        """Remove a slot; False if there was none."""


class SQLiteSlots(SlotShelf):
    """Slots in a `turnloom_slots` table of the store's file, made on first use."""

    _db: sqlite3.Connection
    #: Held while the connection is used (the store's groups may be written by another thread).
    _lock: threading.RLock
    _slots_ready: bool = False

    def _slot_table(self) -> sqlite3.Connection:
        if not self._slots_ready:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS turnloom_slots (slot TEXT PRIMARY KEY, "
                "agent_id INTEGER NOT NULL, saved_at REAL NOT NULL, document BLOB NOT NULL)"
            )
            self._db.execute(
                "CREATE INDEX IF NOT EXISTS turnloom_slots_by_agent "
                "ON turnloom_slots (agent_id, saved_at)"
            )
            self._slots_ready = True
        return self._db

    def save_slot(self, info: SlotInfo, document: bytes) -> None:
        """One autocommit statement: the slot is replaced atomically."""
        with self._lock:
            self._slot_table().execute(
                "INSERT OR REPLACE INTO turnloom_slots VALUES (?, ?, ?, ?)",
                (info.slot, info.agent_id, info.saved_at, document),
            )

    def load_slot(self, slot: str) -> bytes | None:
        """The slot's document."""
        with self._lock:
            row = (
                self._slot_table()
                .execute("SELECT document FROM turnloom_slots WHERE slot = ?", (slot,))
                .fetchone()
            )
        return None if row is None else bytes(row[0])

    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """Newest first."""
        query = "SELECT slot, agent_id, saved_at, length(document) FROM turnloom_slots"
        args: tuple[Any, ...] = ()
        if agent_id is not None:
            query, args = query + " WHERE agent_id = ?", (agent_id,)
        with self._lock:
            rows = self._slot_table().execute(query + " ORDER BY saved_at DESC, slot", args)
            return [SlotInfo(slot, agent, saved_at, size) for slot, agent, saved_at, size in rows]

    def delete_slot(self, slot: str) -> bool:
        """Remove the row."""
        with self._lock:
            done = self._slot_table().execute("DELETE FROM turnloom_slots WHERE slot = ?", (slot,))
            return done.rowcount > 0


class RedisSlots(SlotShelf):
    """Slots in two Redis hashes: `{prefix}:slots` (slot -> document) and `{prefix}:slot-info`
    (slot -> "agent_id saved_at size"), written together in one MULTI."""

    _client: Any
    prefix: str

    def _keys(self) -> tuple[str, str]:
        return f"{self.prefix}:slots", f"{self.prefix}:slot-info"

    def save_slot(self, info: SlotInfo, document: bytes) -> None:
        """Both hashes in one transaction."""
        documents, infos = self._keys()
        pipe = self._client.pipeline(transaction=True)
        pipe.hset(documents, info.slot, document)
        pipe.hset(infos, info.slot, f"{info.agent_id} {info.saved_at!r} {info.size}")
        pipe.execute()

    def load_slot(self, slot: str) -> bytes | None:
        """The slot's document."""
        found = self._client.hget(self._keys()[0], slot)
        return None if found is None else bytes(found)

    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """Newest first."""
        found = []
        for name, value in self._client.hgetall(self._keys()[1]).items():
            agent, saved_at, size = value.decode().split()
            if agent_id is None or int(agent) == agent_id:
                found.append(SlotInfo(name.decode(), int(agent), float(saved_at), int(size)))
        return sorted(found, key=lambda info: (-info.saved_at, info.slot))

    def delete_slot(self, slot: str) -> bool:
        """Both hashes in one transaction."""
        documents, infos = self._keys()
        pipe = self._client.pipeline(transaction=True)
        pipe.hdel(documents, slot)
        pipe.hdel(infos, slot)
        return bool(pipe.execute()[0])
