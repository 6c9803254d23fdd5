"""SQLite's log copied back into the file by the store's own thread
(docs/reference/durability.md#stores): the log stays short, the commits do not wait for the
big copy, the data is whole after a close, and a checkpoint that fails is logged, not raised.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import structlog

from turnloom.engine.durable.store import SQLiteStore, log_checkpoints

#: Rows written before each pass, in these tests (a few groups).
ROWS = 40
#: Agents written in turn, each row a whole page of the log (a 3,000-byte document).
AGENTS = 200
GROUP = 10


def _document(agent_id: int, round_: int) -> bytes:
    return f"{agent_id}:{round_}:".encode().ljust(3000, b".")


def _write(store: SQLiteStore, groups: int) -> dict[int, bytes]:
    """`groups` groups of `GROUP` whole snapshots, each group written once the pass it
    started (if any) is done; the last document written of each agent."""
    last = {}
    for group in range(groups):
        writes = []
        for index in range(GROUP):
            agent_id = 1 + (group * GROUP + index) % AGENTS
            last[agent_id] = _document(agent_id, group)
            writes.append((agent_id, last[agent_id], None))
        assert store.save_many(writes) == []
        _pass_done(store)
    return last


def _pass_done(store: SQLiteStore) -> None:
    """Wait until the checkpoint thread is not in a pass (it copies a few pages), or gone."""
    checkpoints = store._checkpoints
    assert checkpoints is not None
    deadline = time.monotonic() + 30
    thread = checkpoints._thread
    while checkpoints._wake.is_set() and thread is not None and thread.is_alive():
        assert time.monotonic() < deadline, "the checkpoint pass never ended"
        time.sleep(0.001)


def _log_pages(path: Path) -> int:
    """How long the log file has grown (pages): it starts again from its beginning at a commit
    that finds all of it copied, so it grows only between two such commits."""
    size = os.path.getsize(f"{path}-wal")
    return max(0, (size - 32) // (4096 + 24))


def _stored(path: Path) -> dict[int, bytes]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT agent_id, document FROM turnloom_agents"))


@pytest.fixture
def small_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(log_checkpoints, "ROWS", ROWS)


@pytest.mark.usefixtures("small_passes")
def test_the_log_stays_short_and_the_file_holds_every_write(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    last = _write(store, 150)  # 1,500 rows, a page of log each
    assert store._checkpoints is not None and store._checkpoints.passes >= 1500 // (ROWS + GROUP)
    # A pass and its finishing commit between every ROWS rows: the log never held many more.
    assert _log_pages(path) <= 3 * ROWS
    store.close()
    assert not path.with_name("game.db-wal").exists()  # the close copied the rest back
    assert _stored(path) == last


def test_without_the_passes_the_log_grows_to_the_backstop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same writes with no pass (the store's thread never woken): what the test above
    # would see if the passes did not keep the log short.
    monkeypatch.setattr(log_checkpoints, "ROWS", 10**9)
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    last = _write(store, 150)
    assert _log_pages(path) > 1000
    store.close()
    assert _stored(path) == last


@pytest.mark.usefixtures("small_passes")
def test_the_copies_are_the_threads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    where = []
    checkpoint = log_checkpoints._checkpoint

    def recorded(db: sqlite3.Connection) -> tuple[int, int] | None:
        where.append(threading.current_thread().name)
        return checkpoint(db)

    monkeypatch.setattr(log_checkpoints, "_checkpoint", recorded)
    store = SQLiteStore(tmp_path / "game.db")
    _write(store, 2 * (ROWS // GROUP) + 1)
    checkpoints = store._checkpoints
    assert checkpoints is not None and checkpoints.passes == 2
    # Nothing committed during a pass: its second copy finds nothing new, and the thread is
    # caught up alone (the writes copy nothing themselves).
    assert where == ["turnloom-checkpoint"] * 4
    assert not checkpoints.finishing
    store.close()
    assert not any(thread.name == "turnloom-checkpoint" for thread in threading.enumerate())


def _group(store: SQLiteStore, round_: int) -> None:
    writes = [(1 + i, _document(1 + i, round_), None) for i in range(GROUP)]
    assert store.save_many(writes) == []


def _log_now(path: Path) -> int:
    """The log's length now (pages; what a checkpoint from another connection reports)."""
    with sqlite3.connect(path) as look:
        busy, frames, _copied = look.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0
    return int(frames)


@pytest.mark.usefixtures("small_passes")
def test_what_is_committed_during_a_pass_is_copied_by_the_same_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copied_once, committed = threading.Event(), threading.Event()
    where = []
    checkpoint = log_checkpoints._checkpoint

    def between(db: sqlite3.Connection) -> tuple[int, int] | None:
        where.append(threading.current_thread().name)
        done = checkpoint(db)
        if not copied_once.is_set():  # a group is committed after the pass's first copy
            copied_once.set()
            assert committed.wait(30)
        return done

    monkeypatch.setattr(log_checkpoints, "_checkpoint", between)
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    for round_ in range(ROWS // GROUP):  # the last wakes the thread
        _group(store, round_)
    assert copied_once.wait(30)
    _group(store, 100)  # during the pass
    committed.set()
    _pass_done(store)
    checkpoints = store._checkpoints
    assert checkpoints is not None and not checkpoints.finishing
    # The first copy, one of group 100's pages, one that found nothing new.
    assert where == ["turnloom-checkpoint"] * 3
    _group(store, 101)  # its commit starts the log again
    assert _log_now(path) <= 2 * GROUP
    store.close()
    assert _stored(path) == {1 + i: _document(1 + i, 101) for i in range(GROUP)}


@pytest.mark.usefixtures("small_passes")
def test_what_a_pass_could_not_copy_is_copied_before_the_next_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pass copies the log as it stood when it began; a reader that began before the last
    # group (as a commit made during the pass does) keeps that group out of it. The store's
    # next write copies it first, and its commit starts the log again.
    gate = threading.Event()
    checkpoint = log_checkpoints._checkpoint

    def held(db: sqlite3.Connection) -> tuple[int, int] | None:
        if threading.current_thread().name == "turnloom-checkpoint":
            assert gate.wait(30)
        return checkpoint(db)

    monkeypatch.setattr(log_checkpoints, "_checkpoint", held)
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    checkpoints = store._checkpoints
    assert checkpoints is not None
    for round_ in range(ROWS // GROUP):  # the last wakes the thread, held at the gate
        _group(store, round_)
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM turnloom_agents").fetchone()
    _group(store, 100)  # after the reader's snapshot: the pass cannot copy it
    gate.set()
    _pass_done(store)
    assert checkpoints.finishing  # no copy of the pass caught up
    reader.execute("COMMIT")
    reader.close()
    _group(store, 101)  # copies group 100 first, then starts the log again
    assert _log_now(path) <= 2 * GROUP  # group 101's pages, not all since the start
    store.close()
    assert _stored(path) == {1 + i: _document(1 + i, 101) for i in range(GROUP)}


@pytest.mark.usefixtures("small_passes")
def test_a_failing_checkpoint_is_logged_and_every_write_still_lands(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    checkpoints = store._checkpoints
    assert checkpoints is not None
    checkpoints._path = tmp_path  # a folder: the thread's connection cannot open it
    with structlog.testing.capture_logs() as logs:
        last = _write(store, 10)
        assert checkpoints._thread is not None
        checkpoints._thread.join(30)
    assert [entry["event"] for entry in logs] == ["store.checkpoint_failed"]
    store.close()
    assert _stored(path) == last


def test_a_store_in_memory_has_no_log_to_copy() -> None:
    store = SQLiteStore(":memory:")
    assert store._checkpoints is None
    assert store.save_many([(1, _document(1, 0), None)]) == []
    assert store.stored(1) == _document(1, 0)
    store.close()
