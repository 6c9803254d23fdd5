"""The embedded store: one SQLite file (stdlib `sqlite3`), in WAL mode.

Schema (`SCHEMA_VERSION` 2):

    turnloom_meta(key TEXT PRIMARY KEY, value TEXT)        -- ('schema', '2')
    turnloom_agents(agent_id INTEGER PRIMARY KEY, document BLOB NOT NULL)
    turnloom_dialog(agent_id INTEGER, part INTEGER, messages BLOB NOT NULL,
                    PRIMARY KEY (agent_id, part)) WITHOUT ROWID

An agent's row holds its snapshot's head and `turnloom_dialog` its dialog's parts (`parts`): a
pause rewrites the head alone, a completion the head and one part. The rows of the agents
that came to rest together (`save_many`) are written in one transaction: a crash leaves every
agent at its previous or its new write, never between, and a group costs one commit however
many agents it holds. `synchronous=NORMAL` with WAL survives a process crash (`kill -9`) at any
instant with nothing lost; a power cut may lose the last writes but never corrupts the file
(SQLite's own guarantee). Pass `synchronous="FULL"` to make each write survive a power cut too,
at the cost of an fsync (one per group).

A file of schema 1 (whole snapshots only, no dialog table) is taken as it is and marked 2 once
the dialog table is made: its rows are heads with no parts. A turnloom that reads only schema 1
refuses a schema 2 file by name.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from typing import ClassVar

from ...support.rejections import InvalidParamValue
from .base import Store, Write
from .parts import SplitWrite, assemble
from .slots import SQLiteSlots

#: The layout this module writes; a file with another is refused (1 is taken and upgraded).
SCHEMA_VERSION = 2
_READS = ("1", "2")
_BATCH = 4096
_UPSERT = "INSERT OR REPLACE INTO turnloom_agents (agent_id, document) VALUES (?, ?)"
_DROP_PARTS = "DELETE FROM turnloom_dialog WHERE agent_id = ? AND part >= ?"
_ADD_PART = "INSERT OR REPLACE INTO turnloom_dialog (agent_id, part, messages) VALUES (?, ?, ?)"


class SQLiteStore(SQLiteSlots, Store):
    """Snapshots in one SQLite file; `path` ":memory:" keeps them for the engine's life."""

    keeps_dialog_apart: ClassVar[bool] = True

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}")
        # Opened on the caller's thread, used on the engine loop's: one user at a time.
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            # The first read of the file: a file that is not SQLite fails here, before any
            # write (switching to WAL would write a header to it).
            self._db.execute("PRAGMA schema_version").fetchone()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise InvalidParamValue(
                f"store {os.fspath(path)!r} is not a SQLite database ({exc}); "
                "the file was not changed: give the path of a turnloom store or of a new file"
            ) from None
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS turnloom_meta (key TEXT PRIMARY KEY, value TEXT)"
        )
        self._db.execute(
            "INSERT OR IGNORE INTO turnloom_meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
        )
        (found,) = self._db.execute(
            "SELECT value FROM turnloom_meta WHERE key = 'schema'"
        ).fetchone()
        if found not in _READS:
            self._db.close()
            raise ValueError(f"{path}: store schema {found}, this turnloom reads {SCHEMA_VERSION}")
        with self._transaction():
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS turnloom_agents "
                "(agent_id INTEGER PRIMARY KEY, document BLOB NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS turnloom_dialog (agent_id INTEGER, part INTEGER, "
                "messages BLOB NOT NULL, PRIMARY KEY (agent_id, part)) WITHOUT ROWID"
            )
            if found != str(SCHEMA_VERSION):
                self._db.execute(
                    "UPDATE turnloom_meta SET value = ? WHERE key = 'schema'",
                    (str(SCHEMA_VERSION),),
                )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def save(self, agent_id: int, document: bytes, deadline: float | None = None) -> None:
        """The whole snapshot as the agent's head, its parts dropped, in one transaction (one
        process: the deadline needs no index)."""
        self.save_many([(agent_id, document, deadline)])

    def save_many(self, writes: Sequence[Write]) -> list[int]:
        """Every agent's head and changed parts in one transaction (one commit for the
        group); refuses none."""
        # Blobs as bytearrays: the sqlite3 module adapts any other bytes-like parameter first,
        # which costs a failed attribute lookup and its exception per value.
        heads = []
        drops = []
        parts = []
        for agent_id, document, _ in writes:
            if not isinstance(document, SplitWrite):  # a whole snapshot: a head with no parts
                heads.append((agent_id, _blob(document)))
                drops.append((agent_id, 0))
                continue
            heads.append((agent_id, _blob(document.head)))
            base = document.base
            if base is not None:
                drops.append((agent_id, base))
                parts += [
                    (agent_id, base + i, _blob(part)) for i, part in enumerate(document.parts)
                ]
        with self._transaction():
            db = self._db
            db.executemany(_UPSERT, heads)
            if drops:
                db.executemany(_DROP_PARTS, drops)
            if parts:
                db.executemany(_ADD_PART, parts)
        return []

    def delete(self, agent_id: int) -> None:
        """Remove the agent's row and its parts."""
        with self._transaction():
            self._db.execute("DELETE FROM turnloom_agents WHERE agent_id = ?", (agent_id,))
            self._db.execute("DELETE FROM turnloom_dialog WHERE agent_id = ?", (agent_id,))

    def load_all(self) -> Iterator[tuple[int, bytes]]:
        """Every agent, its head and parts put together; read in batches, in id order."""
        heads = self._db.execute("SELECT agent_id, document FROM turnloom_agents ORDER BY agent_id")
        # Parts in the same order, read alongside: one pass over each table.
        parts = self._db.cursor().execute(
            "SELECT agent_id, messages FROM turnloom_dialog ORDER BY agent_id, part"
        )
        pending = parts.fetchone()
        while rows := heads.fetchmany(_BATCH):
            for agent_id, head in rows:
                found = []
                while pending is not None and pending[0] <= agent_id:
                    if pending[0] == agent_id:
                        found.append(pending[1])
                    pending = parts.fetchone()
                yield agent_id, assemble(head, found)

    def stored(self, agent_id: int) -> bytes | None:
        """The agent's snapshot as stored (head and parts put together), or None."""
        row = self._db.execute(
            "SELECT document FROM turnloom_agents WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        if row is None:
            return None
        found = self._db.execute(
            "SELECT messages FROM turnloom_dialog WHERE agent_id = ? ORDER BY part", (agent_id,)
        )
        return assemble(row[0], [messages for (messages,) in found])

    def close(self) -> None:
        """Write what is queued, then close the connection."""
        self.flush_queued()
        self._db.close()


def _blob(value: bytes) -> object:
    # As the caller gave it if it is not bytes-like (the insert then refuses it, NOT NULL).
    return bytearray(value) if isinstance(value, _BYTES) else value


_BYTES = (bytes, bytearray, memoryview)


class _Transaction:
    """`with`: BEGIN ... COMMIT, or ROLLBACK if the body raised."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if kind is None:
            self._db.execute("COMMIT")
        elif self._db.in_transaction:
            self._db.execute("ROLLBACK")
