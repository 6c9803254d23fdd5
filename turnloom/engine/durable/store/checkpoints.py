"""A SQLite store's WAL checkpoints, made by a thread of their own before a write has to.

In WAL mode a commit appends the pages it changed to the `-wal` file; a checkpoint copies them
into the database file, with an fsync of the WAL before and of the database after
(`synchronous` NORMAL and above), so that the WAL can be written again from its start. SQLite
makes one in the commit that finds the WAL past 1,000 pages: a busy worker's engine loop then
sits in that copy and its fsyncs, 5 to 15 ms every few dozen groups, while no agent moves.

`Checkpointer` makes them first, on a connection of its own, by a thread woken once the WAL
holds about `PAGES` pages (counted in commits, at the pages a commit adds as the checkpoints
measure it). Its checkpoints are PASSIVE, so they never hold a write back, and SQLite releases
the GIL while it copies and syncs, so the loop goes on meanwhile; it checkpoints again what was
committed during one, a few times at most. What is still left then (a few pages) the store's
connection copies at its next commit (`behind`), after which the WAL starts again from its
start. SQLite's own checkpoint stays on, as the bound it was: it comes only when the thread
lags (a slow disk); and if the WAL reaches about `LIMIT` pages while the thread's checkpoint
is under way, the store's connection waits for it to end and copies the rest, as SQLite's own
checkpoint would have waited for its copy and syncs.

Nothing is written later or synced less: a commit is in the WAL before the host hears of it
(and synced with `synchronous` FULL), and the WAL is synced when it holds about 500 pages
instead of 1,000. Replayed writes of 64 agents in groups of 21, a group every 0.5 ms: 320 µs
a group on average with SQLite's own checkpoints (1 in 100 over 11 ms), 225 µs with the
thread's (1 in 100 over 1.1 ms).
"""

from __future__ import annotations

import sqlite3
import threading

from ...support.logs import get_logger

log = get_logger("turnloom.store")

#: About how many pages the WAL holds when the thread checkpoints it: half SQLite's own
#: threshold (1,000 pages).
PAGES = 500
#: About how many pages the WAL holds at most before the store's connection checkpoints it by
#: itself, once the thread's checkpoint under way is over: what a slow disk lets the thread
#: lag by. Below SQLite's own threshold, the pages being counted in commits (`per_commit`).
LIMIT = 800
#: Pages a commit is taken to add to the WAL until the checkpoints measure it (on the high
#: side: the first checkpoints come early rather than late).
_FIRST_PER_COMMIT = 16.0
#: Checkpoints the thread makes back to back at most, each copying what was committed during
#: the one before, until the WAL is all copied.
_PASSES = 3
#: The most the WAL's file keeps of its size when it starts again (bytes: SQLite's threshold,
#: 1,000 pages of 4 KiB with their headers): a WAL that grew while a checkpoint lagged is cut
#: back (`PRAGMA journal_size_limit`).
WAL_LIMIT = 1000 * (4096 + 24) + 32


class Checkpointer:
    """Checkpoints the WAL of the SQLite file at `path` when it holds about `PAGES` pages, with
    the store's `synchronous` setting, on a thread of its own. The store's connection calls
    `committed` after each commit; it copies what the thread left when `behind` is set, and
    checkpoints the WAL itself when `committed` says it holds `LIMIT` pages."""

    def __init__(self, path: str, synchronous: str) -> None:
        self._path = path
        self._synchronous = synchronous
        self._wake = threading.Event()
        self._stopping = False
        #: Commits since the WAL last started again (all of it copied), and since the thread
        #: was last woken.
        self.since = 0
        self._commits = 0
        #: Pages a commit adds to the WAL: the most the checkpoints measured lately.
        self.per_commit = _FIRST_PER_COMMIT
        #: Whether the thread failed (logged): the store's connection then hands the
        #: checkpoints back to SQLite.
        self.failed = False
        #: Checkpoints made so far (passes in a row count once).
        self.made = 0
        #: Set when the thread's last checkpoint left pages committed meanwhile: the store's
        #: connection copies them itself at its next commit (a few pages), after which the
        #: WAL starts again from its start.
        self.behind = False
        self._thread = threading.Thread(target=self._run, name="turnloom-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> bool:
        """Count a commit of the store's connection, waking the thread once the WAL holds
        about `PAGES` pages; True once it holds about `LIMIT`."""
        self.since += 1
        self._commits += 1
        per_commit = self.per_commit
        if self._commits * per_commit >= PAGES:
            self._commits = 0
            self._wake.set()
        return self.since * per_commit >= LIMIT

    def copied_all(self) -> None:
        """The store's connection copied the whole WAL: it starts again at the next commit."""
        self.since = 0
        self._commits = 0

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
                commits = self.since
                # The WAL's pages since it last started again, and those copied (both -1:
                # another checkpoint was under way, the store's connection's).
                _, pages, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                left = pages
                for _ in range(_PASSES - 1):
                    if copied == left:
                        break
                    _, left, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.made += 1
                if left < 0:
                    pass  # the store's connection's checkpoint says how it went
                elif copied == left:
                    self.since = 0
                else:
                    self.behind = True
                if pages > 0 and commits > 0:  # the latest measure, or a slowly lower one
                    self.per_commit = max(pages / commits, 0.9 * self.per_commit)
        except sqlite3.Error:
            log.exception("store.checkpoint_failed", path=self._path)
            self.failed = True
        finally:
            db.close()

    def close(self) -> None:
        """Stop the thread and close its connection."""
        self._stopping = True
        self._wake.set()
        self._thread.join()
