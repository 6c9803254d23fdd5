"""SQLite's log copied back into its file by a thread of its own (`LogCheckpoints`), so that the
engine's loop does not wait for the disk (`SQLiteStore`).

In WAL mode a commit appends the pages it changed to the log (`FILE-wal`); a checkpoint copies
them back into the file, with an fsync of the log before and one of the file after (what keeps
the file whole through a power cut with `synchronous=NORMAL`). SQLite makes its checkpoint in
whichever commit finds the log 1,000 pages long, and that commit waits for both fsyncs: a few
milliseconds each time (an fsync costs about 9 µs per page of log on a small cloud VM), which
on the engine's loop is every agent waiting.

Here a thread with its own connection makes them instead, once `ROWS` rows were committed since
the last: the commits go on meanwhile (in WAL mode a checkpoint does not hold writers back). A
copy takes what the log held when it began, and the log starts again from its beginning only
at a commit that finds all of it copied; so a pass copies again what was committed during its
last copy, each copy shorter than the one before, until one finds nothing new. If none does
(`CATCH_UP`: writes that never pause), the store's next write copies the rest itself
(`before_commit`: a few pages, short fsyncs) before it commits. The log stays short, and the loop
waits for no checkpoint as a rule (in `bench.workers`, a pass's copies caught up alone in
about one pass of two).

SQLite's own checkpoint stays, as a backstop only (`BACKSTOP_PAGES`): for a log the passes
do not keep short (a game whose writes outrun the disk, or writes the rows do not count).
"""

from __future__ import annotations

import os
import sqlite3
import threading

from ...support.logs import get_logger

log = get_logger("turnloom.store")

#: Rows committed (each about a page of log, or less) from which the thread makes a pass. A
#: pass costs about the same however long the log (it copies each page once, at its latest,
#: with two fsyncs a copy), and the engine's loop pays for part of it (the pass takes the GIL
#: between its steps): an embedded engine driving 64 agents used 9 % more CPU per turn at
#: 1,000 than at 2,000 (59 against 54 us, all threads), its log up to 3.7 MB against 6.4 MB
#: (4,000 saved little more, and let the log reach 26 MB).
ROWS = 2000
#: The log's length (pages) at which a commit checkpoints it itself, as SQLite does at 1,000.
BACKSTOP_PAGES = 10_000
#: The copies a pass makes after its first, of what was committed during the one before; if
#: none caught up, the store's next write copies the rest (`before_commit`).
CATCH_UP = 8


class LogCheckpoints:
    """Checkpoints of one SQLite file in WAL mode, made by a thread with its own connection.

    The store calls `before_commit` and `committed` around each commit (both with its
    connection's lock held); `close` before it closes its own connection. `passes`: how many
    passes the thread has made."""

    def __init__(self, path: str | os.PathLike[str], synchronous: str) -> None:
        self._path = path
        # The checkpoint's fsyncs are the checkpointing connection's: the store's setting.
        self._synchronous = synchronous
        self._rows = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closing = False
        #: A pass is done without catching up: the next commit is to copy the rest first.
        self.finishing = False
        self.passes = 0

    def committed(self, rows: int) -> None:
        """`rows` rows were committed: wake the thread once there are `ROWS` of them."""
        self._rows += rows
        if self._rows >= ROWS and not self._wake.is_set() and not self.finishing:
            self._rows = 0
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="turnloom-checkpoint", daemon=True
                )
                self._thread.start()
            self._wake.set()

    def before_commit(self, db: sqlite3.Connection) -> None:
        """If the last pass did not catch up (`finishing`), copy the rest on `db` (the store's
        connection), so that the commit that follows starts the log again from its beginning."""
        if self.finishing:
            self.finishing = False
            _checkpoint(db)

    def close(self) -> None:
        """End the thread (after its pass, if it is in one)."""
        thread, self._thread = self._thread, None
        if thread is not None:
            self._closing = True
            self._wake.set()
            thread.join()

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
            db.execute(f"PRAGMA synchronous={self._synchronous}")
        except sqlite3.Error:  # the thread ends: the backstop's checkpoints remain
            log.exception("store.checkpoint_failed")
            return
        try:
            # `close` sets `_closing`, then wakes the thread: checked after every wait and
            # before the next, it is seen whichever the order.
            while not self._closing:
                self._wake.wait()
                if self._closing:
                    return
                self.finishing = not _caught_up(db)
                self.passes += 1
                self._wake.clear()
        finally:
            db.close()


def _caught_up(db: sqlite3.Connection) -> bool:
    """A pass: copy the log, then what was committed meanwhile, again and again (each copy
    shorter than the one before), until a copy finds nothing new since the last (the next
    commit then starts the log again); False if it never did (`CATCH_UP` copies)."""
    last = _checkpoint(db)
    for _ in range(CATCH_UP):
        if last is None:
            return False
        now = _checkpoint(db)
        if now == last and now is not None and now[0] == now[1]:
            return True
        last = now
    return False


def _checkpoint(db: sqlite3.Connection) -> tuple[int, int] | None:
    """One PASSIVE checkpoint (what it can without waiting for anyone): the log's length and
    how much of it is copied (pages), or None if it could not run (busy: another checkpoint
    was running; a failure is logged, and the log then stays as it is until the next one, or
    the backstop's)."""
    try:
        busy, length, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:
        log.exception("store.checkpoint_failed")
        return None
    return None if busy else (length, copied)
