"""A SQLite store's WAL checkpoints are made by a thread of their own (`store.checkpoints`)
before the commit that finds the WAL full would make them: the WAL still starts again from its
start, it stays as small as SQLite keeps it when the thread lags, every write is read back
whole (by a new store, and by one opened after a crash), and a thread that fails leaves the
checkpoints to SQLite's own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from turnloom.engine.durable.store import SQLiteStore
from turnloom.engine.durable.store.parts import SplitWrite, assemble, parts_marker

#: 64 agents, each head about a kilobyte: a group of 16 changes a dozen pages.
AGENTS = 64


def _group(round_: int, first: int) -> list[tuple[int, bytes | SplitWrite, float | None]]:
    return [
        (agent_id, f"{agent_id}:{round_}:".encode().ljust(1000, b"."), None)
        for agent_id in range(first, first + 16)
    ]


def _write_rounds(store: SQLiteStore, rounds: int, start: int = 0) -> None:
    for round_ in range(start, start + rounds):
        for first in range(1, AGENTS + 1, 16):
            assert store.save_many(_group(round_, first)) == []


def _wal_pages(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size // 4096 if wal.exists() else 0


def _until(check: object, what: str) -> None:
    """Wait for the checkpoints' thread (it runs when the scheduler lets it)."""
    for _ in range(2000):
        if check():  # type: ignore[operator]
            return
        time.sleep(0.005)
    raise AssertionError(f"never: {what}")


def test_the_thread_checkpoints_and_the_wal_starts_again(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    thread = store._checkpoints
    assert thread is not None
    # SQLite's own checkpoints stay on, as a bound: the thread's come first.
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    for round_ in range(200):  # about 12 pages a group: 9,600 pages written in all
        _write_rounds(store, 1, round_)
        if round_ == 100:
            _until(lambda: thread.made > 0, "a checkpoint by the thread")
    assert thread.made > 0
    # The database file holds what the checkpoints copied, and the WAL was written again from
    # its start after them: it never held the 9,600 pages written.
    assert path.stat().st_size > AGENTS * 1000
    assert _wal_pages(path) < 1100  # SQLite's own bound: 1,000 pages and the last commit's
    store.close()
    assert not thread._thread.is_alive()
    again = SQLiteStore(path)
    stored = dict(again.load_all())
    assert stored == {i: f"{i}:199:".encode().ljust(1000, b".") for i in range(1, AGENTS + 1)}
    again.close()


def test_a_store_in_memory_has_no_checkpoints_thread() -> None:
    store = SQLiteStore(":memory:")
    assert store._checkpoints is None
    store.save_many(_group(0, 1))
    assert dict(store.load_all())[1].startswith(b"1:0:")
    store.close()


def test_a_stopped_thread_leaves_the_wal_as_small_as_sqlite_keeps_it(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    thread = store._checkpoints
    assert thread is not None
    thread.close()  # as stalled as a thread can be: the store's connection checkpoints
    _write_rounds(store, 150)  # 7,200 pages
    assert _wal_pages(path) < 1100  # SQLite's own bound: 1,000 pages and the last commit's
    assert thread.made == 0
    store.close()
    again = SQLiteStore(path)
    assert dict(again.load_all())[64] == b"64:149:".ljust(1000, b".")
    again.close()


def test_a_failed_thread_leaves_the_checkpoints_to_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    thread = store._checkpoints
    assert thread is not None
    thread.close()
    thread.failed = True  # as its connection would after an error
    _write_rounds(store, 1)
    assert store._checkpoints is None  # no longer counted
    assert store._db.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    _write_rounds(store, 150, 1)  # 7,200 pages: SQLite's own checkpoints keep the WAL small
    assert _wal_pages(path) < 1100
    store.close()
    again = SQLiteStore(path)
    assert dict(again.load_all())[64] == b"64:150:".ljust(1000, b".")
    again.close()


def test_split_writes_and_their_parts_survive_the_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    store = SQLiteStore(path)
    head = b"head" + parts_marker(2)
    sealed, tail = b"\x91\xa5first", b"\x91\xa6second"
    store.save_many([(1000, SplitWrite(head, 0, (sealed, tail), True), None)])
    _write_rounds(store, 150)  # checkpoints come and go between these writes
    store.save_many([(1000, SplitWrite(b"head again" + parts_marker(2), None), None)])
    assert store.stored(1000) == assemble(b"head again" + parts_marker(2), [sealed, tail])
    store.close()


_CRASHING_WRITER = """
import os, sys
from turnloom.engine.durable.store import SQLiteStore
store = SQLiteStore(sys.argv[1])
for round_ in range(int(sys.argv[2])):
    for first in range(1, 65, 16):
        store.save_many([(i, f"{i}:{round_}:".encode().ljust(1000, b"."), None)
                         for i in range(first, first + 16)])
print(store._checkpoints.made, flush=True)
os.kill(os.getpid(), 9)  # no close: whatever the checkpoints' thread was doing
"""


@pytest.mark.parametrize("rounds", [60, 250])
def test_every_commit_is_read_back_after_a_crash(tmp_path: Path, rounds: int) -> None:
    path = tmp_path / "game.db"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, str(path), str(rounds)],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        check=False,
    )
    assert done.returncode == -9, done.stderr
    store = SQLiteStore(path)
    last = rounds - 1
    assert dict(store.load_all()) == {
        i: f"{i}:{last}:".encode().ljust(1000, b".") for i in range(1, AGENTS + 1)
    }
    store.close()
