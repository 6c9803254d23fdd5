"""A SQLite store's WAL checkpoints, made by a thread of their own rather than by a write.

In WAL mode a commit appends the pages it changed to the `-wal` file; a checkpoint copies them
into the database file, with an fsync of the WAL before and of the database after
(`synchronous` NORMAL and above), so that the WAL can be written again from its start. SQLite
makes one by itself in the commit that finds the WAL past 1,000 pages: a busy worker's engine
loop then sits in that copy and its fsyncs, several milliseconds every few dozen groups, while
no agent moves (replayed writes of 64 agents in groups of 21: 13.0 µs per write with SQLite's
own checkpoints, 6.7 with none at all).

`Checkpointer` turns SQLite's own checkpoints off on the store's connection and makes them on
a connection of its own, by a thread woken every so many commits (about `PAGES` pages, the
count adjusted to what each checkpoint finds in the WAL). Its checkpoints are PASSIVE: they
never stop a write, and SQLite releases the GIL while it copies and syncs, so the loop goes on
meanwhile. What was committed during one is left in the WAL, so after each the store's
connection checkpoints that remainder itself at its next commit (`behind`): a few pages to
copy and sync, after which the WAL starts again from its start, as after SQLite's own.

Durability is what it was: a commit is in the WAL before the host hears of it (and synced
with `synchronous` FULL), and the WAL is synced at least as often as SQLite's own checkpoints
would (every `PAGES` pages instead of 1,000). If the thread fails, the store's connection makes
its checkpoints again by itself (`failed`).
"""

from __future__ import annotations

import sqlite3
import threading

from ...support.logs import get_logger

log = get_logger("turnloom.store")

#: About how many pages are written to the WAL between two of the thread's checkpoints (half
#: SQLite's own threshold: the WAL's file stays about as large as SQLite's own keeps it).
PAGES = 500
#: Commits between the first checkpoints, before the count is adjusted to what they found.
_FIRST_EVERY = 16
_MOST_EVERY = 100_000
#: How far behind (in `every`s) the thread may be before the store checkpoints by itself.
_LAGGING = 4
#: The most the WAL's file keeps of its size after it started again (bytes): a WAL that grew
#: past it while a checkpoint lagged is cut back (`PRAGMA journal_size_limit`).
WAL_LIMIT = 4 << 20


class Checkpointer:
    """Checkpoints the WAL of the SQLite file at `path` about every `PAGES` pages written
    (counted in commits: `committed`), with the store's `synchronous` setting, on a thread of
    its own. The store's connection calls `committed` after each commit, and checkpoints what
    is left when `behind` is set."""

    def __init__(self, path: str, synchronous: str) -> None:
        self._path = path
        self._synchronous = synchronous
        self._wake = threading.Event()
        self._stopping = False
        self._commits = 0
        #: Commits between two checkpoints (adjusted after each).
        self.every = _FIRST_EVERY
        #: Whether the thread failed (the store's connection still makes its own checkpoints).
        self.failed = False
        #: Checkpoints made so far.
        self.made = 0
        #: Commits since the last checkpoint (the thread's, or the store connection's).
        self.since = 0
        #: Set after each of the thread's checkpoints: the store's connection then checkpoints
        #: what was written meanwhile, so that the WAL starts again from its start.
        self.behind = False
        self._thread = threading.Thread(target=self._run, name="turnloom-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> bool:
        """Count a commit of the store's connection; every `every`, wake the thread. True if
        the thread lags far behind (`_LAGGING` times `every` commits since its last
        checkpoint): the store's connection then checkpoints by itself, as SQLite would."""
        self._commits += 1
        if self._commits >= self.every:
            self._commits = 0
            self._wake.set()
        self.since += 1
        return self.since > _LAGGING * self.every

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self._path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            log.exception("store.checkpoint_failed", path=self._path)
            self.failed = True
            return
        try:
            db.execute(f"PRAGMA synchronous={self._synchronous}")
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                # The WAL holds what was written since the last checkpoint (it started again
                # after the store's connection caught up).
                _, frames, _ = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.made += 1
                self.since = 0
                self.behind = True
                if frames > 0:  # at most twice as many commits: groups may grow
                    every = self.every
                    self.every = max(1, min(2 * every, _MOST_EVERY, every * PAGES // frames))
        except sqlite3.Error:
            log.exception("store.checkpoint_failed", path=self._path)
            self.failed = True
        finally:
            db.close()

    def close(self) -> None:
        """Stop the thread (the store's connection, closed last, makes the last checkpoint)."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
