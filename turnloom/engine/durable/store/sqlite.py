"""The embedded store: one SQLite file (stdlib `sqlite3`), in WAL mode.

Schema (`SCHEMA_VERSION` 1):

    turnloom_meta(key TEXT PRIMARY KEY, value TEXT)        -- ('schema', '1')
    turnloom_agents(agent_id INTEGER PRIMARY KEY, document BLOB NOT NULL)

Each save is one `INSERT OR REPLACE`, and the saves of agents that came to rest together
(`save_many`) are one transaction: a crash leaves every row at its previous or its new
snapshot, never between, and a group costs one commit however many agents it holds.
`synchronous=NORMAL` with WAL survives a process crash (`kill -9`) at any instant with
nothing lost; a power cut may lose the last writes but never corrupts the file (SQLite's own
guarantee). Pass
`synchronous="FULL"` to make each write survive a power cut too, at the cost of an fsync
(one per group).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence

from ...support.rejections import InvalidParamValue
from .base import Store, Write
from .slots import SQLiteSlots

#: The layout this module writes; a file with another is refused.
SCHEMA_VERSION = 1
_BATCH = 4096
_UPSERT = "INSERT OR REPLACE INTO turnloom_agents (agent_id, document) VALUES (?, ?)"


class SQLiteStore(SQLiteSlots, Store):
    """Snapshots in one SQLite file; `path` ":memory:" keeps them for the engine's life."""

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
            "CREATE TABLE IF NOT EXISTS turnloom_agents "
            "(agent_id INTEGER PRIMARY KEY, document BLOB NOT NULL)"
        )
        self._db.execute(
            "INSERT OR IGNORE INTO turnloom_meta VALUES ('schema', ?)", (str(SCHEMA_VERSION),)
        )
        (found,) = self._db.execute(
            "SELECT value FROM turnloom_meta WHERE key = 'schema'"
        ).fetchone()
        if found != str(SCHEMA_VERSION):
            self._db.close()
            raise ValueError(f"{path}: store schema {found}, this turnloom reads {SCHEMA_VERSION}")

    def save(self, agent_id: int, document: bytes, deadline: float | None = None) -> None:
        """One autocommit statement: the row is replaced atomically (one process: the
        deadline needs no index)."""
        self._db.execute(_UPSERT, (agent_id, document))

    def save_many(self, writes: Sequence[Write]) -> list[int]:
        """Every row replaced in one transaction (one commit for the group); refuses none."""
        if len(writes) == 1:
            agent_id, document, deadline = writes[0]
            self.save(agent_id, document, deadline)
            return []
        db = self._db
        db.execute("BEGIN")
        try:
            db.executemany(_UPSERT, [(agent_id, document) for agent_id, document, _ in writes])
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        return []

    def delete(self, agent_id: int) -> None:
        """Remove the agent's row."""
        self._db.execute("DELETE FROM turnloom_agents WHERE agent_id = ?", (agent_id,))

    def load_all(self) -> Iterator[tuple[int, bytes]]:
        """Every row, read in batches."""
        cursor = self._db.execute("SELECT agent_id, document FROM turnloom_agents")
        while rows := cursor.fetchmany(_BATCH):
            yield from rows

    def close(self) -> None:
        """Write what is queued, then close the connection."""
        self.flush_queued()
        self._db.close()
