"""Grouped writes (docs/reference/durability.md#stores): agents that come to rest in the same
loop iteration are written in one `save_many` (one SQLite transaction, one Redis script call),
and the host hears of each rest only once its snapshot is stored. On SQLite and on a real Redis
server; the lease fence and SQLite's all-or-nothing group are checked on the stores themselves.
Every test runs twice: groups written on the loop, and every group written off the loop by
the store's writing thread (`write_queue.OFF_LOOP_FROM` 1 and `OFF_LOOP_WAIT_S` 0; a busy
worker's groups go there when its store's writes wait).
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgpack
import pytest

import turnloom as tl
from tests.durable import scenario
from tests.durable.test_store import counting
from turnloom.engine.durable.packed_dialog import KEEP_FROM, PackedDialog, packed_snapshot
from turnloom.engine.durable.snapshot import take_snapshot
from turnloom.engine.durable.store import SQLiteStore, open_store, write_queue
from turnloom.engine.durable.store.parts import SplitWrite, parts_marker
from turnloom.engine.durable.store.redis import RedisStore
from turnloom.engine.turns.observers import TurnObserver
from turnloom.server.requests import SessionRequests

StoreSpec = Callable[[], Any]


@pytest.fixture(autouse=True, params=["on the loop", "off the loop"])
def where_groups_are_written(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    if request.param == "off the loop":
        monkeypatch.setattr(write_queue, "OFF_LOOP_FROM", 1)
        monkeypatch.setattr(write_queue, "OFF_LOOP_WAIT_S", 0)


def _stored_turn(document: bytes) -> Any:
    return msgpack.unpackb(document, raw=False)["turn"]


def recording(store: Any, events: list[tuple[str, int]]) -> Any:
    """`store` with every write of `save_many` (or sent ahead, once its answer is read)
    logged in `events` as ("stored", id), and the latest document of each agent, as read back
    from the store, kept in `store.latest`."""
    store.latest = {}
    save_many, send_ahead, read_sent = store.save_many, store.send_ahead, store.read_sent
    sent: list[Any] = []

    def stored(writes: Any) -> None:
        for agent_id, _, _ in writes:
            events.append(("stored", agent_id))
            store.latest[agent_id] = store.stored(agent_id)

    def recorded(writes: Any) -> list[int]:
        refused = save_many(writes)
        stored(writes)
        return refused

    def recorded_ahead(writes: Any) -> bool:
        if send_ahead(writes):
            sent.append(writes)
            return True
        return False

    def recorded_read() -> list[int]:
        refused = read_sent()
        stored(sent.pop())
        return refused

    store.save_many, store.send_ahead, store.read_sent = recorded, recorded_ahead, recorded_read
    return store


def test_agents_pausing_together_are_one_group_and_told_after_it(store_spec: StoreSpec) -> None:
    events: list[tuple[str, int]] = []

    async def main() -> None:
        store = recording(counting(open_store(store_spec())), events)
        async with tl.AsyncEngine(scenario.model(), clock=tl.VirtualClock(), store=store) as e:
            agents = [await e.create_agent(scenario.graph("pause")) for _ in range(8)]
            for agent in agents:
                agent.set_on_paused(
                    lambda node, route, i=agent.agent_id: events.append(("told paused", i))
                )
            assert store.groups == [[a.agent_id] for a in agents]  # a create is written at once
            events.clear()
            steps = await asyncio.gather(*(agent.send_message("hi") for agent in agents))
            assert all(step.paused for step in steps)
            ids = [agent.agent_id for agent in agents]
            assert len(store.groups) < 8 + 8  # fewer groups than pauses
            assert max(len(group) for group in store.groups[8:]) > 1
            assert sorted(store.saves[8:]) == ids  # every pause written, once
            for agent_id in ids:  # each told after its write, and the stored turn is the pause
                assert events.index(("stored", agent_id)) < events.index(("told paused", agent_id))
                assert _stored_turn(store.latest[agent_id])["pause"]["node_name"] == "act"
            results = await asyncio.gather(*(agent.resume() for agent in agents))
            assert all(r.final.status is tl.TurnStatus.SUCCESS for r in results)
            assert max(len(group) for group in store.groups[-len(ids) :]) > 1
            assert all(_stored_turn(store.latest[i]) is None for i in ids)  # completed

    asyncio.run(main())


def test_the_engine_hears_once_a_group_is_told(store_spec: StoreSpec) -> None:
    """After every group written in a loop callback of its own, once all its writers were
    told, the engine's `after_rests_told` runs (a server sends their frames then)."""
    events: list[tuple[str, int]] = []

    async def main() -> None:
        store = recording(open_store(store_spec()), events)
        async with tl.AsyncEngine(scenario.model(), clock=tl.VirtualClock(), store=store) as e:
            e.core.after_rests_told = lambda: events.append(("after", 0))
            agents = [await e.create_agent(scenario.graph("pause")) for _ in range(4)]
            for agent in agents:
                agent.set_on_paused(
                    lambda node, route, i=agent.agent_id: events.append(("told paused", i))
                )
            events.clear()
            steps = await asyncio.gather(*(agent.send_message("hi") for agent in agents))
            assert all(step.paused for step in steps)
        told = [i for i, event in enumerate(events) if event[0] == "told paused"]
        assert len(told) == 4
        for at in told:  # each tell is followed by the hook before the next group is stored
            rest = events[at + 1 :]
            after = rest.index(("after", 0))
            assert all(kind != "stored" for kind, _ in rest[:after]), events

    asyncio.run(main())


def test_a_wait_during_the_write_sees_the_step_only_once_it_is_stored(
    store_spec: StoreSpec,
) -> None:
    events: list[tuple[str, int]] = []

    async def main() -> None:
        store = recording(open_store(store_spec()), events)
        async with tl.AsyncEngine(scenario.model(), clock=tl.VirtualClock(), store=store) as e:
            agent = await e.create_agent(scenario.graph("pause"))

            async def wait_then_note(kind: str) -> tl.Step:
                step = await agent.wait()
                events.append((kind, agent.agent_id))
                return step

            # The wait runs right after the message pauses, before the loop's next iteration
            # writes the pause: it must not answer before the write.
            sent, waited = await asyncio.gather(agent.send_message("hi"), wait_then_note("wait"))
            assert sent.paused and waited == sent
            assert events == [("stored", 1), ("stored", 1), ("wait", 1)]  # created, paused
            done, idle = await asyncio.gather(agent.resume(), wait_then_note("idle wait"))
            assert idle.result == done.final
            assert events[-2:] == [("stored", 1), ("idle wait", 1)]

    asyncio.run(main())


def test_a_registered_tool_still_resumes_before_the_caller_hears_of_the_pause(
    store_spec: StoreSpec,
) -> None:
    def run(store: Any) -> tuple[tl.Step, list[Any]]:
        with tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=store) as engine:
            agent = engine.create_agent(scenario.graph("await"))
            agent.register_tool("look", lambda call: f"saw {call.arguments['what']}")
            step = agent.send_message("the door")
            return step, agent.dialog

    plain, durable = run(None), run(store_spec())
    assert durable == plain
    assert durable[0].result is not None and durable[0].result.text.endswith("'saw the door'")


def test_a_destroy_right_after_a_pause_writes_and_tells_it_first_then_deletes(
    store_spec: StoreSpec,
) -> None:
    async def main() -> None:
        store = counting(open_store(store_spec()))
        async with tl.AsyncEngine(scenario.model(), clock=tl.VirtualClock(), store=store) as e:
            agent = await e.create_agent(scenario.graph("pause"))
            keep = await e.create_agent(scenario.graph("pause"))
            told: list[str] = []
            agent.set_on_paused(lambda node, route: told.append(node))

            async def destroy() -> None:
                await agent.destroy()

            step, _, kept = await asyncio.gather(
                agent.send_message("hi"), destroy(), keep.send_message("hi")
            )
            assert step.paused and kept.paused and told == ["act"]
            assert store.deletes == [agent.agent_id]
        async with tl.AsyncEngine(scenario.model(), store=store_spec()) as again:
            assert again.agent_ids() == [keep.agent_id]  # the queued write did not bring it back

    asyncio.run(main())


def test_a_group_holding_a_bad_write_leaves_every_row_as_it_was(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "game.db")
    store.save_many([(1, b"one", None), (2, b"two", None)])
    with pytest.raises(sqlite3.IntegrityError):
        store.save_many([(1, b"one again", None), (2, None, None)])  # type: ignore[list-item]
    assert dict(store.load_all()) == {1: b"one", 2: b"two"}
    # A head and its parts are one write: a bad part leaves the heads before it unwritten too.
    bad = SplitWrite(b"two" + parts_marker(1), 0, (None,))  # type: ignore[arg-type]
    with pytest.raises(sqlite3.IntegrityError):
        store.save_many([(1, b"one again", None), (2, bad, None)])
    assert dict(store.load_all()) == {1: b"one", 2: b"two"}
    store.close()


@contextmanager
def two_workers(redis_url: str, prefix: str) -> Iterator[tuple[Any, RedisStore, RedisStore]]:
    """A client and two live workers' stores (A, B) over `prefix`, whose keys are deleted
    after."""
    import redis

    client = redis.Redis.from_url(redis_url)
    a = RedisStore(redis.Redis.from_url(redis_url), prefix=prefix)
    b = RedisStore(redis.Redis.from_url(redis_url), prefix=prefix)
    try:
        assert a.heartbeat(5) is False and b.heartbeat(5) is False  # both alive from now on
        yield client, a, b
    finally:
        for key in client.scan_iter(f"{prefix}:*"):
            client.delete(key)
        for store in (a, b):
            store.close()
        client.close()


def test_the_lease_fence_holds_for_each_agent_of_a_group(redis_url: str) -> None:
    prefix = "groups-fence"
    with two_workers(redis_url, prefix) as (client, a, b):
        ids = [a.allocate_id(durable=True) for _ in range(1200)]  # more than one script call
        assert a.save_many([(i, b"a1", None) for i in ids]) == []
        client.delete(f"{prefix}:worker:{a.worker}")  # A's lease lapses...
        taken = ids[::7]
        for agent_id in taken:  # ...and B takes some of its agents
            assert b.claim(agent_id).status == "claimed"
        b.save_many([(i, b"b", 90.0) for i in taken])
        refused = a.save_many([(i, b"a2", 10.0) for i in ids])
        assert sorted(refused) == sorted(taken)
        stored = {int(k): v for k, v in client.hgetall(f"{prefix}:agents").items()}
        assert {i for i, v in stored.items() if v == b"b"} == set(taken)
        assert {i for i, v in stored.items() if v == b"a2"} == set(ids) - set(taken)
        deadlines = dict(client.zrange(f"{prefix}:deadlines", 0, -1, withscores=True))
        assert {int(k) for k, s in deadlines.items() if s == 90.0} == set(taken)
        assert {int(k) for k, s in deadlines.items() if s == 10.0} == set(ids) - set(taken)
        a.save_many([(i, b"a3", None) for i in ids])  # no deadline: out of the index
        assert {int(k) for k in client.zrange(f"{prefix}:deadlines", 0, -1)} == set(taken)


def test_a_refused_write_leaves_the_tail_and_parts_of_the_holder_as_they_were(
    redis_url: str,
) -> None:
    # The fence covers all an agent's write: the holder's tail (or its having none) and its
    # sealed parts stay as the holder wrote them, while the rest of the group is written.
    prefix = "groups-fence-tails"
    with two_workers(redis_url, prefix) as (client, a, b):

        def hash_of(name: str) -> dict[int, bytes]:
            return {int(k): v for k, v in client.hgetall(f"{prefix}:{name}").items()}

        def dialog_of(agent_id: int) -> list[bytes]:
            return client.lrange(f"{prefix}:dialog:{agent_id}", 0, -1)

        ids = [a.allocate_id(durable=True) for _ in range(6)]
        tailed, whole = ids[:3], ids[3:]
        a.save_many([(i, SplitWrite(b"a1", 0, (b"tail-a1",), True), None) for i in tailed])
        a.save_many([(i, b"a1", None) for i in whole])
        client.delete(f"{prefix}:worker:{a.worker}")
        taken = [tailed[1], whole[1]]
        for agent_id in taken:
            assert b.claim(agent_id).status == "claimed"
        b.save_many([(tailed[1], SplitWrite(b"b", 0, (b"sealed-b", b"tail-b"), True), 50.0)])
        b.save_many([(whole[1], b"b", None)])

        again = SplitWrite(b"a2", 0, (b"sealed-a2", b"tail-a2"), True)
        refused = a.save_many([(i, again, 10.0) for i in ids])

        assert sorted(refused) == sorted(taken)
        heads = hash_of("agents")
        assert {i: heads[i] for i in taken} == {tailed[1]: b"b", whole[1]: b"b"}
        assert all(heads[i] == b"a2" for i in ids if i not in taken)
        tails = hash_of("tails")
        assert tails[tailed[1]] == b"tail-b"
        assert whole[1] not in tails  # it had none: none is left behind
        assert all(tails[i] == b"tail-a2" for i in ids if i not in taken)
        assert dialog_of(tailed[1]) == [b"sealed-b"] and dialog_of(whole[1]) == []
        assert all(dialog_of(i) == [b"sealed-a2"] for i in ids if i not in taken)


def test_a_kept_dialog_packs_to_the_same_bytes_as_a_whole_snapshot() -> None:
    with tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=":memory:") as engine:
        agent = engine.create_agent(scenario.graph("await"), dialog=[
            {"role": "user", "content": "seeded", "pinned": True},
            {"role": "assistant", "content": "hello"},
        ])  # fmt: skip
        core = agent._agent._core
        kept: PackedDialog | None = None

        def same() -> bool:
            nonlocal kept
            packed, kept = packed_snapshot(core, kept)
            return packed == take_snapshot(core)

        for index in range(3 * KEEP_FROM):
            step = agent.send_message(f"look {index}")
            assert same()  # paused, calls pending
            scenario.finish(agent, step, "await")
            assert same()  # idle, one more turn
            assert (kept is None) == (len(core.dialog) < KEEP_FROM)
        core.dialog = core.dialog[: KEEP_FROM + 2]  # shrank (a restore, a fork): packed anew
        assert same()
        core.dialog[-1].messages.append({"role": "assistant", "content": "an added line"})
        assert same()
        core.dialog[3].user_message = "a message put in its place"
        assert same()


def test_a_message_queued_behind_a_paused_turn_runs_once_the_turn_is_stored(
    store_spec: StoreSpec,
) -> None:
    def run(store: Any) -> list[Any]:
        with tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=store) as engine:
            agent = engine.create_agent(scenario.graph("pause"), input_policy="enqueue")
            assert agent.send_message("first").paused
            agent.send_message_async("second")  # waits behind the paused turn
            assert agent.resume().final.status is tl.TurnStatus.SUCCESS
            assert agent.wait(timeout=10).paused  # the queued message's own turn
            return agent.dialog

    plain, durable = run(None), run(store_spec())
    assert durable == plain
    assert [m["content"] for m in durable if m["role"] == "user"] == ["first"]


class _ReadsRightAfter(TurnObserver):
    """Asks a wire session's answer to GetAgentState / AttachAgent (`state_of`) for an agent in
    the loop iteration right after each of its rests, ahead of the rest's grouped write (an
    observer is told of a rest before the write is queued); notes what the answer and the
    store said."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.reads: list[tuple[str, Any]] = []

    def paused(self, agent: Any, turn: Any, info: Any) -> None:
        asyncio.get_running_loop().call_soon(self.read, agent)

    def turn_ended(self, agent: Any, turn: Any, result: Any) -> None:
        asyncio.get_running_loop().call_soon(self.read, agent)

    def read(self, core: Any) -> None:
        answer = SessionRequests.state_of(core)
        self.reads.append((answer["state"], _stored_turn(self.store.stored(core.agent_id))))


def test_a_state_answer_right_after_a_rest_waits_for_the_rest_to_be_stored(
    store_spec: StoreSpec,
) -> None:
    async def main() -> list[tuple[str, Any]]:
        store = open_store(store_spec())
        async with tl.AsyncEngine(scenario.model(), clock=tl.VirtualClock(), store=store) as e:
            reads = _ReadsRightAfter(store)
            e.add_observer(reads)
            agent = await e.create_agent(scenario.graph("pause"))
            for turn in range(3):
                assert (await agent.send_message(f"turn {turn}")).paused
                assert (await agent.resume()).final.status is tl.TurnStatus.SUCCESS
            return reads.reads

    reads = asyncio.run(main())
    assert [state for state, _ in reads] == ["paused", "idle"] * 3
    for state, stored in reads:  # what the answer told of, the store held
        assert (stored is not None) == (state == "paused")
