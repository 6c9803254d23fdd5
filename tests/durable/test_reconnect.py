"""`reconnect`: after a dropped connection, a new session takes the engine's durable agents
along; the host's agent objects, callbacks and waiters carry on. A real server on a
SQLite store; time is a `VirtualClock`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import turnloom as tl
from tests.durable import scenario
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer


@pytest.fixture
def server(tmp_path: Path) -> Iterator[BackgroundServer]:
    db = str(tmp_path / "game.db")
    clock = tl.VirtualClock()
    with BackgroundServer(lambda: AsyncEngine(scenario.model(), clock=clock, store=db)) as bg:
        yield bg


def drop(remote: tl.RemoteEngine) -> None:
    """Cut the connection under the client, as a network failure would."""
    conn = remote._engine._conn

    async def cut() -> None:
        conn.abort()
        await conn.lost

    remote._runner.block(cut(), "cut", 5)


def test_a_durable_agent_carries_on_through_a_reconnect(server: BackgroundServer) -> None:
    with tl.connect(*server.address) as remote:
        durable = remote.create_agent(scenario.graph("await"), durable=True)
        plain = remote.create_agent(scenario.graph("await"))
        completions: list[tl.TurnResult] = []
        durable.set_on_turn_complete(completions.append)
        step = durable.send_message("the door")
        assert step.pause is not None and step.pause.pending_calls
        first_session = remote.session_id
        drop(remote)
        with pytest.raises(tl.TurnloomError) as dropped:
            durable.wait()
        assert dropped.value.code == tl.ErrorCode.ConnectionDropped

        assert remote.reconnect(timeout=10) == [durable.agent_id]
        assert remote.session_id != first_session
        again = durable.wait(timeout=10)
        assert again.pause == step.pause  # the same pause, the same call ids
        calls = step.pause.pending_calls
        done = durable.resume(tool_results=[(c.call_id, "a red door") for c in calls]).final
        assert done.status is tl.TurnStatus.SUCCESS
        assert completions == [done]  # the callback set before the drop still fires
        with pytest.raises(tl.TurnloomError):  # the plain agent ended with its session
            plain.send_message("hello")


def test_a_reconnect_of_a_live_session_closes_it_first(server: BackgroundServer) -> None:
    with tl.connect(*server.address) as remote:
        durable = remote.create_agent(scenario.graph("pause"), durable=True)
        assert durable.send_message("hello").paused
        assert remote.reconnect(timeout=10) == [durable.agent_id]
        assert durable.resume().final.status is tl.TurnStatus.SUCCESS


def test_an_agent_taken_over_meanwhile_is_dropped_from_the_reconnect(
    server: BackgroundServer,
) -> None:
    with tl.connect(*server.address) as remote, tl.connect(*server.address) as other:
        durable = remote.create_agent(scenario.graph("pause"), durable=True)
        kept = remote.create_agent(scenario.graph("pause"), durable=True)
        assert durable.resume_token is not None
        drop(remote)
        destroyed = other.attach_agent(durable.agent_id, durable.resume_token)
        destroyed.destroy()
        assert remote.reconnect(timeout=10) == [kept.agent_id]
