"""A Redis store whose prefix holds keys it did not write (another program's, or a hand edit),
on a real Redis server (docs/reference/durability.md, docs/scaling.md's keys).

A key of another type than the store writes there is refused when the store is opened, with
3007 naming the key, its type and the one expected, nothing written. A counter that holds no
integer is refused by name, at open and when an id is given. An agent field that is no id, or
an agent whose dialog key is no list, is logged (`store.restore_failed`) and left in the store
while the other agents load; the deadline sweep and a claim by id skip it too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable.store.redis import RedisStore
from turnloom.engine.support.rejections import InvalidParamValue

#: The database of the test that opens an engine on the default prefix (`turnloom`), apart
#: from database 0 where the other tests keep their prefixes.
ENGINE_DB = 9


@pytest.fixture
def admin(redis_url: str) -> Iterator[Any]:
    """A client of the test's Redis, to put foreign keys in place and read what stays."""
    import redis

    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


@pytest.fixture
def prefix(admin: Any, request: pytest.FixtureRequest) -> Iterator[str]:
    """A prefix of the test's own, its keys deleted after."""
    name = f"foreign-{request.node.name}"
    yield name
    for key in admin.scan_iter(f"{name}:*"):
        admin.delete(key)


@pytest.fixture
def opens(redis_url: str, prefix: str) -> Iterator[Callable[[], RedisStore]]:
    """A function opening a store on the test's prefix (each closed after the test)."""
    import redis

    opened: list[RedisStore] = []

    def open_one() -> RedisStore:
        store = RedisStore(redis.Redis.from_url(redis_url), prefix=prefix)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.close()


def _contents(admin: Any, prefix: str) -> dict[bytes, bytes]:
    """Every key under `prefix`, as DUMP gives it (type and value): what must stay as it is."""
    return {key: admin.dump(key) for key in admin.scan_iter(f"{prefix}:*")}


def _failures(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == "store.restore_failed"]


def _engine(store: Any) -> tl.Engine:
    return tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=store)


@pytest.mark.parametrize(
    ("suffix", "put", "found", "expected"),
    [
        ("agents", lambda r, k: r.set(k, "hello"), "a string", "a hash"),
        ("owners", lambda r, k: r.rpush(k, "x"), "a list", "a hash"),
        ("tails", lambda r, k: r.set(k, "x"), "a string", "a hash"),
        ("constant", lambda r, k: r.sadd(k, "x"), "a set", "a hash"),
        ("deadlines", lambda r, k: r.set(k, "x"), "a string", "a sorted set"),
        ("slots", lambda r, k: r.rpush(k, "x"), "a list", "a hash"),
        ("slot-info", lambda r, k: r.set(k, "x"), "a string", "a hash"),
        ("next_id", lambda r, k: r.hset(k, "a", "1"), "a hash", "a string"),
    ],
)
def test_a_prefix_whose_keys_are_of_other_types_is_refused_and_left_as_it_was(
    admin: Any,
    prefix: str,
    opens: Callable[[], RedisStore],
    suffix: str,
    put: Callable[[Any, str], Any],
    found: str,
    expected: str,
) -> None:
    key = f"{prefix}:{suffix}"
    put(admin, key)
    admin.hset(f"{prefix}:agents" if suffix != "agents" else f"{prefix}:tails", "1", "kept")
    before = _contents(admin, prefix)
    with pytest.raises(InvalidParamValue) as refused:
        opens()
    message = str(refused.value)
    assert f"{key!r} is {found}, where this store keeps {expected}" in message
    assert "Nothing was written" in message and "RedisStore(prefix=...)" in message
    assert _contents(admin, prefix) == before


def test_an_engine_on_a_prefix_holding_a_foreign_key_gets_3007_naming_it(
    redis_url: str, admin: Any
) -> None:
    import redis

    url = redis_url.rsplit("/", 1)[0] + f"/{ENGINE_DB}"
    db = redis.Redis.from_url(url)
    try:
        db.flushdb()
        db.set("turnloom:agents", "hello")
        db.rpush("turnloom:owners", "x")
        with pytest.raises(tl.TurnloomError) as refused:
            _engine(url)
        assert int(refused.value.code) == 3007
        assert "'turnloom:agents' is a string, where this store keeps a hash" in str(refused.value)
        assert "'turnloom:owners' is a list, where this store keeps a hash" in str(refused.value)
        assert sorted(db.keys("*")) == [b"turnloom:agents", b"turnloom:owners"]
        assert db.get("turnloom:agents") == b"hello"
    finally:
        db.flushdb()
        db.close()


def test_a_counter_that_holds_no_integer_is_refused_by_name(
    admin: Any, prefix: str, opens: Callable[[], RedisStore]
) -> None:
    counter = f"{prefix}:next_id"
    admin.set(counter, "abc")
    with pytest.raises(InvalidParamValue, match=f"'{counter}' holds 'abc'.*agent id counter"):
        opens()
    admin.delete(counter)
    store = opens()
    store.heartbeat(5)
    # Made a non-integer after the store was opened: no id is given, nothing is written.
    admin.set(counter, "abc")
    with pytest.raises(InvalidParamValue, match=f"counter '{counter}' holds 'abc'.*delete it"):
        store.allocate_id(True)
    assert admin.get(counter) == b"abc" and not admin.exists(f"{prefix}:owners")
    admin.delete(counter)
    admin.hset(counter, "a", "1")
    with pytest.raises(InvalidParamValue, match=f"counter '{counter}' is a hash"):
        store.allocate_id(False)
    # With no counter it starts past the stored ids, the fields that are integers only.
    admin.delete(counter)
    admin.hset(f"{prefix}:agents", mapping={"1.5": "x", "7": "x", "1e3": "x", "abc": "x"})
    assert store.allocate_id(True) == 8


def test_agent_fields_that_are_no_ids_are_logged_left_and_the_others_load(
    admin: Any, prefix: str, opens: Callable[[], RedisStore]
) -> None:
    with _engine(opens()) as first:
        for _ in range(2):
            first.create_agent(scenario.graph("pause")).send_message("hi")
    agents = f"{prefix}:agents"
    admin.hset(agents, mapping={"abc": "x", "1.5": "garbage", "05": "garbage", "-": "x"})
    with structlog.testing.capture_logs() as logs, _engine(opens()) as second:
        assert second.agent_ids() == [1, 2]
        assert second.agent(1).wait().paused
        assert second.create_agent(scenario.graph("pause")).agent_id == 3
    failures = _failures(logs)
    assert sorted(entry["agent_id"] for entry in failures) == ["-", "05", "1.5", "abc"]
    assert all("is not an agent id" in entry["reason"] for entry in failures)
    assert all(f"{agents!r} holds {entry['agent_id']!r}" in entry["reason"] for entry in failures)
    assert admin.hmget(agents, ["abc", "1.5", "05", "-"]) == [b"x", b"garbage", b"garbage", b"x"]


def test_an_agent_whose_dialog_key_is_no_list_is_logged_left_and_its_id_kept(
    admin: Any, prefix: str, opens: Callable[[], RedisStore]
) -> None:
    with _engine(opens()) as first:
        for _ in range(2):
            first.create_agent(scenario.graph("pause")).send_message("hi")
    dialog = f"{prefix}:dialog:1"
    admin.set(dialog, "x")
    with structlog.testing.capture_logs() as logs, _engine(opens()) as second:
        assert second.agent_ids() == [2]
        assert second.create_agent(scenario.graph("pause")).agent_id == 3
        doc = second.agent(2).snapshot().to_dict()
        doc["agent_id"] = 1  # the id of the agent left in the store: a restore does not take it
        assert second.restore(doc).agent_id == 4
    (failure,) = _failures(logs)
    assert failure["agent_id"] == 1
    assert f"dialog key {dialog!r} is a string, not a list" in failure["reason"]
    assert admin.get(dialog) == b"x" and admin.hexists(f"{prefix}:agents", "1")
    with pytest.raises(InvalidParamValue, match=f"agent 1 cannot be read.*{dialog}"):
        opens().stored(1)


def test_the_deadline_sweep_skips_foreign_members_and_broken_agents(
    admin: Any, prefix: str, opens: Callable[[], RedisStore]
) -> None:
    writer = opens()
    writer.heartbeat(5)
    due = writer.allocate_id(True)
    writer.save(due, b"due", deadline=1.0)
    writer.release([due])
    # Another program's member (a field of agents too) and a stored agent whose dialog key is a
    # string, both due.
    admin.zadd(f"{prefix}:deadlines", {"abc": 0.0, "77": 0.0})
    admin.hset(f"{prefix}:agents", mapping={"abc": "x", "77": "x"})
    admin.set(f"{prefix}:dialog:77", "x")
    sweeper = opens()
    sweeper.heartbeat(5)
    with structlog.testing.capture_logs() as logs:
        assert sweeper.claim_due(10.0, 10) == [(due, b"due")]
        sweeper.release([due])
        assert sweeper.claim_due(10.0, 10) == [(due, b"due")]  # the others again: logged once
        assert sweeper.claim(77).status == "missing"
    assert sorted(str(entry["agent_id"]) for entry in _failures(logs)) == ["77", "abc"]
    assert sweeper.held([77]) == set() and not admin.hexists(f"{prefix}:owners", "abc")
