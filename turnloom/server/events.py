"""A session's agents' events, as frames to its client (the `AgentListener` side of a session).

Each event goes out as one frame through the session's `send`, tagged with the agent and, for
turn events, the turn it belongs to.
"""

from __future__ import annotations

from typing import Any

from ..engine.turns.agent import AgentCore
from ..engine.turns.results import (
    AgentListener,
    MessageEvent,
    PauseInfo,
    ToolCallEvent,
    TurnResult,
)
from ..protocol.records import message_to_wire, pause_to_wire, result_to_wire, tool_call_to_wire
from ..states import InputPolicy


class SessionEvents(AgentListener):
    """Turns agent events into NodeEvent, AnswerText and TurnComplete frames."""

    agents: dict[int, AgentCore]
    #: Set when a turn ends (see `Session.data_received`).
    turn_ended: bool

    def send(self, message: dict[str, Any]) -> None:
        """Queue one frame to the client."""
        raise NotImplementedError

    def encoded(self, message: dict[str, Any], in_pieces: bool = False) -> bytes:
        """The frame of `message` (or of the notice that it could not be sent), on any thread
        (`in_pieces`: see `encode_frame`)."""
        raise NotImplementedError

    def send_encoded(self, data: bytes) -> None:
        """Queue one frame already encoded (`encoded`) to the client."""
        raise NotImplementedError

    def _turn_id(self, agent_id: int) -> int | None:
        core = self.agents.get(agent_id)
        return core.turn.turn_id or None if core is not None else None

    def on_paused(self, agent_id: int, info: PauseInfo, awaited: bool) -> None:
        """Send a NodeEvent paused."""
        self.send(
            {
                "type": "NodeEvent",
                "event": "paused",
                "agent_id": agent_id,
                "turn_id": self._turn_id(agent_id),
                **pause_to_wire(info),
            }
        )

    def on_resumed(self, agent_id: int, node_name: str, resume_node: str) -> None:
        """Send a NodeEvent resumed."""
        self.send(
            {
                "type": "NodeEvent",
                "event": "resumed",
                "agent_id": agent_id,
                "turn_id": self._turn_id(agent_id),
                "node_name": node_name,
                "resume_node": resume_node,
            }
        )

    def on_answer_text(self, agent_id: int, text: str, is_delta: bool, is_final: bool) -> None:
        """Send an AnswerText."""
        self.send(
            {
                "type": "AnswerText",
                "agent_id": agent_id,
                "text": text,
                "is_delta": is_delta,
                "is_final": is_final,
            }
        )

    def on_tool_call(self, agent_id: int, event: ToolCallEvent) -> None:
        """Send a NodeEvent tool_call."""
        self.send(
            {
                "type": "NodeEvent",
                "event": "tool_call",
                "agent_id": agent_id,
                "turn_id": self._turn_id(agent_id),
                **tool_call_to_wire(event),
            }
        )

    def on_turn_complete(self, agent_id: int, result: TurnResult) -> None:
        """Send a TurnComplete."""
        self.turn_ended = True
        self.send({"type": "TurnComplete", "agent_id": agent_id, **result_to_wire(result)})

    def on_message(self, agent_id: int, event: MessageEvent) -> None:
        """Send a NodeEvent message: for an agent whose input policy is not `reject`, and for
        any message that waited (queued before the policy became `reject`); otherwise a message
        starts a turn or is refused, which the request's answer says."""
        core = self.agents.get(agent_id)
        if core is None:
            return
        if core.input_policy is InputPolicy.REJECT and not event.waited:
            return  # a plain start: the SendMessage's Ack says it all (older clients see no change)
        self.send(
            {
                "type": "NodeEvent",
                "event": "message",
                "agent_id": agent_id,
                **message_to_wire(event),
            }
        )
