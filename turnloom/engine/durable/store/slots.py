"""Save slots: named snapshots a game keeps beside its live agents
(docs/reference/durability.md#save-slots).

A slot holds one agent's snapshot under a name the game picks ("autosave", "before-the-duel"),
with the agent it came from and when. Both stores keep slots, each in its own table or keys,
apart from the agents' write-through snapshots, so saving a slot never touches what a crash
restores. The mixins here give `SQLiteStore` and `RedisStore` their slot methods; a custom
`Store` that keeps slots implements `SlotShelf`.

Slots are listed in the order they were saved, newest first: never by `saved_at`, which two
saves in one tick of the clock share (and which a clock set back reverses), so that retention
(`EngineSettings.max_slots_per_agent`) always deletes an agent's oldest and keeps the one just
written.
"""

from __future__ import annotations

import sqlite3
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ...support.guards import brief
from ...support.rejections import InvalidParamValue
from .base import LARGEST_AGENT_ID


@dataclass(frozen=True, slots=True)
class SlotInfo:
    """One save slot: its name, the agent saved into it, when (absolute seconds), its size."""

    slot: str
    agent_id: int
    saved_at: float
    size: int


def checked_agent_id(value: Any, operation: str, name: str) -> int:
    """`value` if it is an id an agent can have (an int in 1 … `LARGEST_AGENT_ID`), else 3007
    naming `name`. A bool is refused although Python counts it an int: `True` would be taken
    for agent 1, and a float or a string would reach the store, which each store reads its
    own way (or not at all)."""
    if not _an_id(value):
        raise InvalidParamValue(
            f"{operation}: {name} must be an agent id, an int in 1 … 2**62 (not a bool), "
            f"got {brief(value)}"
        )
    return int(value)


class SlotShelf(ABC):
    """What a store that keeps save slots does. Each call is atomic on its own."""

    @abstractmethod
    def save_slot(self, info: SlotInfo, document: bytes) -> None:
        """Write (or replace) the slot `info.slot`; it is then the newest of the slots."""

    @abstractmethod
    def load_slot(self, slot: str) -> bytes | None:
        """The slot's snapshot, or None if there is no such slot."""

    @abstractmethod
    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """The slots (of one agent, or all), newest first: in the order they were saved, a
        slot saved again counting as saved last (never ordered by `saved_at`, which ties)."""

    @abstractmethod
    def delete_slot(self, slot: str) -> bool:
        """Remove a slot; False if there was none."""

    def largest_agent_id(self) -> int:
        """The largest agent id a slot names (0: none). An engine gives new agents ids past it,
        so that a new agent never inherits the slots (and the retention) of a destroyed one."""
        return max(
            (info.agent_id for info in self.slots() if _an_id(info.agent_id)),
            default=0,
        )


def _an_id(value: Any) -> bool:
    """Whether `value` is an id an agent can have: an int (not a bool) in 1 … 2**62."""
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= LARGEST_AGENT_ID


class SQLiteSlots(SlotShelf):
    """Slots in a `turnloom_slots` table of the store's file, made on first use. Their order is
    the table's rowid: `INSERT OR REPLACE` deletes a slot's old row and gives the new one a
    rowid past every other, so files written before the order was kept list right too."""

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
        """One autocommit statement: the slot is replaced atomically (with a new rowid)."""
        with self._lock:
            self._slot_table().execute(
                "INSERT OR REPLACE INTO turnloom_slots VALUES (?, ?, ?, ?)",
                (info.slot, info.agent_id, info.saved_at, document),
            )

    def load_slot(self, slot: str) -> bytes | None:
        """The slot's document; b"" (which loading refuses with 3007) for a value that is not a
        BLOB, a file edited by hand (`bytes()` of it would fail, or of 2**40 take a TB)."""
        with self._lock:
            row = (
                self._slot_table()
                .execute("SELECT document FROM turnloom_slots WHERE slot = ?", (slot,))
                .fetchone()
            )
        return None if row is None else row[0] if row[0].__class__ is bytes else b""

    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """Newest first (by rowid). 3007 for an `agent_id` no agent can have."""
        query = "SELECT slot, agent_id, saved_at, length(document) FROM turnloom_slots"
        args: tuple[Any, ...] = ()
        if agent_id is not None:
            args = (checked_agent_id(agent_id, "slots", "agent_id"),)
            query += " WHERE agent_id = ?"
        with self._lock:
            rows = self._slot_table().execute(query + " ORDER BY rowid DESC", args)
            return [SlotInfo(slot, agent, saved_at, size) for slot, agent, saved_at, size in rows]

    def delete_slot(self, slot: str) -> bool:
        """Remove the row."""
        with self._lock:
            done = self._slot_table().execute("DELETE FROM turnloom_slots WHERE slot = ?", (slot,))
            return done.rowcount > 0

    def largest_agent_id(self) -> int:
        """The largest id a slot or a stored agent names (an engine that does not load its
        stored agents gives ids past theirs too): one query a table, and no table made in a
        file that never held a slot. A row edited by hand to hold no agent id is passed over,
        as reading it back would be."""
        with self._lock:
            tables = ["turnloom_agents"]
            if (
                self._slots_ready
                or self._db.execute(
                    "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'turnloom_slots'"
                ).fetchone()
            ):
                tables.append("turnloom_slots")
            found = [
                self._db.execute(
                    f"SELECT max(agent_id) FROM {table} "  # one of the two names above
                    "WHERE typeof(agent_id) = 'integer' AND agent_id BETWEEN 1 AND ?",
                    (LARGEST_AGENT_ID,),
                ).fetchone()[0]
                for table in tables
            ]
        return max((largest for largest in found if largest), default=0)


#: Saves a slot: its document, its info and its place in the order (one past the newest), in one
#: step. KEYS: documents, infos, order. ARGV: slot, document, info.
_SAVE = """
local newest = redis.call('ZREVRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local place = 1
if newest[2] then place = tonumber(newest[2]) + 1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[3], place, ARGV[1])
return place
"""


class RedisSlots(SlotShelf):
    """Slots in two Redis hashes, `{prefix}:slots` (slot -> document) and `{prefix}:slot-info`
    (slot -> "agent_id saved_at size"), and their order in a sorted set, `{prefix}:slot-order`
    (slot -> its place, one past the newest when saved), written together. A slot saved before
    the order was kept has no place: it lists after the others, by `saved_at`."""

    _client: Any
    prefix: str
    _save_script: Any = None

    def _keys(self) -> tuple[str, str]:
        return f"{self.prefix}:slots", f"{self.prefix}:slot-info"

    def _order_key(self) -> str:
        return f"{self.prefix}:slot-order"

    def save_slot(self, info: SlotInfo, document: bytes) -> None:
        """One script: document, info and place together."""
        if self._save_script is None:
            self._save_script = self._client.register_script(_SAVE)
        value = f"{info.agent_id} {info.saved_at!r} {info.size}"
        self._save_script(
            keys=[*self._keys(), self._order_key()], args=[info.slot, document, value]
        )

    def load_slot(self, slot: str) -> bytes | None:
        """The slot's document."""
        found = self._client.hget(self._keys()[0], slot)
        return None if found is None else bytes(found)

    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """Newest first (by place). 3007 for an `agent_id` no agent can have."""
        wanted = None if agent_id is None else checked_agent_id(agent_id, "slots", "agent_id")
        pipe = self._client.pipeline(transaction=True)
        pipe.hgetall(self._keys()[1])
        pipe.zrange(self._order_key(), 0, -1, withscores=True)
        infos, order = pipe.execute()
        places = dict(order)
        found = []
        for name, value in infos.items():
            agent, saved_at, size = value.decode().split()
            if wanted is None or int(agent) == wanted:
                place = places.get(name, 0.0)
                found.append(
                    (place, SlotInfo(name.decode(), int(agent), float(saved_at), int(size)))
                )
        found.sort(key=lambda item: (-item[0], -item[1].saved_at, item[1].slot))
        return [info for _, info in found]

    def delete_slot(self, slot: str) -> bool:
        """Document, info and place in one transaction."""
        documents, infos = self._keys()
        pipe = self._client.pipeline(transaction=True)
        pipe.hdel(documents, slot)
        pipe.hdel(infos, slot)
        pipe.zrem(self._order_key(), slot)
        return bool(pipe.execute()[0])
