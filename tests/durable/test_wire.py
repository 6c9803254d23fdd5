"""Agents that outlive a connection: durable agents over the wire, a real server.

A durable agent is created with `durable: true` on a server with a store; its creator gets a
resume token; any later session attaches it with that token (3001 otherwise, the same refusal
for an unknown id) and finds it where it stood. Non-durable agents still end with their session.
Time is a `VirtualClock`: no test waits for a deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import turnloom as tl
from tests.durable import scenario
from tests.wire import RawSession, code_of, pause_graph_wire
from turnloom.host.aio import AsyncEngine
from turnloom.protocol.graph_codec import graph_to_wire
from turnloom.server import BackgroundServer

Code = tl.ErrorCode


@pytest.fixture
def clock() -> tl.VirtualClock:
    return tl.VirtualClock()


@pytest.fixture
def server(tmp_path: Path, clock: tl.VirtualClock) -> Iterator[BackgroundServer]:
    """A server whose engine keeps durable agents in a SQLite file."""
    db = str(tmp_path / "game.db")
    with BackgroundServer(lambda: AsyncEngine(scenario.model(), clock=clock, store=db)) as bg:
        yield bg


def finish_await(agent: tl.Agent, step: tl.Step) -> tuple[list[str], tl.TurnResult]:
    """Resume an AwaitResult pause with a result per pending call: (call ids, completion)."""
    assert step.pause is not None and step.pause.awaits_results, step
    calls = step.pause.pending_calls
    results = [(c.call_id, f"saw {c.arguments['what']} ({c.call_id})") for c in calls]
    return [c.call_id for c in calls], agent.resume(tool_results=results).final


def test_a_durable_agent_is_attached_from_a_new_connection_and_resumes_as_if_never_left(
    server: BackgroundServer,
) -> None:
    graph = scenario.graph("await")
    with tl.connect(*server.address) as remote:
        straight = remote.create_agent(graph)
        want_ids, want = finish_await(straight, straight.send_message("the door"))
        agent = remote.create_agent(graph, durable=True)
        token = agent.resume_token
        assert isinstance(token, str) and len(token) >= 40
        assert straight.resume_token is None
        first = agent.send_message("the door")
        assert first.pause is not None
        agent_id = agent.agent_id
    # Closing the session let the durable agent go, paused; the other one is gone.
    live = server.call(lambda: sorted(server.server.engine_core.agents))
    assert live == [agent_id]
    with tl.connect(*server.address) as remote:
        again = remote.attach_agent(agent_id, token)
        assert again.agent_id == agent_id and again.resume_token == token
        step = again.wait()
        assert step.pause is not None and step.pause == first.pause
        completions: list[tl.TurnResult] = []
        again.set_on_turn_complete(completions.append)
        got_ids, got = finish_await(again, step)
        assert got_ids == want_ids
        assert (got.status, got.text, got.pause_count) == (want.status, want.text, 1)
        assert completions == [got]
        assert again.wait().result == got
        again.destroy()
    assert server.call(lambda: sorted(server.server.engine_core.agents)) == []


def test_a_stored_pause_is_written_to_its_client_by_the_write_that_stored_it(
    server: BackgroundServer,
) -> None:
    """The frames a group's tells queue (a durable agent's Paused, its completion) leave in the
    loop callback that wrote the group, not in the next iteration behind whatever requests
    arrived meanwhile."""
    core, wire = server.server.engine_core, server.server
    groups: list[tuple[list[int], list[int]]] = []  # sessions waiting before / after
    send_now = core.after_rests_told
    assert send_now is not None

    def noted() -> None:
        before = [session.session_id for session in wire.unsent]
        send_now()
        groups.append((before, [session.session_id for session in wire.unsent]))

    server.call(lambda: setattr(core, "after_rests_told", noted))
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(scenario.graph("pause"), durable=True)
        assert agent.send_message("hi").pause is not None
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS
    # The pause and the completion each waited in their session, and left with the write.
    assert len([before for before, _ in groups if before]) >= 2, groups
    assert all(after == [] for _, after in groups), groups


def test_a_wrong_token_or_an_unknown_agent_is_the_same_3001_and_names_no_token(
    server: BackgroundServer,
) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(scenario.graph("pause"), durable=True)
        token = agent.resume_token
        assert token is not None
        plain = remote.create_agent(scenario.graph("pause"))
        raw = RawSession(server.address)
        try:
            raw.configure()
            replies = [
                raw.request({"type": "AttachAgent", "agent_id": agent.agent_id, **fields})
                for fields in (
                    {"resume_token": token[:-1] + ("A" if token[-1] != "A" else "B")},
                    {"resume_token": token.upper()},
                    {"resume_token": [token]},
                    {},
                )
            ]
            replies.append(
                raw.request({"type": "AttachAgent", "agent_id": 999_999, "resume_token": token})
            )
            replies.append(
                raw.request(
                    {"type": "AttachAgent", "agent_id": plain.agent_id, "resume_token": token}
                )
            )
            for reply in replies:
                assert code_of(reply) == Code.InvalidAgentId, reply
                assert token not in reply["message"] and token[:12] not in reply["message"]
            messages = {r["message"].replace(str(r_id), "ID") for r, r_id in zip(
                replies, [agent.agent_id] * 4 + [999_999, plain.agent_id], strict=True
            )}  # fmt: skip
            assert len(messages) == 1, messages
            # Nothing was taken: the agent still answers its own session.
            assert agent.send_message("hi").pause is not None
        finally:
            raw.close()
        with pytest.raises(tl.TurnloomError) as refused:
            remote.attach_agent(agent.agent_id, "not-the-token")
        assert refused.value.code == Code.InvalidAgentId


def test_durable_is_refused_3007_by_a_server_without_a_store() -> None:
    with (
        BackgroundServer(lambda: AsyncEngine(scenario.model())) as bg,
        tl.connect(*bg.address) as remote,
    ):
        with pytest.raises(tl.TurnloomError) as refused:
            remote.create_agent(scenario.graph("pause"), durable=True)
        assert refused.value.code == Code.InvalidParamValue == 3007
        assert "store" in refused.value.message
        assert remote.create_agent(scenario.graph("pause")).resume_token is None


def test_an_attach_takes_the_agent_from_the_session_holding_it(
    server: BackgroundServer,
) -> None:
    raw = RawSession(server.address)
    try:
        raw.configure()
        created = raw.request({"type": "CreateAgent", "graph": pause_graph_wire(), "durable": True})
        agent_id, token = created["agent_id"], created["resume_token"]
        sent = raw.request({"type": "SendMessage", "agent_id": agent_id, "text": "hi"})
        assert sent["type"] == "Ack"
        raw.until(lambda frame: frame.get("event") == "paused")
        with tl.connect(*server.address) as remote:
            agent = remote.attach_agent(agent_id, token)
            notice = raw.until(lambda frame: frame["type"] != "NodeEvent")[-1]
            assert notice == {
                "type": "AgentDetached",
                "agent_id": agent_id,
                "reason": "attached elsewhere",
            }
            lost = raw.request({"type": "GetAgentState", "agent_id": agent_id})
            assert code_of(lost) == Code.InvalidAgentId
            # Attaching it back: the Python client's waiters then fail with 3001.
            waiting = agent.wait_complete_async()
            back = raw.request({"type": "AttachAgent", "agent_id": agent_id, "resume_token": token})
            assert back["type"] == "AgentStateResponse" and back["state"] == "paused"
            assert back["pause"]["node_name"] == "gate"
            with pytest.raises(tl.TurnloomError) as detached:
                waiting.result(timeout=10)
            assert detached.value.code == Code.InvalidAgentId
            with pytest.raises(tl.TurnloomError) as gone:
                agent.wait()
            assert gone.value.code == Code.InvalidAgentId
        resumed = raw.request({"type": "ResumeAgent", "agent_id": agent_id})
        assert resumed["type"] == "Ack"
        done = raw.until(lambda frame: frame["type"] == "TurnComplete")[-1]
        assert done["text"] == "ok" and done["pause_count"] == 1
    finally:
        raw.close()


def test_a_detached_agent_keeps_its_deadline_and_is_found_timed_out(
    server: BackgroundServer, clock: tl.VirtualClock
) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(scenario.graph("deadline"), durable=True)
        assert agent.send_message("wait for me").pause is not None
        agent_id, token = agent.agent_id, agent.resume_token
    assert token is not None
    server.call(lambda: clock.advance(scenario.TIMEOUT_MS / 1000 + 1))
    with tl.connect(*server.address) as remote:
        again = remote.attach_agent(agent_id, token)
        result = again.wait().result
        assert result is not None and result.text == "Too late."
        assert again.last_result == result


def test_the_raw_reply_of_a_durable_create_carries_the_token_once(
    server: BackgroundServer,
) -> None:
    raw = RawSession(server.address)
    try:
        raw.configure()
        graph: dict[str, Any] = graph_to_wire(scenario.graph("pause"))
        plain = raw.request({"type": "CreateAgent", "graph": graph})
        assert "resume_token" not in plain
        durable = raw.request({"type": "CreateAgent", "graph": graph, "durable": True})
        token = durable["resume_token"]
        state = raw.request({"type": "GetAgentState", "agent_id": durable["agent_id"]})
        assert token not in repr(state)
        bad = raw.request({"type": "CreateAgent", "graph": graph, "durable": "yes"})
        assert code_of(bad) == Code.MalformedMessage
    finally:
        raw.close()
    # Only the digest is kept, in the stored snapshot's tags.
    stored = server.call(lambda: server.server.engine_core.agents[durable["agent_id"]].tags)
    assert token not in repr(stored) and len(next(iter(stored.values()))) == 64


def test_the_asyncio_client_attaches_too(server: BackgroundServer) -> None:
    async def main() -> None:
        remote = await tl.connect_async(*server.address)
        async with remote:
            agent = await remote.create_agent(scenario.graph("await"), durable=True)
            first = await agent.send_message("the chest")
            token = agent.resume_token
            assert first.pause is not None and token is not None
        remote = await tl.connect_async(*server.address)
        async with remote:
            again = await remote.attach_agent(agent.agent_id, token)
            step = await again.wait()
            assert step.pause == first.pause
            results = [(c.call_id, "gold") for c in first.pause.pending_calls]
            done = await again.resume(tool_results=results)
            assert done.result is not None and done.result.pause_count == 1

    asyncio.run(main())


def test_attaching_an_agent_the_session_holds_gives_the_same_face(
    server: BackgroundServer,
) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(scenario.graph("pause"), durable=True)
        assert agent.send_message("hi").pause is not None
        token = agent.resume_token
        assert token is not None
        again = remote.attach_agent(agent.agent_id, token)
        assert again.dispatch is agent.dispatch  # one face: its callbacks and waiters stay
        assert again.wait().pause is not None
        assert again.resume().final.text == agent.last_result.text  # type: ignore[union-attr]


def test_serve_with_a_store_it_cannot_open_says_so_and_exits_1(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from turnloom import __main__ as cli
    from turnloom.server import ServerLimits

    bad = str(tmp_path / "no" / "such" / "dir" / "game.db")
    assert cli.serve("127.0.0.1", 0, ServerLimits(), mock=True, store=bad) == 1
    assert "turnloom: cannot open the store:" in capsys.readouterr().err
