"""The embedded store: one SQLite file (stdlib `sqlite3`), in WAL mode.

Schema 3 (`_CREATE`): turnloom_meta ('schema', '3'), turnloom_agents (agent_id, document, tail),
turnloom_dialog (agent_id, part, messages) and turnloom_constant (agent_id, entries).

An agent's row holds its snapshot's head and its dialog's tail, `turnloom_dialog` the sealed
parts before it, `turnloom_constant` the entries its head leaves out, written once (`parts`,
`dialog_parts`): a pause rewrites the head alone, a completion the row (head and tail), and a
part is added only when the tail fills up, so most writes touch one row, about two thirds the
size it would be with the constant entries in it (a commit costs about one page per row it
touches, fewer for smaller rows). The rows of the agents that came to rest together
(`save_many`) are written in one transaction: a crash leaves every agent at its previous or
its new write, never between, and a group costs one commit however many agents it holds.
`synchronous=NORMAL` with WAL survives a process crash (`kill -9`) at any instant with nothing
lost; a power cut may lose the last writes but never corrupts the file (SQLite's own
guarantee). Pass `synchronous="FULL"` to make each write survive a power cut too, at the cost
of an fsync (one per group). The log is copied back into the file by the store's own thread
(`log_checkpoints`), not by whichever commit fills it.

A file of an earlier schema is taken as it is and marked 3 once the tables and columns it lacks
are added: schema 1 (whole snapshots only) and schema 2 (no constant table) hold whole heads,
which are read as they are. A file this turnloom cannot use (not SQLite, a newer schema, another
application's database) is refused with 3007 naming it, before anything is written (`_schema`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from ...support.guards import some
from ...support.logs import get_logger
from ...support.rejections import InvalidParamValue
from .base import LARGEST_AGENT_ID, Store, Write
from .log_checkpoints import BACKSTOP_PAGES, LogCheckpoints
from .parts import SplitWrite, assemble
from .slots import SQLiteSlots

#: Where the rows that cannot be read are logged (`store.restore_failed`, `store.row_not_blob`).
log = get_logger("turnloom.store")
#: The layout this module writes; a file with another is refused (1 is taken and upgraded).
SCHEMA_VERSION = 3
_READS = ("1", "2", "3")
#: The tables, made where they are missing (`turnloom_slots` on first use: `SQLiteSlots`).
_CREATE = (
    "turnloom_meta (key TEXT PRIMARY KEY, value TEXT)",
    "turnloom_agents (agent_id INTEGER PRIMARY KEY, document BLOB NOT NULL, tail BLOB)",
    "turnloom_dialog (agent_id INTEGER, part INTEGER, messages BLOB NOT NULL, "
    "PRIMARY KEY (agent_id, part)) WITHOUT ROWID",
    "turnloom_constant (agent_id INTEGER PRIMARY KEY, entries BLOB NOT NULL)",
)
#: The columns (name, declared type) a table of turnloom's may have; with others, it is not ours.
_AGENTS = "agent_id INTEGER, document BLOB"
_TABLES = {
    "turnloom_meta": ("key TEXT, value TEXT",),
    "turnloom_agents": (f"{_AGENTS}, tail BLOB", _AGENTS),  # the second: schema 1
    "turnloom_dialog": ("agent_id INTEGER, part INTEGER, messages BLOB",),
    "turnloom_constant": ("agent_id INTEGER, entries BLOB",),
    "turnloom_slots": ("slot TEXT, agent_id INTEGER, saved_at REAL, document BLOB",),
}
#: Why a row of an id no agent may have is not read back (`LARGEST_AGENT_ID`).
_OUTSIDE = f"id outside 1..{LARGEST_AGENT_ID} (edited by hand?): the row is left; renumber it"
_BATCH = 4096
#: Rows written with one statement each group (`_many`): (start, one row's values, end).
_ROWS = ("INSERT OR REPLACE INTO turnloom_agents (agent_id, document, tail) VALUES ", "(?,?,?)", "")
_HEADS = (
    "INSERT INTO turnloom_agents (agent_id, document) VALUES ",
    "(?,?)",
    " ON CONFLICT (agent_id) DO UPDATE SET document = excluded.document",
)
#: A group of pauses and completions whose sealed parts stay (most groups): every row in one
#: statement, its own transaction. A pause's head comes with an empty tail, which keeps the
#: stored one (a tail is never empty: a part holds one message at least).
_KEEP_TAIL = bytearray()
_REST = (
    "INSERT INTO turnloom_agents (agent_id, document, tail) VALUES ",
    "(?,?,?)",
    " ON CONFLICT (agent_id) DO UPDATE SET document = excluded.document, "
    "tail = iif(excluded.tail = x'', turnloom_agents.tail, excluded.tail)",
)
#: The most rows one statement writes (its parameters stay far below SQLite's limit).
_ROWS_PER_STATEMENT = 256
_DROP_PARTS = "DELETE FROM turnloom_dialog WHERE agent_id = ? AND part >= ?"
_ADD_PART = "INSERT OR REPLACE INTO turnloom_dialog (agent_id, part, messages) VALUES (?, ?, ?)"
_SET_CONSTANT = "INSERT OR REPLACE INTO turnloom_constant (agent_id, entries) VALUES (?, ?)"


class SQLiteStore(SQLiteSlots, Store):
    """Snapshots in one SQLite file; `path` ":memory:" keeps them for the engine's life."""

    keeps_dialog_apart: ClassVar[bool] = True
    #: A commit is file writes (and now and then a checkpoint's fsync), made without the GIL:
    #: the groups may be written by a thread of their own while the loop goes on (they are
    #: when most commits wait: `synchronous="FULL"`, a slow disk).
    writes_off_loop: ClassVar[bool] = True

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        if synchronous not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, got {synchronous!r}")
        try:
            # Opened on the caller's thread, used on the engine loop's and by the thread that
            # writes the groups off the loop (`writes_off_loop`): one at a time, by `_lock`.
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:  # a folder, or in a folder that is not there
            raise InvalidParamValue(
                f"store {os.fspath(path)!r} cannot be opened ({exc}); nothing was changed: "
                "give the path of a file (not a folder) in a folder that exists"
            ) from None
        self._lock = threading.RLock()
        self._statements: dict[tuple[str, int], str] = {}
        found = _schema(self._db, os.fspath(path))  # before any write: a refused file stays
        (mode,) = self._db.execute("PRAGMA journal_mode=WAL").fetchone()
        self._db.execute(f"PRAGMA synchronous={synchronous}")
        #: The log's checkpoints, off the loop (`log_checkpoints`); None for a database with no
        #: log (":memory:").
        self._checkpoints: LogCheckpoints | None = None
        if mode == "wal":
            self._db.execute(f"PRAGMA wal_autocheckpoint={BACKSTOP_PAGES}")
            self._checkpoints = LogCheckpoints(path, synchronous)
        # A group's statements of many rows each keep a statement journal (to undo one
        # statement alone): in memory, not a temporary file created, written and deleted for
        # many of the groups.
        self._db.execute("PRAGMA temp_store=MEMORY")
        with self._transaction():
            for table in _CREATE:
                self._db.execute(f"CREATE TABLE IF NOT EXISTS {table}")
            if _columns(self._db, "turnloom_agents") != _TABLES["turnloom_agents"][0]:  # schema 1
                self._db.execute("ALTER TABLE turnloom_agents ADD COLUMN tail BLOB")
            if found != str(SCHEMA_VERSION):  # a new store, or one of an earlier schema
                self._db.execute(
                    "INSERT OR REPLACE INTO turnloom_meta VALUES ('schema', ?)",
                    (str(SCHEMA_VERSION),),
                )

    def _transaction(self) -> _Transaction:
        return _Transaction(self._db)

    def save(self, agent_id: int, document: bytes, deadline: float | None = None) -> None:
        """The whole snapshot as the agent's head, its parts dropped, in one transaction (one
        process: the deadline needs no index)."""
        self.save_many([(agent_id, document, deadline)])

    def save_many(self, writes: Sequence[Write]) -> list[int]:
        """Every agent's row, changed parts and changed constant entries in one transaction
        (one commit for the group); refuses none."""
        rest = _rest_values(writes)
        if rest is not None:
            with self._committing(len(writes)):
                self._db.execute(self._statement(_REST, len(writes)), rest)
            return []
        # Blobs as bytearrays: the sqlite3 module adapts any other bytes-like parameter first,
        # which costs a failed attribute lookup and its exception per value.
        heads: list[tuple[int, object]] = []  # (id, head): the tail stays
        rows: list[tuple[int, object, object]] = []  # (id, head, tail or None)
        drops: list[tuple[int, int]] = []  # (id, first sealed part dropped)
        sealed: list[tuple[int, int, object]] = []  # (id, index, part)
        constants: list[tuple[int, object]] = []  # (id, constant entries)
        for agent_id, document, _ in writes:
            if not isinstance(document, SplitWrite):  # a whole snapshot: a head with no parts
                rows.append((agent_id, _blob(document), None))
                drops.append((agent_id, 0))
                continue
            if document.constant is not None:
                constants.append((agent_id, _blob(document.constant)))
            base = document.base
            if base is None:
                heads.append((agent_id, _blob(document.head)))
                continue
            parts = document.parts
            tail = None
            if document.tail:
                parts, tail = parts[:-1], _blob(parts[-1])
            rows.append((agent_id, _blob(document.head), tail))
            # Only the tail changed: no sealed part stands from `base` on (the writer knows
            # what the store holds), so the table is not touched.
            if parts or not base:
                drops.append((agent_id, base))
                sealed += [(agent_id, base + i, _blob(part)) for i, part in enumerate(parts)]
        written = len(heads) + len(rows) + len(sealed) + len(constants)
        with self._committing(written), self._transaction():
            if heads:
                self._many(_HEADS, heads)
            if rows:
                self._many(_ROWS, rows)
            if drops:
                self._db.executemany(_DROP_PARTS, drops)
            if sealed:
                self._db.executemany(_ADD_PART, sealed)
            if constants:
                self._db.executemany(_SET_CONSTANT, constants)
        return []

    @contextmanager
    def _committing(self, rows: int) -> Iterator[None]:
        """The connection held for one commit of `rows` rows, the log's checkpoints told
        before and after it (`log_checkpoints`)."""
        with self._lock:
            checkpoints = self._checkpoints
            if checkpoints is not None:
                checkpoints.before_commit(self._db)
            yield
            if checkpoints is not None:
                checkpoints.committed(rows)

    def _many(self, statement: tuple[str, str, str], rows: list[tuple[Any, ...]]) -> None:
        """`rows` written by one statement of many VALUES (per `_ROWS_PER_STATEMENT`): one
        step for all of them, where `executemany` steps once a row (and gives up and takes
        back the GIL each time, which a writing thread must wait for)."""
        for start in range(0, len(rows), _ROWS_PER_STATEMENT):
            chunk = rows[start : start + _ROWS_PER_STATEMENT]
            sql = self._statement(statement, len(chunk))
            self._db.execute(sql, [value for row in chunk for value in row])

    def _statement(self, statement: tuple[str, str, str], rows: int) -> str:
        """The SQL of `statement` (start, one row's values, end) for `rows` rows."""
        key = (statement[0], rows)
        sql = self._statements.get(key)
        if sql is None:
            sql = self._statements[key] = (
                statement[0] + ",".join([statement[1]] * rows) + statement[2]
            )
        return sql

    def delete(self, agent_id: int) -> None:
        """Remove the agent's row and its parts."""
        with self._lock, self._transaction():
            self._db.execute("DELETE FROM turnloom_agents WHERE agent_id = ?", (agent_id,))
            self._db.execute("DELETE FROM turnloom_dialog WHERE agent_id = ?", (agent_id,))
            self._db.execute("DELETE FROM turnloom_constant WHERE agent_id = ?", (agent_id,))

    def load_all(self) -> Iterator[tuple[int, bytes]]:
        """Every agent, its head, constant entries and parts put together; read in batches,
        in id order (the connection held for each batch only: what is done between them may
        use it)."""
        with self._lock:
            heads = self._db.execute(
                "SELECT agent_id, document, tail FROM turnloom_agents ORDER BY agent_id"
            )
            # Parts and constant entries in the same order, read alongside: one pass over
            # each table (a part whose id is not a number, edited by hand, would stop it).
            parts = self._db.cursor().execute(
                "SELECT agent_id, messages FROM turnloom_dialog "
                "WHERE typeof(agent_id) = 'integer' ORDER BY agent_id, part"
            )
            constants = self._db.cursor().execute(
                "SELECT agent_id, entries FROM turnloom_constant ORDER BY agent_id"
            )
            pending = parts.fetchone()
            constant = constants.fetchone()
        while True:
            batch = []
            with self._lock:
                for agent_id, head, tail in heads.fetchmany(_BATCH):
                    # The engine's next id follows the largest read back: it must stay storable.
                    if not 0 < agent_id <= LARGEST_AGENT_ID:
                        log.error("store.restore_failed", agent_id=agent_id, reason=_OUTSIDE)
                        continue
                    found = []
                    while pending is not None and pending[0] <= agent_id:
                        if pending[0] == agent_id:
                            found.append(pending[1])
                        pending = parts.fetchone()
                    if tail is not None:
                        found.append(tail)
                    while constant is not None and constant[0] < agent_id:
                        constant = constants.fetchone()
                    entries = (
                        constant[1] if constant is not None and constant[0] == agent_id else b""
                    )
                    batch.append((agent_id, _put_together(agent_id, head, found, entries)))
            if not batch:
                return
            yield from batch

    def stored(self, agent_id: int) -> bytes | None:
        """The agent's snapshot as stored (head and parts put together), or None."""
        with self._lock:
            return self._stored(agent_id)

    def _stored(self, agent_id: int) -> bytes | None:
        row = self._db.execute(
            "SELECT document, tail FROM turnloom_agents WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        if row is None:
            return None
        found = self._db.execute(
            "SELECT messages FROM turnloom_dialog WHERE agent_id = ? ORDER BY part", (agent_id,)
        )
        parts = [messages for (messages,) in found]
        if row[1] is not None:
            parts.append(row[1])
        constant = self._db.execute(
            "SELECT entries FROM turnloom_constant WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        return _put_together(agent_id, row[0], parts, b"" if constant is None else constant[0])

    def close(self) -> None:
        """Write what is queued, then close the connection."""
        self.flush_queued()
        if self._checkpoints is not None:
            self._checkpoints.close()
        with self._lock:
            self._db.close()


def _schema(db: sqlite3.Connection, path: str) -> str | None:
    """The schema of the turnloom store in `db` (None: a new one, no table), read without writing
    (switching to WAL would); for a file this turnloom cannot use, `db` closed and its 3007."""
    problem, remedy, schema = "", "give the path of a turnloom store or of a new file", None
    try:
        query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT GLOB 'sqlite_*'"
        tables = sorted(name for (name,) in db.execute(query))
        shapes = {table: _columns(db, table) for table in _TABLES.keys() & set(tables)}
        clashes = [table for table, shape in sorted(shapes.items()) if shape not in _TABLES[table]]
        if tables and "turnloom_meta" not in tables:
            problem = f"is another application's SQLite database (tables {some(tables)})"
        elif clashes:
            problem = f"has a table {clashes[0]} of columns {shapes[clashes[0]]}, not turnloom's"
        elif tables:
            row = db.execute("SELECT value FROM turnloom_meta WHERE key = 'schema'").fetchone()
            schema = None if row is None else str(row[0])  # None: its first open was cut short
            if schema is not None and schema not in _READS:
                problem = f"is of store schema {schema}, this turnloom reads {SCHEMA_VERSION}"
                remedy = "open it with the newer turnloom that wrote it"
    except sqlite3.DatabaseError as exc:  # not SQLite, cut short, or locked by another process
        damaged = exc.sqlite_errorname in ("SQLITE_NOTADB", "SQLITE_CORRUPT")
        problem = f"{'is not a SQLite database' if damaged else 'cannot be read'} ({exc})"
    if problem:
        db.close()
        raise InvalidParamValue(f"store {path!r} {problem}; the file was not changed: {remedy}")
    return schema


def _columns(db: sqlite3.Connection, table: str) -> str:  # as `_TABLES` writes them
    return ", ".join(f"{c[1]} {c[2].upper()}" for c in db.execute(f"PRAGMA table_info({table})"))


def _put_together(agent_id: int, head: Any, parts: list[Any], constant: Any) -> bytes:
    """`assemble`, or b"" (refused by restore: logged, left, its id kept) if a value is no BLOB."""
    if head.__class__ is bytes:  # kept from `bytes()`, which takes an int as a size (2**40: 1 TB)
        try:
            return assemble(head, parts, constant)
        except TypeError:  # a part or the constant entries (a file edited by hand)
            pass
    log.warning("store.row_not_blob", agent_id=agent_id, reason="a value is not a BLOB")
    return b""


def _rest_values(writes: Sequence[Write]) -> list[object] | None:
    """The values of `_REST` for a group of pauses (the head alone) and completions that add
    to the tail (the head and the tail, no sealed part changed), none of them with constant
    entries to write, in one statement of at most `_ROWS_PER_STATEMENT` rows; None for any
    other group."""
    if len(writes) > _ROWS_PER_STATEMENT:
        return None
    values: list[object] = []
    for agent_id, document, _ in writes:
        if type(document) is not SplitWrite or document.constant is not None:
            return None  # a whole snapshot, or constant entries to write
        head, base = document.head, document.base
        if head.__class__ is not bytes:
            return None  # the general path refuses it by name
        if base is None:
            values += (agent_id, bytearray(head), _KEEP_TAIL)
        elif base and document.tail and len(document.parts) == 1:
            values += (agent_id, bytearray(head), _blob(document.parts[0]))
        else:
            return None
    return values


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
