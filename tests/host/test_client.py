"""The Python client: the embedded API over the wire, and its own codes 1001 / 1002 / 1003."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

import turnloom as tl
from tests.helpers import Recorder, graph_of
from turnloom.host import connection
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer, ServerLimits

Code = tl.ErrorCode


def gate_graph() -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="say")),
        ("say", tl.CannedResponseParams(lines=["done"])),
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_the_drop(remote: tl.RemoteEngine) -> None:
    """Wait (5 s at most) until the client's loop has read the end of a connection that the
    server closed."""
    conn = remote._engine._conn

    async def lost() -> None:
        await conn.lost

    remote._runner.block(lost(), "wait_for_the_drop", 5)


def test_switching_is_one_line_and_the_agent_is_the_same_class(server: BackgroundServer) -> None:
    for engine in (tl.Engine(tl.MockModel("mock")), tl.connect(*server.address)):
        with engine:
            agent = engine.create_agent(gate_graph())
            assert type(agent) is tl.Agent
            assert agent.send_message("hi").paused
            assert agent.resume().result.text == "done"  # type: ignore[union-attr]


def test_nothing_listening_is_1001() -> None:
    with pytest.raises(tl.TurnloomError) as info:
        tl.connect("127.0.0.1", free_port(), timeout=2)
    assert info.value.code == Code.ConnectionFailed and "cannot connect" in info.value.message


def test_a_server_speaking_another_version_is_5004(
    server: BackgroundServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(connection, "PROTOCOL_VERSION", 99)
    with pytest.raises(tl.TurnloomError) as info:
        tl.connect(*server.address)
    assert info.value.code == Code.ProtocolVersionMismatch


def test_a_full_server_refuses_the_session_with_2003(
    clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    limits = ServerLimits(max_sessions=1)
    with (
        BackgroundServer(lambda: AsyncEngine(mock_model, clock=clock), limits=limits) as bg,
        tl.connect(*bg.address),
    ):
        with pytest.raises(tl.TurnloomError) as info:
            tl.connect(*bg.address)
        assert info.value.code == Code.SessionLimitExceeded


def test_a_dropped_connection_is_1002_for_waiters_and_later_calls(
    server: BackgroundServer,
) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(gate_graph())
        assert agent.send_message("hi").paused
        waiting = agent.wait_complete_async()
        server.call(lambda: [s.transport.abort() for s in server.server.sessions.values()])  # type: ignore[union-attr]
        with pytest.raises(tl.TurnloomError) as info:
            waiting.result(5)
        assert info.value.code == Code.ConnectionDropped
        with pytest.raises(tl.TurnloomError) as info:
            agent.resume()
        assert info.value.code == Code.ConnectionDropped


def test_no_answer_in_time_is_1003_and_the_client_stays_usable(server: BackgroundServer) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(gate_graph())
        agent.send_message("hi")
        release = threading.Event()
        server.server.engine.core.loop.call_soon_threadsafe(release.wait, 2)  # a busy server
        with pytest.raises(tl.TurnloomError) as info:
            agent.wait(timeout=0.05)
        release.set()
        assert info.value.code == Code.Timeout
        assert agent.resume(timeout=5).result.text == "done"  # type: ignore[union-attr]


def test_shutdown_ends_turns_then_refuses_with_2001_then_drops(server: BackgroundServer) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(gate_graph())
        rec = Recorder(agent)
        agent.send_message("hi")
        waiting = agent.wait_complete_async()
        agent.get_params("say")  # answered after the wait, so the wait is registered by now
        closer = threading.Thread(target=server.close, kwargs={"grace_s": 0.5})
        closer.start()
        assert waiting.result(5).status == tl.TurnStatus.CANCELLED  # type: ignore[union-attr]
        assert rec.results[-1].status == tl.TurnStatus.CANCELLED
        for _ in range(100):  # the 2001 notice follows the completions
            try:
                agent.cancel()
            except tl.TurnloomError as error:
                assert error.code == Code.ServerShuttingDown
                break
            time.sleep(0.01)
        else:
            pytest.fail("no 2001 after the shutdown notice")
        closer.join(5)
        assert not closer.is_alive(), "the server did not finish closing"
        # The server has closed the connection, but the client learns it only when its loop
        # reads the end of the stream: a call made before that is still refused 2001, rightly
        # (it cannot know yet). Once the client has seen the drop, every call is 1002.
        wait_for_the_drop(remote)
        with pytest.raises(tl.TurnloomError) as info:
            agent.cancel()
        assert info.value.code == Code.ConnectionDropped


def test_client_side_refusals_need_no_round_trip(server: BackgroundServer) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(gate_graph())
        with pytest.raises(tl.TurnloomError) as info:
            agent.send_message("x" * (1 << 20))
        assert info.value.code == Code.FrameTooLarge
        with pytest.raises(tl.TurnloomError) as info:
            agent.change_params("say", {"lines": [object()]})
        assert info.value.code == Code.InvalidParamValue
        with pytest.raises(tl.TurnloomError) as info:
            remote.create_agent("not a graph")  # type: ignore[arg-type]
        assert info.value.code == Code.InvalidParamValue
        assert agent.send_message("fine").paused


def test_an_event_too_large_to_send_fails_the_waiter_instead_of_hanging(
    server: BackgroundServer, mock_model: tl.MockModel
) -> None:
    mock_model.push("x" * (1 << 20))
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(graph_of(("gen", tl.GenerateParams(stream=False))))
        with pytest.raises(tl.TurnloomError) as info:
            agent.send_message("say a lot", timeout=5)
        assert info.value.code == Code.FrameTooLarge
        assert agent.send_message("short").result.text == "You said: short"  # type: ignore[union-attr]


def test_async_handlers_and_async_face_over_the_wire(
    server: BackgroundServer, mock_model: tl.MockModel
) -> None:
    tool = tl.ToolDefinition(name="get_time", description="The time.")
    graph = graph_of(
        (
            "detect",
            tl.ToolCallParams(
                tools=[tool],
                disposition=tl.ToolCallDisposition.AwaitResult,
                tool_called_exit="answer",
            ),
        ),
        ("answer", tl.GenerateParams()),
    )
    mock_model.push('<tool_call>{"name": "get_time", "arguments": {}}</tool_call>', "Noon.")

    async def main() -> None:
        async with await tl.connect_async(*server.address) as remote:
            agent = await remote.create_agent(graph)
            seen_on: list[str] = []

            async def get_time(call: tl.ToolCallEvent) -> str:
                seen_on.append(threading.current_thread().name)
                await asyncio.sleep(0)
                return "12:00"

            agent.register_tool("get_time", get_time)
            step = await agent.send_message("time?")
            if step.paused:  # async handlers answer after the pause is reported
                result = await agent.wait_complete()
            else:
                result = step.result
            assert result is not None and result.text == "Noon."
            assert seen_on == [threading.current_thread().name]  # on the caller's loop

    asyncio.run(main())
    tool_msgs = [m["content"] for m in mock_model.requests[-1].messages if m["role"] == "tool"]
    assert tool_msgs == ["12:00"]


def test_callbacks_run_on_the_client_thread(server: BackgroundServer) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(gate_graph())
        threads: list[str] = []
        agent.set_on_paused(lambda node, exit_: threads.append(threading.current_thread().name))
        agent.send_message("hi")
        assert threads == ["turnloom-client"]
