"""A durable agent whose rest is in flight (its group written off the loop by the store's
writing thread, as a busy worker's groups are) is not at rest yet for the host: `wait` waits
for the write, and the agent's other events wait behind it, as for a rest still queued
(docs/reference/durability.md#when-an-agent-is-written).

Each test holds the loop still while the write is in flight (nothing is awaited between the
write leaving and the check), so the writing thread's speed changes nothing: before the fix,
both failed every time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

import turnloom as tl
from turnloom.engine.durable.store import SQLiteStore, open_store, write_queue
from turnloom.engine.durable.store.base import Write

#: The placement rules as shipped (the fixture below changes them for the other tests).
_OFF_LOOP_FROM, _OFF_LOOP_WAIT_S = write_queue.OFF_LOOP_FROM, write_queue.OFF_LOOP_WAIT_S

GRAPH = (
    tl.GraphDescription()
    .add_node("gate", tl.PauseParams(default_exit="say"))
    .add_node("say", tl.CannedResponseParams(lines=["ok"]))
    .set_start_node("gate")
    .set_default_model_name("mock")
)


@pytest.fixture(autouse=True)
def every_group_off_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """A lone agent's write goes to the writing thread too (a large group does when the
    store's writes wait), whether or not the writes wait."""
    monkeypatch.setattr(write_queue, "OFF_LOOP_FROM", 1)
    monkeypatch.setattr(write_queue, "OFF_LOOP_WAIT_S", 0)


def _in_flight(store: Any, agent_id: int) -> bool:
    queue = store.queued
    return queue is not None and agent_id in queue.flying


def test_wait_after_a_cancel_in_flight_answers_the_waiting_messages_turn() -> None:
    async def main() -> None:
        store = open_store(":memory:")
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock(), store=store) as e:
            agent = await e.create_agent(GRAPH, input_policy="enqueue")
            assert (await agent.send_message("first")).paused
            queued = asyncio.ensure_future(agent.send_message("second"))
            await asyncio.sleep(0)  # the message reaches the agent and waits in its queue
            assert not queued.done()
            assert await agent.cancel()
            await asyncio.sleep(0)  # the cancelled turn's rest leaves for the writing thread
            assert _in_flight(store, agent.agent_id)
            # Once the cancelled turn is stored: the step of the waiting message's turn, which
            # started when the other ended (as on an agent without a store), not the idle agent.
            step = await agent.wait()
            assert step.paused, step
            assert (await queued).paused
            assert [m["content"] for m in agent.dialog if m["role"] == "user"] == []

    asyncio.run(main())


def test_an_event_waits_behind_a_pause_in_flight() -> None:
    async def main() -> None:
        store = open_store(":memory:")
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock(), store=store) as e:
            agent = await e.create_agent(GRAPH)
            events: list[str] = []
            agent.set_on_paused(lambda node, route: events.append(f"paused at {node}"))
            agent.set_on_resumed(lambda node, resume_node: events.append(f"resumed {node}"))
            sent = asyncio.ensure_future(agent.send_message("hi"))
            await asyncio.sleep(0)  # the turn pauses at once; its rest is queued
            await asyncio.sleep(0)  # and leaves for the writing thread
            assert _in_flight(store, agent.agent_id)
            assert events == []  # not told before it is stored
            # A game that resumes at once: the resume is made before anything is awaited.
            assert (await agent.resume()).result is not None
            assert (await sent).paused
            assert events == ["paused at gate", "resumed gate"]

    asyncio.run(main())


def test_a_message_sent_while_a_completion_is_in_flight_waits_behind_those_waiting() -> None:
    """Enqueue keeps the order the player spoke in: a third message sent after the turn ends
    but before its rest is stored goes behind the second, which was waiting, instead of
    finding the agent idle and starting first."""

    async def main() -> None:
        store = open_store(":memory:")
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock(), store=store) as e:
            agent = await e.create_agent(GRAPH, input_policy="enqueue")
            started: list[str] = []
            # A message's event with a turn id: its turn started.
            agent.set_on_message(lambda event: event.turn_id and started.append(event.text))
            assert (await agent.send_message("first")).paused
            second = asyncio.ensure_future(agent.send_message("second"))
            await asyncio.sleep(0)  # waits in the queue
            assert not second.done()
            assert await agent.cancel()
            await asyncio.sleep(0)  # the cancelled turn's rest leaves for the writing thread
            assert _in_flight(store, agent.agent_id)
            third = asyncio.ensure_future(agent.send_message("third"))
            await asyncio.sleep(0)  # reaches the agent while the rest is still in flight
            assert _in_flight(store, agent.agent_id)
            assert (await agent.wait()).paused  # the next pause, once the rest is stored
            assert started == ["first", "second"]
            assert second.done() and not third.done()  # still waiting: "second"'s turn is open
            assert (await agent.resume()).result is not None
            assert (await third).paused
            assert started == ["first", "second", "third"]

    asyncio.run(main())


class _WaitingStore(SQLiteStore):
    """A store whose every write waits (as for an fsync at each commit), and which records
    for each group whether the loop's thread wrote it."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.on_loop: list[bool] = []
        self.waits = False

    def save_many(self, writes: Sequence[Write]) -> list[int]:
        if self.waits:
            self.on_loop.append(threading.current_thread() is threading.main_thread())
            time.sleep(0.002)  # asleep, not computing: a thread lets the loop go on meanwhile
        return super().save_many(writes)


def test_groups_go_off_the_loop_while_the_stores_writes_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Groups are written on the loop until most of them waited; then large ones go to the
    writing thread, and one in `_MEASURE_EVERY` comes back to the loop to measure again."""
    monkeypatch.setattr(write_queue, "OFF_LOOP_FROM", _OFF_LOOP_FROM)
    monkeypatch.setattr(write_queue, "OFF_LOOP_WAIT_S", _OFF_LOOP_WAIT_S)
    agents, turns = 2 * _OFF_LOOP_FROM, 30

    async def main(store: _WaitingStore) -> None:
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock(), store=store) as e:
            created = [await e.create_agent(GRAPH) for _ in range(agents)]
            store.waits = True  # from now on (each creation was a group of its own, at once)

            async def play(agent: Any) -> None:
                for _ in range(turns):
                    assert (await agent.send_message("hi")).paused
                    assert (await agent.resume()).result.text == "ok"

            await asyncio.gather(*map(play, created))

    store = _WaitingStore()
    asyncio.run(main(store))
    placed = store.on_loop
    assert len(placed) >= 2 * turns  # a group at each pause and at each completion at least
    first_off = placed.index(False)
    assert placed[:first_off] == [True] * first_off  # on the loop while it measured
    assert 1 < first_off < 10  # until most groups had waited (a share of 1/2: a few)
    # From then on: runs of `_MEASURE_EVERY` off the loop, one on it between them.
    later = placed[first_off:]
    assert later[: write_queue._MEASURE_EVERY] == [False] * write_queue._MEASURE_EVERY
    assert later[write_queue._MEASURE_EVERY] is True
    assert later[write_queue._MEASURE_EVERY + 1] is False
