"""The server seen through raw frames: session lifecycle, every error, ordering, limits."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

import turnloom as tl
from tests.wire import RawSession, code_of, pause_graph_wire
from turnloom.host.aio import AsyncEngine
from turnloom.protocol.frames import PROTOCOL_VERSION
from turnloom.server import BackgroundServer, ServerLimits, is_loopback

Code = tl.ErrorCode
Raw = Callable[..., RawSession]


def new_agent(raw: RawSession, graph: dict[str, Any] | None = None) -> int:
    reply = raw.request({"type": "CreateAgent", "graph": graph or pause_graph_wire()})
    assert reply["type"] == "CreateAgentResponse", reply
    return int(reply["agent_id"])


def test_session_ready_then_configure(raw_session: Raw) -> None:
    raw = raw_session()
    ready = raw.ready
    assert ready["type"] == "SessionReady" and ready["protocol_version"] == PROTOCOL_VERSION
    assert ready["max_frame_bytes"] == 1 << 20 and ready["session_id"] >= 1
    ack = raw.configure()
    assert ack["session_id"] == ready["session_id"] and ack["request_id"] == 1


def test_requests_before_configure_are_2002_and_a_wrong_version_is_5004(raw_session: Raw) -> None:
    raw = raw_session()
    assert code_of(raw.request({"type": "CreateAgent", "graph": {}})) == Code.SessionNotReady
    reply = raw.request({"type": "ConfigureSession", "protocol_version": 99})
    assert code_of(reply) == Code.ProtocolVersionMismatch and "99" in reply["message"]
    assert code_of(raw.request({"type": "Cancel", "agent_id": 1})) == Code.SessionNotReady
    raw.configure()  # the session is still usable
    new_agent(raw)


def test_every_reply_echoes_its_request_id_and_errors_carry_code_and_message(
    raw_session: Raw,
) -> None:
    raw = raw_session()
    raw.configure()
    raw.send_bytes(b"\x03\x00\x00\x00\x92\x01\x02")  # a frame whose body is an array
    bad = raw.recv()
    assert code_of(bad) == Code.MalformedMessage and bad["request_id"] is None
    unknown = raw.request({"type": "Teleport"})
    assert code_of(unknown) == Code.UnknownMessageType and unknown["request_id"] == 2
    assert set(unknown) == {"type", "request_id", "code", "message"}


def test_agent_ids_are_per_session_3001_and_destroyed_ones_3002(raw_session: Raw) -> None:
    a, b = raw_session(), raw_session()
    a.configure()
    b.configure()
    agent = new_agent(a)
    reply = b.request({"type": "SendMessage", "agent_id": agent, "text": "hijack"})
    assert code_of(reply) == Code.InvalidAgentId
    assert a.request({"type": "DestroyAgent", "agent_id": agent})["type"] == "Ack"
    reply = a.request({"type": "SendMessage", "agent_id": agent, "text": "hi"})
    assert code_of(reply) == Code.AgentAlreadyDestroyed
    assert code_of(a.request({"type": "Cancel", "agent_id": 12345})) == Code.InvalidAgentId


def test_a_step_ends_with_the_first_pause_or_completion_after_the_ack(raw_session: Raw) -> None:
    """The ordering clients rely on to answer send_message / resume (see docs/protocol.md)."""
    raw = raw_session()
    raw.configure()
    agent = new_agent(raw)
    rid = raw.send({"type": "SendMessage", "agent_id": agent, "text": "hi"})
    ack, paused = raw.recv(), raw.recv()
    assert (ack["type"], ack["request_id"], ack["turn_id"]) == ("Ack", rid, 1)
    assert paused["type"] == "NodeEvent" and paused["event"] == "paused"
    assert (paused["node_name"], paused["pending_exit"]) == ("gate", "default")
    assert paused["turn_id"] == 1
    rid = raw.send({"type": "ResumeAgent", "agent_id": agent})
    frames = raw.until(lambda f: f["type"] == "TurnComplete")
    kinds = [(f["type"], f.get("event")) for f in frames]
    # What the resume caused at once (resumed) comes before its Ack; the rest of the turn after.
    assert kinds == [
        ("NodeEvent", "resumed"),
        ("Ack", None),
        ("AnswerText", None),
        ("AnswerText", None),
        ("TurnComplete", None),
    ]
    assert frames[1]["request_id"] == rid
    assert [(f["text"], f["is_delta"], f["is_final"]) for f in frames[2:4]] == [
        ("ok", True, False),
        ("ok", False, True),
    ]
    assert frames[-1]["status"] == "success" and frames[-1]["pause_count"] == 1


def test_cancel_reports_the_completion_before_its_ack(raw_session: Raw) -> None:
    raw = raw_session()
    raw.configure()
    agent = new_agent(raw)
    raw.request({"type": "SendMessage", "agent_id": agent, "text": "hi"})
    events: list[dict[str, Any]] = []
    ack = raw.request({"type": "Cancel", "agent_id": agent}, events)
    assert ack["cancelled"] is True
    assert [e["type"] for e in events] == ["NodeEvent", "AnswerText", "TurnComplete"]
    assert events[-1]["status"] == "cancelled"
    assert raw.request({"type": "Cancel", "agent_id": agent})["cancelled"] is False


def test_params_and_state_requests(raw_session: Raw) -> None:
    raw = raw_session()
    raw.configure()
    agent = new_agent(raw)
    param = raw.request({"type": "GetAgentParam", "agent_id": agent, "node_name": "say"})
    assert param["node_type"] == "CannedResponse" and param["params"]["lines"] == ["ok"]
    change = {"type": "ChangeAgentParam", "agent_id": agent, "node_name": "say"}
    assert raw.request({**change, "params": {"lines": ["new"]}})["type"] == "Ack"
    reply = raw.request({**change, "params": {"lines": []}})
    assert code_of(reply) == Code.InvalidParamValue and "'lines'" in reply["message"]
    whole = {"lines": ["whole"], "selection": "first", "default_exit": ""}
    assert raw.request({**change, "node_type": "CannedResponse", "params": whole})["type"] == "Ack"
    reply = raw.request({**change, "node_type": "Pause", "params": {}})
    assert code_of(reply) == Code.InvalidParamValue and "CannedResponse" in reply["message"]
    reply = raw.request({**change, "node_type": "Warp", "params": {}})
    assert code_of(reply) == Code.InvalidParamValue and "Warp" in reply["message"]
    state = raw.request({"type": "GetAgentState", "agent_id": agent})
    assert (state["state"], state["pause"], state["last_result"]) == ("idle", None, None)
    raw.request({"type": "SendMessage", "agent_id": agent, "text": "hi"})
    state = raw.request({"type": "GetAgentState", "agent_id": agent})
    assert state["state"] == "paused" and state["pause"]["node_name"] == "gate"
    raw.request({"type": "ResumeAgent", "agent_id": agent})
    raw.until(lambda f: f["type"] == "TurnComplete")
    state = raw.request({"type": "GetAgentState", "agent_id": agent})
    assert state["state"] == "idle" and state["last_result"]["text"] == "whole"


@pytest.mark.parametrize(
    "graph, code, words",
    [
        ({"nodes": []}, Code.GraphCompilationFailed, "no nodes"),
        ({"nodes": [{"name": "x", "type": "Warp"}]}, Code.GraphCompilationFailed, "Warp"),
        (
            {"nodes": [{"name": "p", "type": "Pause", "params": {"timeout_exit": "no"}}]},
            Code.InvalidExitTarget,
            "timeout_exit",
        ),
        (
            {"nodes": [{"name": "p", "type": "Pause", "params": {"pause_timeout_ms": -1}}]},
            Code.InvalidParamValue,
            "pause_timeout_ms",
        ),
    ],
)
def test_bad_graphs_get_the_engines_codes(
    raw_session: Raw, graph: dict[str, Any], code: Code, words: str
) -> None:
    raw = raw_session()
    raw.configure()
    reply = raw.request({"type": "CreateAgent", "graph": {"start_node": "p", **graph}})
    assert code_of(reply) == code and words in reply["message"]


def test_limits_agents_sessions_and_steps_are_2003(
    clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    limits = ServerLimits(max_sessions=2, max_agents_per_session=2, max_steps_per_turn=100)
    with BackgroundServer(lambda: AsyncEngine(mock_model, clock=clock), limits=limits) as bg:
        raw = RawSession(bg.address)
        raw.configure()
        first = new_agent(raw)
        new_agent(raw)
        reply = raw.request({"type": "CreateAgent", "graph": pause_graph_wire()})
        assert code_of(reply) == Code.SessionLimitExceeded and "2 agents" in reply["message"]
        raw.request({"type": "DestroyAgent", "agent_id": first})
        new_agent(raw)  # room again
        other = RawSession(bg.address)
        other.configure()
        reply = other.request(
            {"type": "CreateAgent", "graph": pause_graph_wire(), "max_steps_per_turn": 101}
        )
        assert code_of(reply) == Code.SessionLimitExceeded and "100" in reply["message"]
        refused = RawSession(bg.address)  # a third session
        assert code_of(refused.ready) == Code.SessionLimitExceeded
        with pytest.raises(ConnectionError):
            refused.recv()
        raw.configure()  # the admitted sessions are untouched


def test_a_client_that_does_not_read_is_closed_alone(
    clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    big_token = "x" * 1000 + " "
    mock_model.push(big_token * 20_000)
    limits = ServerLimits(max_outbox_bytes=256 * 1024)
    with BackgroundServer(lambda: AsyncEngine(mock_model, clock=clock), limits=limits) as bg:
        bystander = RawSession(bg.address)
        bystander.configure()
        calm = new_agent(bystander)
        bystander.request({"type": "SendMessage", "agent_id": calm, "text": "hi"})
        stalled = RawSession(bg.address, rcvbuf=4096)
        stalled.configure()
        graph = {
            "nodes": [
                {"name": "g", "type": "Generate", "params": {"sampling": {"max_tokens": 32768}}}
            ],
            "start_node": "g",
            "default_model_name": "mock",
        }
        agent = new_agent(stalled, graph)
        stalled.send({"type": "SendMessage", "agent_id": agent, "text": "talk a lot"})
        # Wait until the server gave up on the session (its agent is gone), reading nothing.
        for _ in range(500):
            if bg.call(lambda: set(bg.server.engine.core.agents)) == {calm}:
                break
            threading.Event().wait(0.01)
        assert bg.call(lambda: set(bg.server.engine.core.agents)) == {calm}
        frames = stalled.recv_all(timeout=5)
        assert frames and code_of(frames[-1]) == Code.SessionLimitExceeded
        assert "not read" in frames[-1]["message"] or "waiting" in frames[-1]["message"]
        assert bg.call(lambda: len(bg.server.sessions)) == 1
        state = bystander.request({"type": "GetAgentState", "agent_id": calm})
        assert state["state"] == "paused"


def test_shutdown_cancels_turns_answers_2001_then_closes(
    server: BackgroundServer, raw_session: Raw
) -> None:
    raw = raw_session()
    raw.configure()
    agent = new_agent(raw)
    raw.request({"type": "SendMessage", "agent_id": agent, "text": "hi"})
    raw.until(lambda f: f.get("event") == "paused")
    closer = threading.Thread(target=server.close, kwargs={"grace_s": 5.0})
    closer.start()
    frames = raw.until(lambda f: f["type"] == "ErrorResponse")
    assert [f["type"] for f in frames] == ["AnswerText", "TurnComplete", "ErrorResponse"]
    assert frames[1]["status"] == "cancelled"
    assert code_of(frames[-1]) == Code.ServerShuttingDown and frames[-1]["request_id"] is None
    reply = raw.request({"type": "GetAgentState", "agent_id": agent})
    assert code_of(reply) == Code.ServerShuttingDown
    raw.close()  # the last client hanging up lets the shutdown finish before its grace
    closer.join(5)
    assert not closer.is_alive()


def test_the_server_binds_loopback_unless_told_otherwise() -> None:
    with BackgroundServer() as bg:
        assert bg.address[0] == "127.0.0.1"
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("example.org")
