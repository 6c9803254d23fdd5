"""Store files turnloom cannot use, and rows it cannot read, on real SQLite files
(docs/reference/durability.md#refused-snapshots and #stores).

A path that is a folder or in a missing folder, a turnloom store of a newer schema, another
application's database and a file whose turnloom tables have another shape are refused with
3007 naming the file, and the file is left as it was: same bytes, no -wal or -shm beside it. A
row this engine cannot read (a value that is not a BLOB, an id no agent may have) is logged
(`store.restore_failed`) and left in the file, and the ids given out stay ones SQLite holds.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import structlog

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable.store.base import LARGEST_AGENT_ID as LARGEST


def _engine(path: Path) -> tl.Engine:
    return tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=str(path))


def _files(folder: Path) -> dict[str, bytes | None]:
    """Every file and folder under `folder` with its bytes (None for a folder)."""
    return {
        str(p.relative_to(folder)): None if p.is_dir() else p.read_bytes()
        for p in sorted(folder.rglob("*"))
    }


def _sql(path: Path, *statements: str, wal: bool = False) -> None:
    """Run `statements` on the file with Python's own sqlite3, as another program would."""
    db = sqlite3.connect(path)
    if wal:
        db.execute("PRAGMA journal_mode=WAL")
    for statement in statements:
        db.execute(statement)
    db.commit()
    db.close()


def _refused(path: Path, folder: Path) -> str:
    """The message of the 3007 opening `path` gives, once it is checked that nothing under
    `folder` changed."""
    before = _files(folder)
    with pytest.raises(tl.InvalidParamValue) as refused:
        _engine(path)
    assert refused.value.code == tl.ErrorCode.InvalidParamValue
    assert str(path) in refused.value.message
    assert _files(folder) == before  # the same bytes, and no -wal or -shm left beside it
    return refused.value.message


def _rows(path: Path, agent_id: int) -> list[tuple[object, ...]]:
    """What the file holds of the agent, in each of its tables."""
    db = sqlite3.connect(path)
    rows = [
        row
        for table in ("turnloom_agents", "turnloom_dialog", "turnloom_constant")
        for row in db.execute(f"SELECT * FROM {table} WHERE agent_id = ?", (agent_id,))
    ]
    db.close()
    return rows


def _row(agent_id: int, document: bytes) -> str:
    """The statement that stores `document` as the whole snapshot of `agent_id`."""
    return (
        f"INSERT INTO turnloom_agents (agent_id, document) VALUES ({agent_id}, x'{document.hex()}')"
    )


def _store_with_an_agent(path: Path) -> bytes:
    """A store holding agent 1 after a completed turn (its row has a tail and constant
    entries kept apart), and that agent's whole snapshot."""
    with _engine(path) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        scenario.finish(agent, agent.send_message("hi"), "pause")
        return bytes(agent.snapshot())


@pytest.mark.parametrize("where", ["a folder", "in a missing folder"])
def test_a_folder_or_a_path_in_a_missing_folder_is_refused_by_name(
    tmp_path: Path, where: str
) -> None:
    (tmp_path / "saves").mkdir()
    path = tmp_path / "saves" if where == "a folder" else tmp_path / "gone" / "game.db"
    message = _refused(path, tmp_path)
    assert "cannot be opened" in message and "folder that exists" in message


def test_a_store_of_a_newer_schema_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "newer.db"
    _sql(
        path,
        "CREATE TABLE turnloom_meta (key TEXT PRIMARY KEY, value TEXT)",
        "INSERT INTO turnloom_meta VALUES ('schema', '4')",
        "CREATE TABLE turnloom_agents (agent_id INTEGER PRIMARY KEY, document BLOB NOT NULL)",
    )
    message = _refused(path, tmp_path)
    assert "store schema 4, this turnloom reads 3" in message and "newer turnloom" in message


@pytest.mark.parametrize(
    "statements",
    [
        ["CREATE TABLE turnloom_meta (id INTEGER)"],
        [
            "CREATE TABLE turnloom_meta (key TEXT PRIMARY KEY, value TEXT)",
            "INSERT INTO turnloom_meta VALUES ('schema', '3')",
            "CREATE TABLE turnloom_agents (x TEXT)",
            "INSERT INTO turnloom_agents VALUES ('y')",
        ],
        [
            "CREATE TABLE turnloom_meta (key TEXT PRIMARY KEY, value TEXT)",
            "CREATE TABLE turnloom_dialog (agent_id INTEGER, messages TEXT)",
        ],
    ],
    ids=["meta", "agents", "dialog"],
)
def test_turnloom_tables_of_another_shape_are_refused_and_left_as_they_were(
    tmp_path: Path, statements: list[str]
) -> None:
    path = tmp_path / "clash.db"
    _sql(path, *statements)
    table = statements[-1].split()[2]
    assert f"has a table {table} of columns" in _refused(path, tmp_path)


@pytest.mark.parametrize("wal", [False, True], ids=["rollback-journal", "wal"])
def test_another_applications_database_is_refused_and_left_as_it_was(
    tmp_path: Path, wal: bool
) -> None:
    # A game that gives the store its own save database by mistake gets it back unconverted.
    path = tmp_path / "saves.db"
    _sql(
        path,
        "CREATE TABLE highscores (name TEXT, score INTEGER)",
        "INSERT INTO highscores VALUES ('mira', 12)",
        wal=wal,
    )
    message = _refused(path, tmp_path)
    assert "another application's SQLite database (tables ['highscores'])" in message
    db = sqlite3.connect(path)
    assert [name for (name,) in db.execute("SELECT name FROM sqlite_master")] == ["highscores"]
    db.close()


@pytest.mark.parametrize("kind", ["new path", "empty file", "empty SQLite database"])
def test_a_new_path_or_an_empty_file_becomes_a_store(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "game.db"
    if kind == "empty file":
        path.write_bytes(b"")
    elif kind == "empty SQLite database":
        _sql(path, "PRAGMA user_version = 7")
    with _engine(path) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        agent.send_message("hi")
    with _engine(path) as engine:
        assert engine.agent_ids() == [agent.agent_id]


@pytest.mark.parametrize(
    ("edit", "broken"),
    [
        ("INSERT INTO turnloom_agents (agent_id, document) VALUES (5, 'hello')", 5),
        ("INSERT INTO turnloom_agents (agent_id, document) VALUES (5, 12)", 5),
        ("UPDATE turnloom_agents SET tail = 'oops' WHERE agent_id = 1", 1),
        ("UPDATE turnloom_agents SET tail = 7 WHERE agent_id = 1", 1),
        ("UPDATE turnloom_constant SET entries = 'abc' WHERE agent_id = 1", 1),
        ("INSERT INTO turnloom_dialog VALUES (1, 0, 'part')", 1),
    ],
    ids=["document-text", "document-integer", "tail-text", "tail-integer", "constant-text",
         "part-text"],
)  # fmt: skip
def test_a_row_with_a_value_that_is_not_a_blob_is_logged_and_left_its_id_kept(
    tmp_path: Path, edit: str, broken: int
) -> None:
    path = tmp_path / "game.db"
    _store_with_an_agent(path)
    _sql(path, edit)
    before = _rows(path, broken)
    with structlog.testing.capture_logs() as logs, _engine(path) as engine:
        assert engine.agent_ids() == [i for i in (1,) if i != broken]
        # Its id stays its own: a new agent takes the next one.
        assert engine.create_agent(scenario.graph("pause")).agent_id == broken + 1
    failed = [log["agent_id"] for log in logs if log["event"] == "store.restore_failed"]
    assert failed == [broken]
    assert _rows(path, broken) == before  # left in the file as it was


def test_a_dialog_part_whose_agent_id_is_not_a_number_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    _store_with_an_agent(path)
    with _engine(path) as engine:
        dialog = engine.agent(1).dialog
    _sql(path, "INSERT INTO turnloom_dialog VALUES ('npc', 0, x'90')")
    with _engine(path) as engine:
        assert engine.agent_ids() == [1]
        assert engine.agent(1).dialog == dialog


def test_rows_whose_id_no_agent_may_have_are_left_and_new_ids_stay_storable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "game.db"
    whole = _store_with_an_agent(path)
    outside = [-3, 0, LARGEST + 1, 2**63 - 1]
    _sql(path, *[_row(i, whole) for i in outside])
    with structlog.testing.capture_logs() as logs, _engine(path) as engine:
        assert engine.agent_ids() == [1]
        new = engine.create_agent(scenario.graph("pause"))
        assert new.agent_id == 2
        new.send_message("remember me")
    failed = [log["agent_id"] for log in logs if log["event"] == "store.restore_failed"]
    assert failed == outside
    with _engine(path) as engine:
        assert engine.agent_ids() == [1, 2]  # the new agent was written
    assert all(_rows(path, i) == [(i, whole, None)] for i in outside)  # left as they were


def test_after_the_largest_id_a_store_holds_no_new_id_is_given(tmp_path: Path) -> None:
    # The largest id is read back, and a new agent is refused rather than given an id past
    # what a store holds (nothing is created: the next restart would skip it).
    path = tmp_path / "game.db"
    whole = _store_with_an_agent(path)
    _sql(path, _row(LARGEST, whole))
    with _engine(path) as engine:
        assert engine.agent_ids() == [1, LARGEST]
        with pytest.raises(tl.InvalidParamValue, match="no agent id is left"):
            engine.create_agent(scenario.graph("pause"))
        assert engine.agent_ids() == [1, LARGEST]
    assert not _rows(path, LARGEST + 1)


def test_a_save_slot_that_is_not_a_blob_is_refused_with_3007(tmp_path: Path) -> None:
    path = tmp_path / "game.db"
    with _engine(path) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        agent.send_message("hi")
        agent.save("before-the-door")
    _sql(path, "UPDATE turnloom_slots SET document = 'hello'")
    with _engine(path) as engine, pytest.raises(tl.InvalidParamValue, match="snapshot"):
        engine.load("before-the-door")
