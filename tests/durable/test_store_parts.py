"""The built-in stores keep an agent's dialog apart from the rest of its snapshot
(`engine/durable/store/parts.py`): a pause writes the head alone, a completion the head and one
part; what a store reads back is the whole snapshot, byte for byte. On SQLite and on a real
Redis server.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import pytest

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable.dialog_parts import TAIL_TURNS
from turnloom.engine.durable.head import HeadPacker
from turnloom.engine.durable.restore import read_snapshot
from turnloom.engine.durable.snapshot import head_document, pack
from turnloom.engine.durable.store import SQLiteStore, open_store
from turnloom.engine.durable.store.base import LeaseLost
from turnloom.engine.durable.store.parts import SplitWrite, assemble, parts_marker
from turnloom.engine.durable.store.redis import RedisStore
from turnloom.engine.support.rejections import InvalidParamValue

StoreSpec = Callable[[], Any]


def _engine(store: Any) -> tl.Engine:
    return tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=store)


def _parts(store: Any, agent_id: int) -> list[bytes]:
    """The agent's dialog parts as the store keeps them: the sealed ones, then the tail (in
    the agent's row on SQLite, in a hash beside the heads on Redis)."""
    if isinstance(store, SQLiteStore):
        rows = store._db.execute(
            "SELECT messages FROM turnloom_dialog WHERE agent_id = ? ORDER BY part", (agent_id,)
        )
        (tail,) = store._db.execute(
            "SELECT tail FROM turnloom_agents WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        return [bytes(messages) for (messages,) in rows] + ([] if tail is None else [tail])
    assert isinstance(store, RedisStore)
    sealed = list(store._client.lrange(f"{store.prefix}:dialog:{agent_id}", 0, -1))
    tail = store._client.hget(f"{store.prefix}:tails", agent_id)
    return sealed + ([] if tail is None else [tail])


def _drop_parts(store: Any, agent_id: int) -> None:
    if isinstance(store, SQLiteStore):
        store._db.execute("DELETE FROM turnloom_dialog WHERE agent_id = ?", (agent_id,))
        store._db.execute("UPDATE turnloom_agents SET tail = NULL WHERE agent_id = ?", (agent_id,))
    else:
        store._client.delete(f"{store.prefix}:dialog:{agent_id}")
        store._client.hdel(f"{store.prefix}:tails", agent_id)


def _turns(part: bytes) -> list[str]:
    """The user messages of a part."""
    return [m["content"] for m in msgpack.unpackb(part) if m["role"] == "user"]


def _writes(store: Any) -> list[tuple[int, Any]]:
    """Every (agent id, document) `save_many` (or `send_ahead`) is given from now on, in
    order."""
    seen: list[tuple[int, Any]] = []
    save_many, send_ahead = store.save_many, store.send_ahead

    def recorded(writes: Any) -> list[int]:
        seen.extend((agent_id, document) for agent_id, document, _ in writes)
        return save_many(writes)

    def recorded_ahead(writes: Any) -> bool:
        sent = send_ahead(writes)
        if sent:
            seen.extend((agent_id, document) for agent_id, document, _ in writes)
        return sent

    store.save_many, store.send_ahead = recorded, recorded_ahead
    return seen


def _fail_next_write(store: Any) -> None:
    """Make the store's next group write fail, as a store that is away does (written at once,
    or sent ahead and its answer read)."""
    save_many, read_sent = store.save_many, store.read_sent

    def fails_once(*writes: Any) -> list[int]:
        store.save_many, store.read_sent = save_many, read_sent
        raise ConnectionError("the store is away")

    store.save_many, store.read_sent = fails_once, fails_once


def test_the_stored_agent_is_its_whole_snapshot_at_every_rest(store_spec: StoreSpec) -> None:
    store = open_store(store_spec())
    with _engine(store) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        for turn in range(1, 71):
            assert agent.send_message(f"turn {turn}").paused
            assert store.stored(agent.agent_id) == agent.snapshot()
            assert agent.resume().final.status is tl.TurnStatus.SUCCESS
            assert store.stored(agent.agent_id) == agent.snapshot()
            # Sealed parts of 16 turns merged binary-counter style (as many as the 1 bits of
            # the count of sixteens), then the tail of the turns after them.
            sealed, tail = divmod(turn, TAIL_TURNS)
            parts = _parts(store, agent.agent_id)
            assert len(parts) == sealed.bit_count() + (1 if tail else 0)
            last = tail or TAIL_TURNS * (sealed & -sealed)  # the tail, or the smallest sealed
            assert parts[-1] == msgpack.packb(agent.dialog[-2 * last :])
        dialog = agent.dialog
    with _engine(store_spec()) as again:
        assert again.agent(agent.agent_id).dialog == dialog


def test_a_pause_writes_the_head_alone_and_a_completion_one_part(store_spec: StoreSpec) -> None:
    store = open_store(store_spec())
    with _engine(store) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        scenario.finish(agent, agent.send_message("one"), "pause")
        scenario.finish(agent, agent.send_message("two"), "pause")
        writes = _writes(store)
        agent.send_message("three")
        ((_, paused),) = writes
        assert isinstance(paused, SplitWrite)
        assert (paused.base, paused.parts) == (None, ())
        assert paused.head.endswith(parts_marker(1))  # 2 turns: the tail
        agent.resume()
        _, completed = writes[1]
        assert (completed.base, len(completed.parts), completed.tail) == (0, 1, True)
        assert completed.head.endswith(parts_marker(1))
        (part,) = completed.parts
        assert _turns(part) == ["one", "two", "three"]  # the tail, written again
        for turn in range(4, TAIL_TURNS + 2):
            scenario.finish(agent, agent.send_message(str(turn)), "pause")
        # Each turn: its pause, its params changed (`finish`), its completion.
        sealed, tail = writes[-4], writes[-1]  # the completions of turns 16 and 17
        assert (sealed[1].base, len(sealed[1].parts), sealed[1].tail) == (0, 1, False)
        assert (tail[1].base, len(tail[1].parts), tail[1].tail) == (1, 1, True)
        assert _turns(tail[1].parts[0]) == [str(TAIL_TURNS + 1)]


def test_a_write_that_failed_makes_the_next_one_write_the_dialog_whole(
    store_spec: StoreSpec,
) -> None:
    store = open_store(store_spec())
    with _engine(store) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        for turn in range(3):
            scenario.finish(agent, agent.send_message(f"turn {turn}"), "pause")
        _fail_next_write(store)
        agent.send_message("lost")  # logged, and the turn goes on
        writes = _writes(store)
        agent.resume()
        ((_, whole),) = writes
        assert (whole.base, len(whole.parts)) == (0, 1)  # every part replaced: the tail
        assert store.stored(agent.agent_id) == agent.snapshot()
        assert len(_parts(store, agent.agent_id)) == 1


def test_a_group_of_pauses_and_completions_is_one_sqlite_statement(tmp_path: Path) -> None:
    """A group that changes no sealed part is one statement, its own transaction: a pause's
    head keeps the stored tail, a completion's replaces it, and each agent reads back whole."""
    store = SQLiteStore(tmp_path / "game.db")

    def head(agent: str, version: int) -> bytes:
        return pack({"agent": agent, "version": version, "dialog": 2})

    def part(*texts: str) -> bytes:
        return pack([{"role": "user", "content": text} for text in texts])

    store.save_many(
        [
            (1, SplitWrite(head("a", 1), 0, (part("a1"), part("a2")), True), None),
            (2, SplitWrite(head("b", 1), 0, (part("b1"), part("b2")), True), None),
        ]
    )
    statements: list[str] = []
    store._db.set_trace_callback(statements.append)
    store.save_many(
        [
            (1, SplitWrite(head("a", 2), None), None),  # a pause: the head alone
            (2, SplitWrite(head("b", 2), 1, (part("b2", "b3"),), True), None),  # a completion
        ]
    )
    assert [statement.split()[0] for statement in statements] == ["INSERT"]
    assert _parts(store, 1) == [part("a1"), part("a2")]  # the tail kept
    assert _parts(store, 2) == [part("b1"), part("b2", "b3")]
    assert store.stored(1) == assemble(head("a", 2), [part("a1"), part("a2")])
    assert store.stored(2) == assemble(head("b", 2), [part("b1"), part("b2", "b3")])
    store.close()


def test_an_agent_stored_whole_comes_back_and_is_then_kept_in_parts(
    store_spec: StoreSpec,
) -> None:
    with _engine(":memory:") as elsewhere:
        agent = elsewhere.create_agent(scenario.graph("pause"))
        for turn in range(5):
            scenario.finish(agent, agent.send_message(f"turn {turn}"), "pause")
        whole = agent.snapshot()
    store = open_store(store_spec())
    agent_id = store.allocate_id(True) if isinstance(store, RedisStore) else 1
    store.save(agent_id, whole)  # the layout before dialogs were kept apart
    assert _parts(store, agent_id) == [] and store.stored(agent_id) == whole
    with _engine(store) as engine:
        agent = engine.restore(whole) if isinstance(store, RedisStore) else engine.agent(agent_id)
        assert agent.dialog == tl.AgentSnapshot(whole).to_dict()["dialog"]
        scenario.finish(agent, agent.send_message("turn 5"), "pause")
        assert store.stored(agent.agent_id) == agent.snapshot()
        assert _turns(_parts(store, agent.agent_id)[-1]) == [f"turn {turn}" for turn in range(6)]


def test_a_head_without_all_its_parts_is_refused_by_name(store_spec: StoreSpec) -> None:
    store = open_store(store_spec())
    with _engine(store) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        for turn in range(TAIL_TURNS + 1):  # two parts: 16 turns sealed, then the tail
            scenario.finish(agent, agent.send_message(f"turn {turn}"), "pause")
        agent_id = agent.agent_id
        first, second = _parts(store, agent_id)
        _drop_parts(store, agent_id)
        head = store.stored(agent_id)
        assert head.endswith(parts_marker(2))  # the head alone: nothing to put back
        with pytest.raises(InvalidParamValue, match="kept apart in 2 part"):
            read_snapshot(head, lambda name: None)
        with pytest.raises(tl.TurnloomError, match="kept apart in 2 part") as refused:
            engine.restore(tl.AgentSnapshot(head))
        assert refused.value.code is tl.ErrorCode.InvalidParamValue
        # A part short: returned as it is, and refused the same way.
        assert assemble(head, [first]) == head
        assert assemble(head, [first, second]) == agent.snapshot()
        assert assemble(head, [first, b"\xc0"]) == head  # not an array of messages
        # A head with every entry is taken as it is, whatever constant entries come with it;
        # one without them, and none given, is refused by name too.
        assert assemble(head, [first, second], b"\xa6format\xa3odd") == agent.snapshot()
        cut = _head(store, agent_id)
        with pytest.raises(InvalidParamValue, match="not a msgpack document"):
            read_snapshot(assemble(cut, [first, second]), lambda name: None)


def test_a_schema_1_file_is_read_and_marked_schema_3(tmp_path: Path) -> None:
    with _engine(":memory:") as elsewhere:
        agent = elsewhere.create_agent(scenario.graph("pause"))
        scenario.finish(agent, agent.send_message("hi"), "pause")
        whole = bytes(agent.snapshot())
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE turnloom_meta (key TEXT PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO turnloom_meta VALUES ('schema', '1')")
    db.execute(
        "CREATE TABLE turnloom_agents (agent_id INTEGER PRIMARY KEY, document BLOB NOT NULL)"
    )
    db.execute("INSERT INTO turnloom_agents VALUES (1, ?)", (whole,))
    db.commit()
    db.close()
    with _engine(str(path)) as engine:
        assert engine.agent(1).dialog == tl.AgentSnapshot(whole).to_dict()["dialog"]
    db = sqlite3.connect(path)
    assert db.execute("SELECT value FROM turnloom_meta").fetchone() == ("3",)
    db.execute("UPDATE turnloom_meta SET value = '4'")
    db.commit()
    db.close()
    with pytest.raises(InvalidParamValue, match="store schema 4, this turnloom reads 3"):
        SQLiteStore(path)


def _constant(store: Any, agent_id: int) -> bytes | None:
    """The constant entries the store keeps apart for the agent, or None."""
    if isinstance(store, SQLiteStore):
        row = store._db.execute(
            "SELECT entries FROM turnloom_constant WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        return None if row is None else bytes(row[0])
    found = store._client.hget(f"{store.prefix}:constant", agent_id)
    return None if found is None else bytes(found)


def _head(store: Any, agent_id: int) -> bytes:
    """The agent's head as the store keeps it."""
    if isinstance(store, SQLiteStore):
        (head,) = store._db.execute(
            "SELECT document FROM turnloom_agents WHERE agent_id = ?", (agent_id,)
        ).fetchone()
        return bytes(head)
    return bytes(store._client.hget(store.key, agent_id))


def _as_previous_layout(store: Any) -> None:
    """Turn what `store` holds into what the layout before constant entries were kept apart
    held: every head whole (its constant entries back in it: `pack(head_document(...))`, as
    `HeadPacker` packs it whole), no constant entries; on SQLite, a schema 2 file."""
    if isinstance(store, SQLiteStore):
        rows = store._db.execute("SELECT agent_id FROM turnloom_agents").fetchall()
        with store._db:
            for (agent_id,) in rows:
                whole = assemble(_head(store, agent_id), [], _constant(store, agent_id) or b"")
                store._db.execute(
                    "UPDATE turnloom_agents SET document = ? WHERE agent_id = ?", (whole, agent_id)
                )
            store._db.execute("DROP TABLE turnloom_constant")
            store._db.execute("UPDATE turnloom_meta SET value = '2' WHERE key = 'schema'")
        return
    client = store._client
    for agent_id in [int(field) for field in client.hkeys(store.key)]:
        whole = assemble(_head(store, agent_id), [], _constant(store, agent_id) or b"")
        client.hset(store.key, agent_id, whole)
    client.delete(f"{store.prefix}:constant")


def test_a_head_leaves_its_constant_entries_to_the_store_which_keeps_them_once(
    store_spec: StoreSpec,
) -> None:
    store = open_store(store_spec())
    with _engine(store) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        scenario.finish(agent, agent.send_message("one"), "pause")
        writes = _writes(store)
        for turn in range(2, TAIL_TURNS + 3):  # a tail sealed on the way
            assert agent.send_message(f"turn {turn}").paused
            assert agent.resume().final.status is tl.TurnStatus.SUCCESS
        assert writes and all(split.constant is None for _, split in writes)
        snapshot = agent.snapshot()
        constant = _constant(store, agent.agent_id)
        assert constant is not None and snapshot.startswith(b"\xde\x00\x12" + constant)
        head = _head(store, agent.agent_id)
        assert head.startswith(b"\xde\x00\x12\xa7options")  # its header, then the settled ones
        assert assemble(head, _parts(store, agent.agent_id), constant) == snapshot
        assert store.stored(agent.agent_id) == snapshot
        with pytest.raises(InvalidParamValue, match="snapshot"):  # the head alone is refused
            read_snapshot(head, lambda name: None)
        # A write that failed: the next one carries the constant entries again.
        _fail_next_write(store)
        agent.send_message("lost")
        writes = _writes(store)
        agent.resume()
        ((_, again),) = writes
        assert again.constant == constant and again.base == 0
        assert store.stored(agent.agent_id) == agent.snapshot()
        agent.destroy()
        assert _constant(store, agent.agent_id) is None


def test_agents_stored_in_the_previous_layout_come_back_and_are_written_on(
    store_spec: StoreSpec,
) -> None:
    store = open_store(store_spec())
    with _engine(store) as engine:
        long = engine.create_agent(scenario.graph("pause"))
        for turn in range(TAIL_TURNS + 2):  # a sealed part and a tail
            scenario.finish(long, long.send_message(f"turn {turn}"), "pause")
        paused = engine.create_agent(scenario.graph("pause"))
        scenario.finish(paused, paused.send_message("first"), "pause")
        assert paused.send_message("second").paused
        ids = (long.agent_id, paused.agent_id)
        before = {agent_id: store.stored(agent_id) for agent_id in ids}
        if isinstance(store, RedisStore):
            store.release(list(ids))
    store.close()
    store = open_store(store_spec())
    _as_previous_layout(store)
    if isinstance(store, SQLiteStore):
        tables = store._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        assert ("turnloom_constant",) not in tables.fetchall()
    else:
        assert not store._client.exists(f"{store.prefix}:constant")
    for agent_id in ids:
        assert _head(store, agent_id).startswith(b"\xde\x00\x12\xa6format")  # whole
    if isinstance(store, SQLiteStore):
        store.close()
    reopened = open_store(store_spec())
    with _engine(reopened) as engine:
        assert {agent_id: reopened.stored(agent_id) for agent_id in ids} == before
        for agent_id in ids:
            assert engine.agent(agent_id).snapshot() is not None
        restored = engine.agent(paused.agent_id)
        assert restored.resume().final.status is tl.TurnStatus.SUCCESS
        scenario.finish(restored, restored.send_message("third"), "pause")
        again = engine.agent(long.agent_id)
        scenario.finish(again, again.send_message("on"), "pause")
        for agent in (restored, again):  # kept apart from now on, whole when read
            assert _constant(reopened, agent.agent_id) is not None
            assert reopened.stored(agent.agent_id) == agent.snapshot()
        assert [m["content"] for m in again.dialog if m["role"] == "user"][-1] == "on"
    if isinstance(store, SQLiteStore):
        db = sqlite3.connect(store_spec())
        assert db.execute("SELECT value FROM turnloom_meta").fetchone() == ("3",)
        db.close()


def test_redis_writes_go_on_after_a_script_flush_and_a_dropped_connection(redis_url: str) -> None:
    import redis

    store = RedisStore(redis.Redis.from_url(redis_url), prefix="parts-reconnect")
    admin = redis.Redis.from_url(redis_url)
    try:
        store.heartbeat(5)
        agent_id = store.allocate_id(True)
        store.save(agent_id, b"one")
        admin.script_flush()  # as after a Redis restart: the write loads its script again
        store.save(agent_id, b"two")
        assert store.stored(agent_id) == b"two"
        admin.client_kill_filter(_type="normal", skipme=True)  # every other connection
        store.save(agent_id, b"three")  # its connection dropped: it connects again
        assert store.stored(agent_id) == b"three"
    finally:
        for key in admin.scan_iter("parts-reconnect:*"):
            admin.delete(key)
        store.close()
        admin.close()


def test_a_redis_group_sent_ahead_is_read_once_whatever_comes_between(redis_url: str) -> None:
    """A group sent ahead of its answer: a write of its own in between reads that answer
    first (the connection carries one call at a time), and a script flush or a dropped
    connection before the answer is read makes the call again."""
    import redis

    store = RedisStore(redis.Redis.from_url(redis_url), prefix="parts-ahead")
    other = RedisStore(redis.Redis.from_url(redis_url), prefix="parts-ahead")
    admin = redis.Redis.from_url(redis_url)
    try:
        store.heartbeat(5)
        other.heartbeat(5)
        first, theirs = store.allocate_id(True), other.allocate_id(True)
        assert store.send_ahead([(first, b"one", None)])
        # A call of its own in between reads the answer sent ahead first: each gets its own.
        with pytest.raises(LeaseLost):
            store.save(theirs, b"not mine")
        assert store.read_sent() == []
        assert (store.stored(first), store.stored(theirs)) == (b"one", None)
        admin.script_flush()  # as after a Redis restart: the call is made again, loaded
        assert store.send_ahead([(first, b"one again", None)])
        assert store.read_sent() == []
        assert store.stored(first) == b"one again"
        assert store.send_ahead([(first, b"once more", None)])
        admin.client_kill_filter(_type="normal", skipme=True)  # before the answer is read
        assert store.read_sent() == []
        assert store.stored(first) == b"once more"
        with pytest.raises(RuntimeError, match="no writes sent ahead"):  # the store's base
            SQLiteStore(":memory:").read_sent()
    finally:
        for key in admin.scan_iter("parts-ahead:*"):
            admin.delete(key)
        store.close()
        other.close()
        admin.close()


def test_a_redis_write_group_larger_than_one_script_call_writes_every_agent(
    redis_url: str,
) -> None:
    """Over `_SAVE_BATCH` agents: several SAVE_MANY calls in one round trip, each agent with
    its head, sealed parts, tail and constant entries where it has them."""
    import redis

    from turnloom.engine.durable.store.redis import _SAVE_BATCH

    store = RedisStore(redis.Redis.from_url(redis_url), prefix="parts-large-group")
    try:
        store.heartbeat(5)
        ids = [store.allocate_id(True) for _ in range(_SAVE_BATCH + 40)]

        def part(*texts: str) -> bytes:
            return pack([{"role": "user", "content": text} for text in texts])

        def write(n: int, agent_id: int) -> SplitWrite:
            head = pack({"agent": agent_id, "dialog": 3})
            cut = head[:1] + head[1 + len(pack({"agent": agent_id})) - 1 :]
            constant = pack({"agent": agent_id})[1:]
            parts = (part(f"{n}a"), part(f"{n}b", f"{n}c"), part(f"{n}d"))
            if n % 2:
                return SplitWrite(cut, 0, parts, True, constant)
            return SplitWrite(head, 0, parts, n % 4 == 0)  # whole heads, the tail sealed or not

        writes = [(agent_id, write(n, agent_id), None) for n, agent_id in enumerate(ids)]
        assert store.save_many(writes) == []
        for agent_id, split, _ in writes:
            whole = pack({"agent": agent_id, "dialog": 3})
            assert store.stored(agent_id) == assemble(whole, list(split.parts))
            assert _parts(store, agent_id) == list(split.parts)
    finally:
        admin = redis.Redis.from_url(redis_url)
        for key in admin.scan_iter("parts-large-group:*"):
            admin.delete(key)
        admin.close()
        store.close()


def test_the_head_is_packed_as_the_whole_document_whatever_changed_since_the_last() -> None:
    # Each turn picks a line at random, then one in turn, then pauses: the random source and
    # the node state change before the pause, with no completion in between (the call counter
    # and the last result, which the packer compares, stay the same).
    graph = (
        tl.GraphDescription()
        .add_node(
            "shuffle",
            tl.CannedResponseParams(lines=["a", "b"], selection=tl.Selection.Random,
                                    default_exit="cycle"),
        )
        .add_node(
            "cycle",
            tl.CannedResponseParams(lines=["x", "y", "z"], selection=tl.Selection.Cycle,
                                    default_exit="gate"),
        )
        .add_node("gate", tl.PauseParams(default_exit="answer"))
        .add_node("answer", tl.GenerateParams(system_prompt="Mira"))
        .set_start_node("shuffle")
        .set_default_model_name("mock")
    )  # fmt: skip

    def same(heads: HeadPacker, core: Any) -> None:
        for dialog in (3, []):  # a head, and a whole document
            assert heads.pack(core, dialog) == pack(head_document(core, dialog))

    with _engine(":memory:") as engine:
        agent = engine.create_agent(scenario.graph("pause"), tags={"npc": "mira"})
        core, heads = agent._agent._core, HeadPacker()
        same(heads, core)
        core.node_state = {"late": {"next": 1}}  # a node keeps state: no other change
        same(heads, core)
        core.node_state = None
        same(heads, core)
        core.rng.random()  # its random source in use from now on
        same(heads, core)
        scenario.finish(agent, agent.send_message("hi"), "pause")
        same(heads, core)
        agent = engine.create_agent(scenario.graph("pause"))
        core, heads = agent._agent._core, HeadPacker()
        same(heads, core)
        agent.change_params("answer", {"system_prompt": "Mira, changed"})
        same(heads, core)
        agent.set_input_policy("enqueue")
        same(heads, core)
        core.tags = {"npc": "mira", "mood": "glad"}
        same(heads, core)
        agent = engine.create_agent(graph)
        core, heads = agent._agent._core, HeadPacker()
        for turn in range(3):
            assert agent.send_message(f"turn {turn}").paused
            same(heads, core)
            agent.resume()
            same(heads, core)


def test_a_paused_turn_is_packed_as_the_whole_document_from_one_pause_to_the_next() -> None:
    # The paused turn's entries that seldom change (from "steps" to the pause's "debug_index")
    # are packed again only when one of them changed: two pauses in one turn (its pause count
    # and number, its paused time, the node), the same pause in turn after turn, a pause with
    # a deadline; a pause with pending calls and one with diagnostics are packed whole.
    graph = (
        tl.GraphDescription()
        .add_node("first", tl.PauseParams(default_exit="second"))
        .add_node("second", tl.PauseParams(default_exit="answer", pause_timeout_ms=5000,
                                           timeout_exit="answer"))
        .add_node("answer", tl.GenerateParams(system_prompt="Mira"))
        .set_start_node("first")
        .set_default_model_name("mock")
    )  # fmt: skip

    def same(heads: HeadPacker, core: Any) -> None:
        assert heads.pack(core, 3) == pack(head_document(core, 3))
        turn = head_document(core, 3)["turn"]
        assert heads.deadline == (turn["pause"]["deadline"] if turn else None)

    clock = tl.VirtualClock()
    with tl.Engine(scenario.model(), clock=clock, store=":memory:") as engine:
        for options in ({}, {"enable_diagnostics": True}):
            agent = engine.create_agent(graph, **options)
            core, heads = agent._agent._core, HeadPacker()
            for turn in range(3):
                assert agent.send_message(f"turn {turn}").paused
                same(heads, core)
                same(heads, core)  # nothing changed: the packed pieces as they were
                clock.advance(1.5)  # the turn's paused time, in the second pause's entries
                assert agent.resume().paused
                same(heads, core)
                agent.resume()
                same(heads, core)
        agent = engine.create_agent(scenario.graph("await"))
        core, heads = agent._agent._core, HeadPacker()
        for turn in range(2):
            step = agent.send_message(f"look {turn}")
            assert step.pause is not None and step.pause.pending_calls
            same(heads, core)
            calls = step.pause.pending_calls
            agent.resume(tool_results=[tl.ToolResult(c.call_id, "a lamp") for c in calls])
            same(heads, core)
