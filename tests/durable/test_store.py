"""Stores (docs/reference/durability.md#stores): every test runs on SQLite and on a real Redis
server.

An engine closes (or a process dies, see test_crash.py) and a new engine on the same store
finds every agent at its last write: paused turns with their pending calls and deadlines, idle
agents with their dialogs, changed params; destroyed agents are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import structlog

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable.agent import DurableAgentCore
from turnloom.engine.durable.store import SQLiteStore, Store, open_store
from turnloom.engine.durable.store.base import SharedStore
from turnloom.engine.turns.agent import AgentCore

StoreSpec = Callable[[], Any]


def _engine(store: Any, start: float = 0.0) -> tl.Engine:
    return tl.Engine(scenario.model(), clock=tl.VirtualClock(start=start), store=store)


def test_paused_and_idle_agents_come_back_in_a_new_engine(store_spec: StoreSpec) -> None:
    with _engine(store_spec()) as first:
        steps = {}
        for index, kind in enumerate(["await", "pause", "pause"]):
            agent = first.create_agent(scenario.graph(kind))
            scenario.finish(agent, agent.send_message(f"hi {index}"), kind)
            steps[agent.agent_id] = agent.send_message(f"again {index}")
        first.agent(2).change_params("answer", {"system_prompt": "Mira, changed"})
        scenario.finish(first.agent(3), first.agent(3).wait(), "pause")  # idle again
        dialogs = {i: first.agent(i).dialog for i in (1, 2, 3)}
    with _engine(store_spec()) as second:
        assert second.agent_ids() == [1, 2, 3]
        assert {i: second.agent(i).dialog for i in (1, 2, 3)} == dialogs
        assert second.agent(1).wait() == steps[1]
        assert second.agent(3).wait().final.turn_id == 6
        assert second.agent(2).get_params("answer").system_prompt == "Mira, changed"  # type: ignore[attr-defined]
        result = scenario.finish(second.agent(1), second.agent(1).wait(), "await")
        assert result.text == "[Mira] 8 messages, last 'saw again 0 (c00000001)'"
        assert second.create_agent(scenario.graph("pause")).agent_id == 4


def test_destroyed_agents_are_deleted_and_closing_keeps_the_rest(store_spec: StoreSpec) -> None:
    with _engine(store_spec()) as first:
        keep = first.create_agent(scenario.graph("pause"))
        keep.send_message("hi")
        first.create_agent(scenario.graph("pause")).destroy()
    with _engine(store_spec()) as second:
        assert second.agent_ids() == [keep.agent_id]
        assert second.agent(keep.agent_id).wait().paused  # closing cancelled nothing


def test_a_deadline_that_passed_while_down_fires_on_start(store_spec: StoreSpec) -> None:
    with _engine(store_spec()) as first:
        agent = first.create_agent(scenario.graph("deadline"))
        agent.send_message("hi")
    with _engine(store_spec(), start=3) as early:  # not yet due: still paused
        assert early.agent(1).wait().paused
    with _engine(store_spec(), start=60) as late:
        result = late.agent(1).wait_complete(timeout=10)
        assert result is not None and result.text == "Too late."
    with _engine(store_spec(), start=61) as after:  # the timeout's completion was stored
        assert after.agent(1).wait().final.text == "Too late."


def counting(store: Store) -> Any:
    """`store` itself (so a shared one stays shared), its writes counted in `saves` (agent ids,
    in order), `groups` (one list per `save_many`, or per group sent ahead of its answer) and
    `deletes`."""
    counted: Any = store
    counted.saves, counted.groups, counted.deletes = [], [], []
    save_many, send_ahead, delete = store.save_many, store.send_ahead, store.delete

    def count(writes: Any) -> None:
        counted.groups.append([agent_id for agent_id, _, _ in writes])
        counted.saves.extend(counted.groups[-1])

    def counted_save_many(writes: Any) -> list[int]:
        count(writes)
        return save_many(writes)

    def counted_send_ahead(writes: Any) -> bool:
        sent = send_ahead(writes)
        if sent:
            count(writes)
        return sent

    def counted_delete(agent_id: int) -> None:
        counted.deletes.append(agent_id)
        delete(agent_id)

    counted.save_many, counted.delete = counted_save_many, counted_delete
    counted.send_ahead = counted_send_ahead
    return counted


def test_writes_happen_at_rest_points_never_per_token(store_spec: StoreSpec) -> None:
    store = counting(open_store(store_spec()))
    with _engine(store) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        assert store.saves == [1]  # created
        chunks: list[str] = []
        agent.set_on_answer_text(lambda text, delta, final: chunks.append(text))
        agent.send_message("a long message of many words to echo back token by token")
        assert store.saves == [1, 1]  # paused
        agent.change_params("answer", {"system_prompt": "x"})
        assert store.saves == [1, 1, 1]  # params changed
        agent.resume()
        assert len(chunks) > 10
        assert store.saves == [1, 1, 1, 1]  # completed: one write for the whole reply
        agent.destroy()
        assert store.saves == [1, 1, 1, 1] and store.deletes == [1]


def test_without_a_store_agents_are_the_plain_kind() -> None:
    async def check() -> None:
        async with tl.AsyncEngine(scenario.model()) as plain:
            agent = await plain.create_agent(scenario.graph("pause"))
            assert type(agent._core) is AgentCore
        async with tl.AsyncEngine(scenario.model(), store=":memory:") as durable:
            agent = await durable.create_agent(scenario.graph("pause"))
            assert type(agent._core) is DurableAgentCore

    import asyncio

    asyncio.run(check())


def test_a_snapshot_that_no_longer_fits_is_left_in_the_store_and_logged(
    store_spec: StoreSpec,
) -> None:
    with _engine(store_spec()) as first:
        first.create_agent(scenario.graph("pause")).send_message("hi")
        agent = first.create_agent(scenario.graph("pause"))
        agent.send_message("hi")
    other_model = tl.MockModel("other")
    other_graph = tl.GraphDescription().add_node("say", tl.GenerateParams(model_name="other"))
    other_graph.set_start_node("say")
    store = open_store(store_spec())
    if isinstance(store, SharedStore):  # only the holder of an id writes it
        store.claim(3, adopt=True)
    store.save(3, b"not a snapshot")
    with (
        structlog.testing.capture_logs() as logs,
        tl.Engine(other_model, clock=tl.VirtualClock(), store=store) as engine,
    ):
        assert engine.agent_ids() == []  # their model is not loaded here
        # Their ids stay theirs: a new agent, or a restore, never overwrites their rows.
        assert engine.create_agent(other_graph).agent_id == 4
        doc = engine.agent(4).snapshot().to_dict()
        doc["agent_id"] = 1  # held by the stored agent this engine could not restore
        assert engine.restore(doc).agent_id == 5
    assert sum(log["event"] == "store.restore_failed" for log in logs) == 3
    with _engine(store_spec()) as again:  # nothing was lost meanwhile
        assert again.agent_ids() == [1, 2]


def test_a_failing_write_is_logged_and_the_turn_goes_on() -> None:
    class Broken(SQLiteStore):
        def save(self, agent_id: int, document: bytes, deadline: float | None = None) -> None:
            raise OSError("disk full")

        def save_many(self, writes: Any) -> list[int]:
            raise OSError("disk full")

    with structlog.testing.capture_logs() as logs, _engine(Broken(":memory:")) as engine:
        agent = engine.create_agent(scenario.graph("pause"))
        agent.send_message("hi")
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS
    assert sum(log["event"] == "store.write_failed" for log in logs) == 3


def test_store_specs_are_checked() -> None:
    with pytest.raises(TypeError, match="store must be"):
        tl.Engine(scenario.model(), store=42)  # type: ignore[arg-type]
    assert isinstance(open_store(":memory:"), SQLiteStore)


def test_the_asyncio_face_restores_from_the_store(store_spec: StoreSpec) -> None:
    import asyncio

    async def main() -> None:
        async with tl.AsyncEngine(
            scenario.model(), clock=tl.VirtualClock(), store=store_spec()
        ) as a:
            agent = await a.create_agent(scenario.graph("await"))
            step = await agent.send_message("hi")
        async with tl.AsyncEngine(
            scenario.model(), clock=tl.VirtualClock(), store=store_spec()
        ) as b:
            assert b.agent_ids() == [agent.agent_id]
            restored = b.agent(agent.agent_id)
            assert await restored.wait() == step
            assert step.pause is not None
            call = step.pause.pending_calls[0]
            result = await restored.resume(tool_results=[(call.call_id, "a sword")])
            assert result.final.text == "[Mira] 4 messages, last 'a sword'"

    asyncio.run(main())


def test_tags_label_agents_across_a_restart_and_durable_false_stays_in_memory(
    store_spec: StoreSpec,
) -> None:
    with _engine(store_spec()) as first:
        mira = first.create_agent(scenario.graph("pause"), tags={"npc": "mira"})
        mira.send_message("hi")
        first.create_agent(scenario.graph("pause"), durable=False).send_message("hi")
        assert mira.tags == {"npc": "mira"}
    with _engine(store_spec()) as second:
        assert [second.agent(i).tags for i in second.agent_ids()] == [{"npc": "mira"}]
        restored = second.restore(second.agent(mira.agent_id).snapshot(), durable=False)
        assert restored.tags == {"npc": "mira"}
    with _engine(store_spec()) as third:
        assert third.agent_ids() == [mira.agent_id]  # the memory-only copy was never stored


@pytest.mark.parametrize(
    "tags", ["npc", {1: "x"}, {"": "x"}, {"k": 3}, {f"k{i}": "" for i in range(65)}]
)
def test_bad_tags_are_3007(tags: Any) -> None:
    with _engine(None) as engine, pytest.raises(tl.InvalidParamValue, match="tag"):
        engine.create_agent(scenario.graph("pause"), tags=tags)


def test_durable_needs_a_store() -> None:
    with _engine(None) as engine, pytest.raises(tl.InvalidParamValue, match="store"):
        engine.create_agent(scenario.graph("pause"), durable=True)


def test_a_file_that_is_not_sqlite_is_refused_by_name_and_left_untouched(tmp_path: Any) -> None:
    saves = tmp_path / "saves.json"
    saves.write_text('{"agents": [1, 2, 3]}\n', encoding="utf-8")
    before = saves.read_bytes()
    for spec in (saves, str(saves)):
        with pytest.raises(tl.InvalidParamValue) as refused:
            tl.Engine(scenario.model(), store=spec)
        assert refused.value.code == tl.ErrorCode.InvalidParamValue
        assert (
            str(saves) in refused.value.message and "not a SQLite database" in refused.value.message
        )
    assert saves.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["saves.json"]  # no -wal, no -shm
