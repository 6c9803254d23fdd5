"""Frames pipelined in one write: answered in order, a budget's worth per loop iteration
(server/intake.py `ANSWER_BUDGET_S`), so one client cannot hold the loop for long."""

from __future__ import annotations

from typing import Any

import pytest

import turnloom as tl
from tests.wire import RawSession, frame, pause_graph_wire, raw_frame
from turnloom.host.aio import AsyncEngine
from turnloom.protocol.messages import EVENTS
from turnloom.server import BackgroundServer, intake, session


@pytest.fixture
def one_frame_per_iteration(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """No budget at all: each frame after a read's first waits for a loop iteration of its
    own. Returns the count of those iterations, as they happen."""
    monkeypatch.setattr(session, "ANSWER_BUDGET_S", 0.0)
    iterations = [0]
    go_on = intake.Intake._go_on

    def counted(self: intake.Intake) -> None:
        iterations[0] += 1
        go_on(self)

    monkeypatch.setattr(intake.Intake, "_go_on", counted)
    return iterations


def test_pipelined_frames_are_answered_in_order_over_many_iterations(
    one_frame_per_iteration: list[int],
) -> None:
    with BackgroundServer(lambda: AsyncEngine(tl.MockModel("mock"))) as bg:
        raw = RawSession(bg.address)
        raw.configure()
        agent = raw.request({"type": "CreateAgent", "graph": pause_graph_wire()})["agent_id"]
        requests: list[dict[str, Any]] = [{"type": "SendMessage", "agent_id": agent, "text": "a"}]
        requests += [{"type": "GetAgentState", "agent_id": agent} for _ in range(40)]
        requests += [{"type": "ResumeAgent", "agent_id": agent}]
        requests += [{"type": "GetAgentState", "agent_id": 999} for _ in range(40)]
        first = raw.next_id
        frames = [frame({**r, "request_id": first + i}) for i, r in enumerate(requests)]
        frames.insert(20, raw_frame(b"\xc1"))  # not msgpack: 5001, in its place
        raw.next_id += len(requests)
        raw.send_bytes(b"".join(frames))
        replies, events = [], []
        while len(replies) < len(requests) + 1:
            message = raw.recv()
            (events if message["type"] in EVENTS else replies).append(message)
        ids = [r.get("request_id") for r in replies]
        assert [i for i in ids if i is not None] == list(range(first, first + len(requests)))
        assert ids.index(None) == 20 and replies[20]["code"] == 5001
        answers = [r for r in replies if r.get("request_id") is not None]
        assert answers[0]["type"] == "Ack" and answers[41]["type"] == "Ack"  # send, resume
        assert {r["type"] for r in answers[1:41]} == {"AgentStateResponse"}
        assert {r["code"] for r in answers[42:]} == {3001}
        kinds = [e.get("event", e["type"]) for e in events]
        assert kinds.index("paused") < kinds.index("TurnComplete")
        # The 81 frames after each read's first went one loop iteration at a time.
        assert one_frame_per_iteration[0] >= len(requests) - 2
        assert raw.request({"type": "GetAgentState", "agent_id": agent})["state"] == "idle"
