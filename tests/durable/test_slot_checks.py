"""Save slots checked at their edges (docs/reference/durability.md#save-slots), on SQLite and on a
real Redis server, embedded and over the wire: retention by the order saves were made (not by a
clock that ties), agent ids that never take over a destroyed agent's slots, agent ids and slot
names refused with 3007 before they reach a store, and the same coroutines on the embedded
`AsyncEngine` as on a remote engine.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable.store import open_store
from turnloom.engine.durable.store.base import LARGEST_AGENT_ID
from turnloom.engine.durable.store.slots import SlotInfo, SlotShelf
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer

StoreSpec = Callable[[], Any]

#: Agent ids no agent can have, each refused naming the argument: another type, a bool (which
#: Python counts an int, and a dict lookup takes for 1), and ints no agent is given, some past
#: what a store can hold.
NOT_IDS: list[Any] = ["1", [1], {}, 1.0, True, False, 0, -1, LARGEST_AGENT_ID + 1, 2**63, 2**70]


def _engine(store: Any, **settings: Any) -> tl.Engine:
    # A clock that stands still unless advanced: every save of a test shares one saved_at.
    return tl.Engine(
        scenario.model(),
        clock=tl.VirtualClock(),
        store=store,
        settings=tl.EngineSettings(**settings),
    )


def _names(infos: list[SlotInfo]) -> list[str]:
    return [info.slot for info in infos]


@pytest.fixture
def sqlite_path(tmp_path: Path) -> str:
    return str(tmp_path / "game.db")


def _served(path: str) -> BackgroundServer:
    return BackgroundServer(lambda: AsyncEngine(scenario.model(), store=path))


# Retention ------------------------------------------------------------------------------------


def test_retention_drops_the_oldest_save_when_saves_share_a_clock_tick(
    store_spec: StoreSpec,
) -> None:
    with _engine(store_spec(), max_slots_per_agent=2) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        for name in ["autosave-1", "autosave-2", "autosave-3"]:
            info = agent.save(name)
            assert engine.load(info.slot).agent_id > 0  # what save returned is still there
        assert _names(engine.slots()) == ["autosave-3", "autosave-2"]
        # Saved again, a slot is the newest: the next save past the limit drops the other.
        agent.save("autosave-2")
        assert _names(engine.slots(agent.agent_id)) == ["autosave-2", "autosave-3"]
        agent.save("autosave-4")
        assert _names(engine.slots(agent.agent_id)) == ["autosave-4", "autosave-2"]
        assert len({info.saved_at for info in engine.slots()}) == 1  # all in one tick
    with _engine(store_spec()) as engine:  # the order is the store's: a new engine reads it
        assert _names(engine.slots()) == ["autosave-4", "autosave-2"]


def test_redis_slots_saved_before_the_order_was_kept_list_after_the_others(
    redis_url: str,
) -> None:
    import redis

    from turnloom.engine.durable.store.redis import RedisStore

    prefix = "test-slot-checks-old"
    client = redis.Redis.from_url(url=redis_url)
    try:
        # Two slots as the store wrote them before: a document and an info, no place.
        for name, saved_at in (("old-a", 5.0), ("old-b", 7.0)):
            client.hset(f"{prefix}:slots", name, b"snapshot")
            client.hset(f"{prefix}:slot-info", name, f"1 {saved_at!r} 8")
        store = RedisStore(redis.Redis.from_url(redis_url), prefix=prefix)
        store.save_slot(SlotInfo("new", 1, 1.0, 8), b"snapshot")
        assert _names(store.slots()) == ["new", "old-b", "old-a"]
        assert _names(store.slots(1)) == ["new", "old-b", "old-a"]
        assert store.delete_slot("new") and _names(store.slots()) == ["old-b", "old-a"]
        store.close()
    finally:
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)
        client.close()


# Agent ids ------------------------------------------------------------------------------------


def test_a_new_agent_after_a_restart_never_takes_a_destroyed_agents_id_or_slots(
    store_spec: StoreSpec,
) -> None:
    with _engine(store_spec(), max_slots_per_agent=2) as engine:
        mira = engine.create_agent(scenario.graph("pause"), tags={"npc": "mira"})
        mira.save("mira-chapter-1")
        mira.save("mira-chapter-2")
        mira_id = mira.agent_id
        mira.destroy()  # her scene is over; her saves stay
    with _engine(store_spec(), max_slots_per_agent=2) as engine:
        bob = engine.create_agent(scenario.graph("pause"))
        assert bob.agent_id > mira_id
        bob.save("bob-autosave")
        bob.save("bob-autosave-2")
        bob.save("bob-autosave-3")  # his own retention: only his oldest goes
        assert sorted(_names(engine.slots(mira_id))) == ["mira-chapter-1", "mira-chapter-2"]
        assert _names(engine.slots(bob.agent_id)) == ["bob-autosave-3", "bob-autosave-2"]
        # A load without `replace` is a new agent too: past every id a slot names.
        assert engine.load("mira-chapter-1").agent_id > bob.agent_id


def test_an_engine_that_does_not_load_the_stored_agents_gives_ids_past_them(
    sqlite_path: str,
) -> None:
    with _engine(sqlite_path) as engine:
        kept = engine.create_agent(scenario.graph("pause"))
        kept.send_message("remember me")
        kept_id = kept.agent_id
    with tl.Engine(scenario.model(), store=sqlite_path, load_stored=False) as engine:
        assert engine.agent_ids() == []
        assert engine.create_agent(scenario.graph("pause")).agent_id > kept_id
    with _engine(sqlite_path) as engine:  # the stored agent is still as it was
        assert engine.agent(kept_id).wait().pause is not None


def test_over_the_wire_a_restarted_servers_new_agent_keeps_off_other_players_slots(
    sqlite_path: str,
) -> None:
    with _served(sqlite_path) as server, tl.connect(*server.address) as remote:
        alice = remote.create_agent(scenario.graph("pause"))
        for i in range(16):  # the server's default max_slots_per_agent
            alice.save(f"alice-{i:02d}")
        alice_id = alice.agent_id
    with _served(sqlite_path) as server, tl.connect(*server.address) as remote:
        bob = remote.create_agent(scenario.graph("pause"))
        assert bob.agent_id != alice_id
        bob.save("bob-1")
        assert len(remote.slots(alice_id)) == 16
        assert _names(remote.slots(bob.agent_id)) == ["bob-1"]


def test_agent_ids_stop_at_the_largest_a_store_holds(sqlite_path: str) -> None:
    store = open_store(sqlite_path)
    assert isinstance(store, SlotShelf)
    # A slot of an agent with the next-to-last id, and a row edited by hand past every id
    # (it names no agent, so it must not end the ids).
    store.save_slot(SlotInfo("edge", LARGEST_AGENT_ID - 1, 0.0, 1), b"x")
    store.save_slot(SlotInfo("edited", 2**63 - 1, 0.0, 1), b"x")
    store.close()
    with _engine(sqlite_path) as engine:
        last = engine.create_agent(scenario.graph("pause"))
        assert last.agent_id == LARGEST_AGENT_ID
        with pytest.raises(
            tl.InvalidParamValue, match=r"no agent id is left: ids go up to 2\*\*62"
        ):
            engine.create_agent(scenario.graph("pause"))
        with pytest.raises(tl.InvalidParamValue, match="no agent id is left"):
            engine.fork(last)
        assert engine.agent_ids() == [LARGEST_AGENT_ID]  # nothing was created


# Agent id arguments ---------------------------------------------------------------------------


@pytest.mark.parametrize("replace", [True, 1.0, "1", [1], 2**70, 0])
def test_load_replace_must_be_an_int_agent_id_and_a_refusal_changes_nothing(
    store_spec: StoreSpec, replace: Any
) -> None:
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        assert agent.agent_id == 1  # the id True and 1.0 would be taken for
        step = agent.send_message("hi")
        agent.save("s")
        with pytest.raises(
            tl.InvalidParamValue, match=r"load: replace must be an agent id, an int"
        ):
            engine.load("s", replace=replace)
        assert engine.agent_ids() == [1] and agent.wait() == step  # still there, still paused
        loaded = engine.load("s", replace=1)
        assert type(loaded.agent_id) is int and loaded.agent_id == 1
    with _engine(store_spec()) as engine:  # it is brought back under its int id
        assert engine.agent_ids() == [1] and engine.agent(1).wait().paused


def test_over_the_wire_a_bool_replace_agent_id_is_3007_and_changes_nothing(
    sqlite_path: str,
) -> None:
    with _served(sqlite_path) as server, tl.connect(*server.address) as remote:
        agent = remote.create_agent(scenario.graph("pause"))
        assert agent.agent_id == 1
        step = agent.send_message("hi")
        agent.save("p")
        with pytest.raises(tl.InvalidParamValue, match=r"replace(_agent_id)? must be an agent id"):
            remote.load("p", replace=True)
        assert agent.wait() == step  # the session's agent 1 was not destroyed
        assert [info.agent_id for info in remote.slots()] == [1]
        loaded = remote.load("p", replace=1)
        assert type(loaded.agent_id) is int and loaded.agent_id == 1


def test_over_the_wire_load_and_fork_refuse_what_is_no_agent_id_before_looking_it_up(
    sqlite_path: str,
) -> None:
    async def play(address: tuple[str, int]) -> None:
        remote = await tl.connect_async(*address)
        try:
            agent = await remote.create_agent(scenario.graph("pause"))
            step = await agent.send_message("hi")
            await agent.save("p")
            for replace in [[1], {}, "1"]:
                with pytest.raises(tl.InvalidParamValue, match="replace_agent_id must be an"):
                    await remote.load("p", replace=replace)
            # What a client that sends `agent_id: true` would send (agent 1 exists).
            with pytest.raises(tl.InvalidParamValue, match="ForkAgent: agent_id must be an"):
                await remote.fork(SimpleNamespace(agent_id=True))
            assert await agent.wait() == step  # nothing changed
            assert [info.agent_id for info in await remote.slots()] == [1]
        finally:
            await remote.aclose()

    with _served(sqlite_path) as server:
        asyncio.run(play(server.address))


@pytest.mark.parametrize("agent_id", NOT_IDS)
def test_listing_slots_refuses_what_is_no_agent_id_alike_on_both_stores(
    store_spec: StoreSpec, agent_id: Any
) -> None:
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        agent.save("s")
        with pytest.raises(tl.InvalidParamValue, match="slots: agent_id must be an agent id"):
            engine.slots(agent_id)
        # An id no agent has (yet) is no mistake: it has no slots.
        assert engine.slots(agent.agent_id + 1) == [] and engine.slots(LARGEST_AGENT_ID) == []
        assert _names(engine.slots(agent.agent_id)) == ["s"]


def test_over_the_wire_list_slots_refuses_what_is_no_agent_id(store_spec: StoreSpec) -> None:
    def engine() -> AsyncEngine:
        return AsyncEngine(scenario.model(), store=store_spec())

    with BackgroundServer(engine) as server, tl.connect(*server.address) as remote:
        agent = remote.create_agent(scenario.graph("pause"))
        agent.save("s")
        for agent_id in ["1", [1], {}, True, 2**63, 2**64 - 1]:
            with pytest.raises(tl.InvalidParamValue, match="agent_id must be an agent id"):
                remote.slots(agent_id)
        assert _names(remote.slots(agent.agent_id)) == ["s"] and remote.slots(99) == []


# Slot names, sources, graphs ------------------------------------------------------------------


def test_a_slot_name_no_store_can_write_is_3007_naming_the_slot(store_spec: StoreSpec) -> None:
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        for operation, call in [
            ("save", lambda: agent.save("\ud800")),
            ("load", lambda: engine.load("a\udfff")),
            ("fork", lambda: engine.fork("\ud800")),
            ("delete_slot", lambda: engine.delete_slot("\ud800")),
        ]:
            with pytest.raises(tl.InvalidParamValue, match=f"{operation}: a slot name must be"):
                call()
        assert engine.slots() == [] and engine.agent_ids() == [agent.agent_id]
        agent.save("héros-⚔")  # any other text is a name
        assert _names(engine.slots()) == ["héros-⚔"]


def test_fork_and_load_refuse_a_source_or_graph_of_another_kind_naming_it(
    store_spec: StoreSpec,
) -> None:
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        agent.save("s")
        sources: list[Any] = [5, None, b"s", agent.snapshot()]
        for source in sources:
            with pytest.raises(tl.InvalidParamValue, match="fork: source must be an agent"):
                engine.fork(source)
        with pytest.raises(tl.InvalidParamValue, match="load: graph must be a GraphDescription"):
            engine.load("s", graph="oops")
        with pytest.raises(tl.InvalidParamValue, match="load: migrate must be a function"):
            engine.load("s", graph=scenario.graph("await"), migrate=5)
        # The same check serves a restore into a patched graph.
        with pytest.raises(tl.InvalidParamValue, match="restore: graph must be a GraphDescr"):
            engine.restore(agent.snapshot(), graph="oops")
        # Refused from a slot, a fork says so.
        with pytest.raises(tl.InvalidParamValue, match=r"^\[3007\] fork: no save slot 'gone'"):
            engine.fork("gone")
        with pytest.raises(tl.InvalidParamValue, match=r"^\[3007\] fork: a slot name must be"):
            engine.fork("")
        assert engine.agent_ids() == [agent.agent_id]


def test_async_engine_fork_refuses_a_source_of_another_kind_with_3007() -> None:
    async def main() -> None:
        async with tl.AsyncEngine(scenario.model(), store=":memory:") as engine:
            sources: list[Any] = [5, None]
            for source in sources:
                with pytest.raises(tl.InvalidParamValue, match="fork: source must be an agent"):
                    await engine.fork(source)
            assert engine.agent_ids() == []

    asyncio.run(main())


# One API, embedded or remote ------------------------------------------------------------------


async def _game(engine: Any) -> list[Any]:
    """Game code written once for either engine: it awaits every call."""
    agent = await engine.create_agent(scenario.graph("pause"))
    await agent.save("menu")
    listed = _names(await engine.slots())
    return [listed, await engine.delete_slot("menu"), await engine.delete_slot("menu")]


def test_the_embedded_async_engines_slot_calls_are_coroutines_as_the_remote_ones() -> None:
    for name in ("slots", "delete_slot"):
        assert inspect.iscoroutinefunction(getattr(tl.AsyncEngine, name)), name

    async def embedded() -> list[Any]:
        async with tl.AsyncEngine(scenario.model(), store=":memory:") as engine:
            return await _game(engine)

    async def remote(address: tuple[str, int]) -> list[Any]:
        engine = await tl.connect_async(*address)
        try:
            return await _game(engine)
        finally:
            await engine.aclose()

    expected = [["menu"], True, False]
    assert asyncio.run(embedded()) == expected
    with BackgroundServer(lambda: AsyncEngine(scenario.model(), store=":memory:")) as server:
        assert asyncio.run(remote(server.address)) == expected
    with tl.Engine(scenario.model(), store=":memory:") as blocking:  # blocking stays blocking
        blocking.create_agent(scenario.graph("pause")).save("menu")
        assert _names(blocking.slots()) == ["menu"] and blocking.delete_slot("menu") is True
