"""A SQLite store's WAL checkpoints, made by a thread of their own before a write has to.

In WAL mode a commit appends the pages it changed to the `-wal` file; a checkpoint copies them
into the database file, with an fsync of the WAL before and of the database after
(`synchronous` NORMAL and above), so that the WAL can be written again from its start. SQLite
makes one in the commit that finds the WAL past 1,000 pages: a busy worker's engine loop then
sits in that copy and its fsyncs, milliseconds every few dozen groups, while no agent moves.

`Checkpointer` makes them first, on a connection of its own, by a thread woken every so many
commits (when the WAL holds about `PAGES` pages: the count of commits is adjusted to what each
checkpoint finds). Its checkpoints are PASSIVE, so they never hold a write back, and SQLite
releases the GIL while it copies and syncs, so the loop goes on meanwhile; it checkpoints
again what was committed during one, at most `_PASSES` times in a row. Once the WAL is all
copied, the next commit writes it again from its start, and SQLite's own checkpoint, still on,
never comes; if the thread falls behind, SQLite's own checkpoint finds most of the WAL copied
and synced already, and keeps the WAL as small as it does without the thread.

Nothing is written later or synced less: a commit is in the WAL before the host hears of it
(and synced with `synchronous` FULL), and the WAL is synced at least as often as before.
"""

from __future__ import annotations

import sqlite3
import threading

from ...support.logs import get_logger

log = get_logger("turnloom.store")

#: About how many pages the WAL holds when the thread checkpoints it: below SQLite's own
#: threshold (1,000), so that the thread's checkpoint comes first.
PAGES = 800
#: Commits between the first checkpoints, before the count is adjusted to what they found.
_FIRST_EVERY = 16
_MOST_EVERY = 100_000
#: Checkpoints the thread makes back to back at most, each copying what was committed during
#: the one before, until the WAL is all copied.
_PASSES = 3


class Checkpointer:
    """Checkpoints the WAL of the SQLite file at `path` when it holds about `PAGES` pages
    (counted in commits: the store's connection calls `committed` after each), with the
    store's `synchronous` setting, on a thread of its own."""

    def __init__(self, path: str, synchronous: str) -> None:
        self._path = path
        self._synchronous = synchronous
        self._wake = threading.Event()
        self._stopping = False
        self._commits = 0
        #: Commits between two checkpoints (adjusted after each).
        self.every = _FIRST_EVERY
        #: Whether the thread failed (logged; SQLite's own checkpoints go on).
        self.failed = False
        #: Checkpoints made so far (passes in a row count once).
        self.made = 0
        self._thread = threading.Thread(target=self._run, name="turnloom-checkpoint", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """Count a commit of the store's connection; every `every`, wake the thread."""
        self._commits += 1
        if self._commits >= self.every:
            self._commits = 0
            self._wake.set()

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
                # The WAL's pages since it last started again (-1: another checkpoint runs).
                _, pages, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                left = pages
                for _ in range(_PASSES - 1):
                    if copied >= left:
                        break
                    _, left, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                self.made += 1
                if pages > 0:  # at most twice as many commits at once: groups may grow
                    every = self.every
                    self.every = max(1, min(2 * every, _MOST_EVERY, every * PAGES // pages))
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
