"""Save slots and forks (docs/reference/durability.md#save-slots), on SQLite and on a real Redis
server: save at any rest point (idle, paused, paused with tool calls pending), load into a new or
the same agent id, fork an agent or a slot, list and delete, lineage, and storage that stays
bounded when a game saves every turn.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest

import turnloom as tl
from tests.durable import scenario

StoreSpec = Callable[[], Any]


def _engine(store: Any) -> tl.Engine:
    return tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=store)


def test_a_paused_agent_with_pending_calls_saves_and_loads_as_it_stood(
    store_spec: StoreSpec,
) -> None:
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("await"))
        step = agent.send_message("look at the door")
        assert step.pause is not None and step.pause.pending_calls
        info = agent.save("before-the-door")
        assert (info.slot, info.agent_id) == ("before-the-door", agent.agent_id) and info.size > 0
        call = step.pause.pending_calls[0]
        first = agent.resume(tool_results=[(call.call_id, "a red door")]).final
        loaded = engine.load("before-the-door")
        assert loaded.agent_id != agent.agent_id
        assert loaded.wait() == step  # paused exactly where the save was
        again = loaded.resume(tool_results=[(call.call_id, "a red door")]).final
        assert again.text == first.text
        assert loaded.lineage[-1]["slot"] == "before-the-door"
        assert loaded.lineage[-1]["agent_id"] == agent.agent_id


def test_load_into_the_same_id_replaces_that_agent(store_spec: StoreSpec) -> None:
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        scenario.finish(agent, agent.send_message("one"), "pause")
        agent.save("slot-1")
        scenario.finish(agent, agent.send_message("two"), "pause")
        assert len(agent.dialog) == 4
        loaded = engine.load("slot-1", replace=agent.agent_id)
        assert loaded.agent_id == agent.agent_id
        assert [m["content"] for m in loaded.dialog if m["role"] == "user"] == ["one"]
        with pytest.raises(tl.AgentAlreadyDestroyed):
            agent.send_message("three")  # the old face: its agent was replaced
        with pytest.raises(tl.InvalidAgentId):
            engine.load("slot-1", replace=999)


def test_a_fork_goes_on_independently_and_records_its_parent(store_spec: StoreSpec) -> None:
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        step = agent.send_message("shall we?")
        assert step.paused
        fork = engine.fork(agent)
        assert fork.wait() == step
        assert agent.resume("answer").final.status is tl.TurnStatus.SUCCESS
        assert fork.wait().paused  # the original's resume did not touch the fork
        fork.cancel()
        assert len(agent.dialog) == 2 and fork.dialog == []
        assert fork.lineage == [
            {"agent_id": agent.agent_id, "slot": "", "turns": 0, "time": fork.lineage[0]["time"]}
        ]
        agent.save("branch")
        grandchild = engine.fork("branch")
        assert [step["slot"] for step in grandchild.lineage] == ["branch"]
        grand2 = engine.fork(fork)
        assert [s["agent_id"] for s in grand2.lineage] == [agent.agent_id, fork.agent_id]


def test_slots_are_listed_newest_first_deleted_and_refused_clearly(store_spec: StoreSpec) -> None:
    clock = tl.VirtualClock()
    with tl.Engine(scenario.model(), clock=clock, store=store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        agent.save("a")
        clock.advance(1)
        agent.save("b")
        assert [s.slot for s in engine.slots()] == ["b", "a"]
        assert [s.slot for s in engine.slots(agent.agent_id)] == ["b", "a"]
        assert engine.slots(agent.agent_id + 100) == []
        assert engine.delete_slot("a") and not engine.delete_slot("a")
        with pytest.raises(tl.InvalidParamValue, match=r"no save slot 'a' \(slots: \['b'\]\)"):
            engine.load("a")
        with pytest.raises(tl.InvalidParamValue, match="slot name"):
            agent.save("")
        step = agent.send_message("hi")
        assert step.paused
        running = agent.resume_async()
        running.result(timeout=10)
    with tl.Engine(scenario.model()) as plain, pytest.raises(tl.InvalidParamValue, match="store"):
        plain.create_agent(scenario.graph("pause")).save("x")


def test_an_autosave_at_each_pause_is_made_from_the_paused_callback(store_spec: StoreSpec) -> None:
    # A callback may not block: the blocking face's `save_async` is how it autosaves.
    with _engine(store_spec()) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        saves: list[Any] = []
        agent.set_on_paused(lambda node, _exit: saves.append(agent.save_async(f"auto-{node}")))
        assert agent.send_message("hi").paused
        (saved,) = saves
        info = saved.result(timeout=10)
        assert (info.slot, info.agent_id) == ("auto-act", agent.agent_id)
        assert [slot.slot for slot in engine.slots()] == [info.slot]
        assert engine.load(info.slot).wait().paused


def test_a_save_while_a_turn_runs_is_3004() -> None:
    import asyncio

    async def main() -> None:
        async with tl.AsyncEngine(scenario.model(), store=":memory:") as engine:
            agent = await engine.create_agent(scenario.graph("pause"))
            await agent.send_message("hi")
            resumed = asyncio.ensure_future(agent.resume())
            await asyncio.sleep(0)  # the resumed walk is generating now
            with pytest.raises(tl.AgentBusy, match="save"):
                await agent.save("now")
            await resumed
            assert await engine.slots() == []

    asyncio.run(main())


def test_saving_every_turn_keeps_the_store_bounded(tmp_path: Any) -> None:
    # Each turn pauses, is saved mid-pause into a new slot, and is cancelled (a player who walks
    # away leaves nothing in the dialog): the snapshot keeps its size, so what the store holds
    # is the retention limit's worth of slots, whatever the number of saves.
    path = tmp_path / "saves.db"
    settings = tl.EngineSettings(max_slots_per_agent=3)
    sizes = []
    with tl.Engine(scenario.model(), store=str(path), settings=settings) as engine:
        agent = engine.create_agent(scenario.graph("pause"), durable=False)
        for turn in range(10_000):
            assert agent.send_message(f"turn {turn}").paused
            agent.save(f"autosave-{turn}")
            assert agent.cancel()
            if turn % 2000 == 1999:
                sizes.append(os.path.getsize(path) + _wal_size(path))
        assert [s.slot for s in engine.slots()] == [
            "autosave-9999",
            "autosave-9998",
            "autosave-9997",
        ]
    assert max(sizes) <= sizes[0] * 1.1 + 64 * 1024, sizes  # flat: no growth per save


def _wal_size(path: Any) -> int:
    wal = f"{path}-wal"
    return os.path.getsize(wal) if os.path.exists(wal) else 0


def test_a_loaded_pause_has_the_time_it_had_left_when_saved() -> None:
    clock = tl.VirtualClock()
    with tl.Engine(scenario.model(), clock=clock, store=":memory:") as engine:
        agent = engine.create_agent(scenario.graph("deadline", timeout_ms=5000))
        agent.send_message("an offer")
        clock.advance(2)  # 3 s left
        agent.save("mid-offer")
        agent.cancel()
        clock.advance(3600)  # the save sits for an hour
        loaded = engine.load("mid-offer")
        clock.advance(2.9)
        assert loaded.wait().paused  # 0.1 s left
        clock.advance(0.2)
        assert loaded.wait().final.status is tl.TurnStatus.SUCCESS  # timed out to its line


def test_over_the_wire_slots_save_load_fork_list_and_delete(store_spec: StoreSpec) -> None:
    from turnloom.host.aio import AsyncEngine
    from turnloom.server import BackgroundServer

    def engine() -> AsyncEngine:
        return AsyncEngine(scenario.model(), clock=tl.VirtualClock(), store=store_spec())

    with BackgroundServer(engine) as server, tl.connect(*server.address) as remote:
        agent = remote.create_agent(scenario.graph("await"), input_policy="enqueue")
        step = agent.send_message("look at the door")
        assert step.pause is not None
        info = agent.save("door")
        assert (info.slot, info.agent_id) == ("door", agent.agent_id)
        call = step.pause.pending_calls[0]
        first = agent.resume(tool_results=[(call.call_id, "red")]).final
        fork = remote.fork("door")
        assert fork.agent_id != agent.agent_id and fork.input_policy == "enqueue"
        assert fork.wait() == step
        assert fork.resume(tool_results=[(call.call_id, "red")]).final.text == first.text
        again = remote.fork(agent)  # from an agent at rest
        assert again.wait().final.turn_id == first.turn_id
        replaced = remote.load("door", replace=agent.agent_id)
        assert replaced.agent_id == agent.agent_id and replaced.wait() == step
        with pytest.raises(tl.AgentAlreadyDestroyed):
            agent.send_message("the old face")
        assert [s.slot for s in remote.slots()] == ["door"]
        assert remote.delete_slot("door") and not remote.delete_slot("door")
        with pytest.raises(tl.InvalidParamValue, match="no save slot 'door'"):
            remote.load("door")


def test_over_the_wire_a_step_asked_of_the_old_face_during_a_load_in_place_fails(
    store_spec: StoreSpec,
) -> None:
    """The server takes a message sent on the old face after the load replaced its agent, so
    it is the new agent's: the new face gets its step, and the old face's caller is told its
    agent is gone (3002) rather than waiting forever."""
    import asyncio

    from turnloom.host.aio import AsyncEngine
    from turnloom.server import BackgroundServer

    def engine() -> AsyncEngine:
        return AsyncEngine(scenario.model(), clock=tl.VirtualClock(), store=store_spec())

    async def play(address: tuple[str, int]) -> None:
        remote = await tl.connect_async(*address)
        try:
            old = await remote.create_agent(scenario.graph("await"))
            await old.save("at-rest")
            # Sent together: LoadSlot first, so the server answers it first too.
            loading = asyncio.ensure_future(remote.load("at-rest", replace=old.agent_id))
            sending = asyncio.ensure_future(old.send_message("look at the door"))
            new = await loading
            with pytest.raises(tl.AgentAlreadyDestroyed):
                await asyncio.wait_for(sending, 10)
            step = await asyncio.wait_for(new.wait(), 10)
            assert step.pause is not None and step.pause.pending_calls  # the message's turn
        finally:
            await remote.aclose()

    with BackgroundServer(engine) as server:
        asyncio.run(play(server.address))
