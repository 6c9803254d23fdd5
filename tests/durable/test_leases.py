"""Several workers over one shared store, in one process: two engines on one
real Redis server, standing for two workers. (test_workers.py runs real `serve` processes.)

An agent is held by the worker that has it in memory; another worker gets 3004 for it until it
is let go; a worker whose lease lapsed cannot overwrite the agent's new holder; a pause
deadline nobody holds fires exactly once, on whichever worker claims it first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import structlog

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable.store.redis import RedisStore

Workers = Callable[[], Any]


@pytest.fixture
def shared(redis_url: str, request: pytest.FixtureRequest) -> Iterator[Callable[[], RedisStore]]:
    """A function opening the test's shared store again (one call per worker)."""
    import redis

    prefix = f"leases-{request.node.name}"
    client = redis.Redis.from_url(redis_url)
    yield lambda: RedisStore(redis.Redis.from_url(redis_url), prefix=prefix)
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)
    client.close()


@asynccontextmanager
async def two_workers(open_store: Callable[[], RedisStore], clock: tl.VirtualClock) -> Any:
    async with (
        tl.AsyncEngine(scenario.model(), clock=clock, store=open_store()) as a,
        tl.AsyncEngine(scenario.model(), clock=clock, store=open_store()) as b,
    ):
        yield a, b


def run(test: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(test())


async def until(condition: Callable[[], bool], what: str) -> None:
    """Let the loop run until `condition` holds (10 s at most): a Redis store writes off the
    loop, so what follows a write comes when its round trip is done, not after a set number
    of loop iterations."""
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


def completions(logs: list[dict[str, Any]], agent_id: int) -> list[str]:
    """The statuses of the turns of `agent_id` that completed, in any worker of the process."""
    return [
        log["status"]
        for log in logs
        if log["event"] == "turn.completed" and log.get("agent_id") == agent_id
    ]


def test_agent_ids_are_unique_across_workers(shared: Callable[[], RedisStore]) -> None:
    async def check() -> None:
        async with two_workers(shared, tl.VirtualClock()) as (a, b):
            ids = []
            for index in range(12):
                engine = (a, b)[index % 2]
                agent = await engine.create_agent(scenario.graph("pause"), durable=index % 3 != 0)
                ids.append(agent.agent_id)
            assert len(set(ids)) == len(ids) == 12

    run(check)


def test_a_held_agent_is_3004_elsewhere_and_moves_once_let_go(
    shared: Callable[[], RedisStore],
) -> None:
    async def check() -> None:
        async with two_workers(shared, tl.VirtualClock()) as (a, b):
            agent = await a.create_agent(scenario.graph("await"))
            step = await agent.send_message("hello")
            with pytest.raises(tl.TurnloomError) as busy:
                b.agent(agent.agent_id)
            assert busy.value.code == tl.ErrorCode.AgentBusy
            assert "held by another worker" in busy.value.message
            assert b.agent_ids() == []  # nothing was made of it
            with pytest.raises(tl.TurnloomError) as unknown:
                b.agent(agent.agent_id + 100)
            assert unknown.value.code == tl.ErrorCode.InvalidAgentId
            assert (await agent.wait()).pause == step.pause  # A's copy is untouched

            a.core.evict(agent._core)  # what a server does when the session lets go
            assert a.agent_ids() == []
            moved = b.agent(agent.agent_id)
            now = await moved.wait()
            assert now.pause == step.pause
            call = now.pause.pending_calls[0]
            final = (await moved.resume(tool_results=[(call.call_id, "a door")])).final
            assert final.status is tl.TurnStatus.SUCCESS
            with pytest.raises(tl.TurnloomError) as gone:  # B holds it now: 3004 on A
                a.agent(agent.agent_id)
            assert gone.value.code == tl.ErrorCode.AgentBusy

    run(check)


def test_a_worker_whose_lease_lapsed_cannot_overwrite_the_new_holder(
    shared: Callable[[], RedisStore], redis_url: str
) -> None:
    import redis

    async def check() -> None:
        async with two_workers(shared, tl.VirtualClock()) as (a, b):
            agent = await a.create_agent(scenario.graph("pause"))
            await agent.send_message("hello")
            # A's lease lapses (its key expires: what a stalled or cut-off worker sees).
            store = a.core.store
            assert isinstance(store, RedisStore)
            client = redis.Redis.from_url(redis_url)
            client.delete(f"{store.prefix}:worker:{store.worker}")
            client.close()
            taken = b.agent(agent.agent_id)
            with structlog.testing.capture_logs() as logs:
                # A, not knowing yet, finishes its copy's turn: the write is refused.
                await agent.resume()
                await until(lambda: any(log["event"] == "lease.lost" for log in logs), "lost")
            assert agent.agent_id not in a.agent_ids()
            client = redis.Redis.from_url(redis_url)
            stored = tl.AgentSnapshot(client.hget(f"{store.prefix}:agents", agent.agent_id))
            client.close()
            assert stored.to_dict()["turn"] is not None  # still paused: A's write was refused
            step = await taken.wait()  # B's copy still stands at the pause it took
            assert step.paused
            result = (await taken.resume()).final
            assert result.status is tl.TurnStatus.SUCCESS
            assert len(taken.dialog) == 2  # one turn: A's run left nothing behind

    run(check)


def test_a_deadline_nobody_holds_fires_once_on_the_first_worker_to_claim_it(
    shared: Callable[[], RedisStore],
) -> None:
    async def check() -> None:
        clock = tl.VirtualClock()
        async with two_workers(shared, clock) as (a, b):
            agents = [await a.create_agent(scenario.graph("deadline")) for _ in range(5)]
            for agent in agents:
                await agent.send_message("hello")
                a.core.evict(agent._core)  # let go, paused, deadline in 5 s
            assert a.agent_ids() == [] and b.agent_ids() == []
            with structlog.testing.capture_logs() as logs:
                clock.advance(scenario.TIMEOUT_MS / 1000 + 0.01)  # A's wake-up sweep
                b.core.leases.sweep()  # and B's, at the same moment
                await until(
                    lambda: (
                        all(completions(logs, agent.agent_id) for agent in agents)
                        and a.agent_ids() == b.agent_ids() == []
                    ),
                    "every deadline fired, every agent let go",
                )
            for agent in agents:
                assert completions(logs, agent.agent_id) == ["success"]
            assert a.agent_ids() == [] and b.agent_ids() == []  # let go again, at rest
            for agent in agents:
                done = await b.agent(agent.agent_id).wait()
                assert done.result is not None and done.result.text == "Too late."

    run(check)
