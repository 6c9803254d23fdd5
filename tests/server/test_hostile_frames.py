"""Hardening, over raw frames: what one frame holds never ends its session, never
stalls the server, and is refused with its own code and a bounded message."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import GET_TIME, graph_of, nested
from tests.wire import RawSession, code_of, frame, pause_graph_wire
from turnloom.engine.support.guards import LISTED_IDS
from turnloom.engine.turns.exchanges import MAX_TOOL_RESULTS_PER_BATCH
from turnloom.protocol.graph_codec import graph_to_wire
from turnloom.server.requests import HANDLERS
from turnloom.server.session import Session

Code = tl.ErrorCode
Raw = Callable[..., RawSession]
#: Deep enough that `repr`, `json.dumps` or `copy.deepcopy` of it raise RecursionError, and
#: still decodable by msgpack (whose own limit is 1024 levels).
DEPTH = 1000
#: No refusal message quotes more than this, whatever the frame held.
MESSAGE_BOUND = 2000


def paused_agent(raw: RawSession, graph: dict[str, Any] | None = None) -> dict[str, Any]:
    """Create an agent on `raw`, start a turn and return its paused event."""
    reply = raw.request({"type": "CreateAgent", "graph": graph or pause_graph_wire()})
    agent_id = reply["agent_id"]
    raw.request({"type": "SendMessage", "agent_id": agent_id, "text": "hi"})
    return raw.until(lambda f: f.get("event") == "paused")[-1]


def await_result_graph(mock: tl.MockModel) -> dict[str, Any]:
    """detect (ToolCall, AwaitResult) → answer; the mock calls get_time once."""
    call = json.dumps({"name": "get_time", "arguments": {}})
    mock.push(f"<tool_call>{call}</tool_call>", "It is noon.")
    detect = tl.ToolCallParams(
        tools=[GET_TIME],
        disposition=tl.ToolCallDisposition.AwaitResult,
        mode=tl.ToolCallMode.DetectOnly,
        tool_called_exit="answer",
        no_tool_called_exit="answer",
    )
    return graph_to_wire(graph_of(("detect", detect), ("answer", tl.GenerateParams())))


def state_of(raw: RawSession, agent_id: int) -> str:
    return str(raw.request({"type": "GetAgentState", "agent_id": agent_id})["state"])


def test_a_request_id_nested_a_thousand_deep_is_5001_and_the_session_goes_on(
    raw_session: Raw,
) -> None:
    raw = raw_session()
    raw.configure()
    agent_id = paused_agent(raw)["agent_id"]
    raw.send_bytes(frame({"type": "Cancel", "agent_id": agent_id, "request_id": nested(DEPTH)}))
    reply = raw.recv()
    assert code_of(reply) == Code.MalformedMessage and reply["request_id"] is None
    assert "request_id" in reply["message"] and len(reply["message"]) < MESSAGE_BOUND
    # The same session answers the next request, and its agent is untouched.
    assert state_of(raw, agent_id) == "paused"


def test_a_failure_no_check_foresaw_is_5001_without_request_id_and_the_session_goes_on(
    raw_session: Raw, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = raw_session()
    raw.configure()

    def broken(self: Session, frame: dict[str, Any]) -> None:
        raise RecursionError("as deep values did inside data_received")

    monkeypatch.setattr(Session, "handle", broken)
    raw.send({"type": "GetAgentState", "agent_id": 1})
    reply = raw.recv()
    assert code_of(reply) == Code.MalformedMessage and reply["request_id"] is None
    assert "RecursionError" in reply["message"]
    monkeypatch.undo()
    assert code_of(raw.request({"type": "GetAgentState", "agent_id": 1})) == Code.InvalidAgentId


@pytest.mark.parametrize("count", [20_000, 40_000])
def test_a_batch_over_the_result_cap_is_3016_at_once_and_the_turn_stays_paused(
    raw_session: Raw, count: int
) -> None:
    raw, bystander = raw_session(), raw_session()
    raw.configure()
    bystander.configure()
    agent_id = paused_agent(raw)["agent_id"]
    other = paused_agent(bystander)["agent_id"]
    # Short ids: 40,000 of them still fit one 1 MiB frame.
    batch = [{"call_id": f"{i:x}", "result": ""} for i in range(count)]
    reply = raw.request({"type": "ResumeAgent", "agent_id": agent_id, "tool_results": batch})
    assert code_of(reply) == Code.InvalidToolResults
    assert f"{count} results" in reply["message"]
    assert str(MAX_TOOL_RESULTS_PER_BATCH) in reply["message"]
    assert state_of(raw, agent_id) == "paused"
    assert state_of(bystander, other) == "paused"
    raw.request({"type": "ResumeAgent", "agent_id": agent_id})
    assert raw.until(lambda f: f["type"] == "TurnComplete")[-1]["status"] == "success"


def test_a_3016_message_lists_a_bounded_number_of_ids(
    raw_session: Raw, mock_model: tl.MockModel
) -> None:
    raw = raw_session()
    raw.configure()
    paused = paused_agent(raw, await_result_graph(mock_model))
    assert [c["call_id"] for c in paused["pending_calls"]] == ["c00000000"]
    count = MAX_TOOL_RESULTS_PER_BATCH
    batch = [{"call_id": f"x{i:08x}", "result": "r"} for i in range(count)]
    resume = {"type": "ResumeAgent", "agent_id": paused["agent_id"], "tool_results": batch}
    reply = raw.request(resume)
    message = reply["message"]
    assert code_of(reply) == Code.InvalidToolResults and len(message) < MESSAGE_BOUND
    assert "unknown call id(s)" in message and "'x00000000'" in message
    assert f"and {count - LISTED_IDS} more" in message
    assert f"'x{count - 1:08x}'" not in message
    assert state_of(raw, paused["agent_id"]) == "paused"


def test_a_string_or_a_map_for_tool_results_is_5001_as_any_mistyped_routing_field(
    raw_session: Raw, mock_model: tl.MockModel
) -> None:
    raw = raw_session()
    raw.configure()
    paused = paused_agent(raw, await_result_graph(mock_model))
    for bad in ("c00000000", {"call_id": "c00000000", "result": "r"}):
        resume = {"type": "ResumeAgent", "agent_id": paused["agent_id"], "tool_results": bad}
        reply = raw.request(resume)
        assert code_of(reply) == Code.MalformedMessage and "tool_results" in reply["message"]
    assert state_of(raw, paused["agent_id"]) == "paused"


@pytest.mark.parametrize("node", [0, False, [], {}, 7, ["gate"]])
def test_a_resume_node_that_is_not_a_string_is_3005_even_a_falsy_one(
    raw_session: Raw, node: Any
) -> None:
    raw = raw_session()
    raw.configure()
    agent_id = paused_agent(raw)["agent_id"]
    reply = raw.request({"type": "ResumeAgent", "agent_id": agent_id, "resume_node": node})
    assert code_of(reply) == Code.UnknownNode and "resume_node" in reply["message"]
    assert state_of(raw, agent_id) == "paused"
    # nil is the field's default, as for every field: a plain resume.
    raw.request({"type": "ResumeAgent", "agent_id": agent_id, "resume_node": None})
    assert raw.until(lambda f: f["type"] == "TurnComplete")[-1]["status"] == "success"


def deep_requests(agent_id: int) -> list[tuple[dict[str, Any], Code]]:
    deep = nested(DEPTH)
    return [
        ({"type": "ResumeAgent", "agent_id": agent_id, "resume_node": deep}, Code.UnknownNode),
        ({"type": "GetAgentParam", "agent_id": agent_id, "node_name": deep}, Code.UnknownNode),
        (
            {"type": "ChangeAgentParam", "agent_id": agent_id, "node_name": deep, "params": {}},
            Code.UnknownNode,
        ),
        (
            {"type": "CreateAgent", "graph": pause_graph_wire(), "max_steps_per_turn": deep},
            Code.InvalidParamValue,
        ),
        (
            {
                "type": "ResumeAgent",
                "agent_id": agent_id,
                "tool_results": [{"call_id": "c00000000", "result": deep}],
            },
            Code.InvalidToolResults,
        ),
        (
            {"type": "ResumeAgent", "agent_id": agent_id, "tool_results": [deep]},
            Code.InvalidToolResults,
        ),
    ]


def test_values_nested_a_thousand_deep_get_their_own_codes_and_change_nothing(
    raw_session: Raw, server: Any
) -> None:
    raw = raw_session()
    raw.configure()
    agent_id = paused_agent(raw)["agent_id"]
    agents_before = server.call(lambda: set(server.server.engine.core.agents))
    for request, code in deep_requests(agent_id):
        reply = raw.request(request)
        assert code_of(reply) == code, (request["type"], reply)
        assert len(reply["message"]) < MESSAGE_BOUND
        assert state_of(raw, agent_id) == "paused"
    assert server.call(lambda: set(server.server.engine.core.agents)) == agents_before
    # A deep client name is only logged, and only quoted briefly.
    ack = raw.request(
        {"type": "ConfigureSession", "protocol_version": 1, "client_name": nested(DEPTH)}
    )
    assert ack["type"] == "Ack"


def test_a_recursion_error_in_a_handler_is_3007_with_the_request_id(
    raw_session: Raw, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = raw_session()
    raw.configure()

    def too_deep(session: Any, fields: dict[str, Any]) -> dict[str, Any]:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(HANDLERS, "GetAgentState", too_deep)
    reply = raw.request({"type": "GetAgentState", "agent_id": 1})
    assert code_of(reply) == Code.InvalidParamValue and reply["request_id"] is not None
    assert "nested too deep" in reply["message"]
