"""What the inspector remembers of each agent: a timeline of its latest turns, and who to tell.

`TimelineRecorder` is an engine observer. It keeps, per agent, the events of its last few
turns (nodes entered and left, pauses and how long they lasted, tool calls and the results
sent back, generations, the final text and status) and the node a running turn is in; each
event is also handed to the pages watching (`Watchers`), batched once per loop iteration so a
burst of events costs one message per page.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine.turns.observers import GenerationRecord, TurnObserver, tool_results_sent
from ..engine.turns.results import PauseInfo, ToolCallEvent, TurnResult
from ..engine.turns.turn import Turn

#: Turns of history kept per agent, and events per turn: a long-running game keeps a bounded
#: amount whatever its agents do.
KEPT_TURNS = 8
KEPT_EVENTS_PER_TURN = 200


@dataclass(slots=True)
class TurnTimeline:
    """One turn's events, in order."""

    turn_id: int
    events: deque[dict[str, Any]] = field(
        default_factory=lambda: deque(maxlen=KEPT_EVENTS_PER_TURN)
    )
    status: str = ""


@dataclass(slots=True)
class AgentTrack:
    """What the inspector knows of one agent beyond the engine's own state."""

    turns: deque[TurnTimeline] = field(default_factory=lambda: deque(maxlen=KEPT_TURNS))
    #: The node the running turn is in ('' between nodes or at rest).
    node: str = ""
    #: Engine clock: when the current pause began, and when the current node began.
    paused_at: float | None = None
    node_at: float = 0.0
    #: The last node that ran, lit when the turn has ended.
    last_node: str = ""

    def timeline(self, turn_id: int) -> TurnTimeline:
        if not self.turns or self.turns[-1].turn_id != turn_id:
            self.turns.append(TurnTimeline(turn_id))
        return self.turns[-1]


class TimelineRecorder(TurnObserver):
    """Records every agent's timeline and tells `on_change(agent_id, event)` of each event."""

    def __init__(self) -> None:
        self.tracks: dict[int, AgentTrack] = {}
        self._seq = itertools.count(1)
        self.listeners: list[Callable[[int, dict[str, Any]], None]] = []

    def track(self, agent_id: int) -> AgentTrack:
        """The agent's track (made on first use)."""
        found = self.tracks.get(agent_id)
        if found is None:
            found = self.tracks[agent_id] = AgentTrack()
        return found

    def forget(self, agent_id: int) -> None:
        """Drop the track of an agent that is gone."""
        self.tracks.pop(agent_id, None)

    def _add(self, agent: Any, turn_id: int, kind: str, **fields: Any) -> dict[str, Any]:
        event = {"seq": next(self._seq), "turn_id": turn_id, "kind": kind, "at": 0.0, **fields}
        event["at"] = round(agent.runtime.clock.now(), 6)
        self.track(agent.agent_id).timeline(turn_id).events.append(event)
        for listener in self.listeners:
            listener(agent.agent_id, event)
        return event

    def turn_started(self, agent: Any, turn: Turn) -> None:
        """Open the turn's timeline with the user's message."""
        self._add(agent, turn.turn_id, "turn_started", message=turn.interaction.user_message)

    def node_started(self, agent: Any, turn: Turn, node: str) -> None:
        """Light the node."""
        track = self.track(agent.agent_id)
        track.node = track.last_node = node
        track.node_at = agent.runtime.clock.now()
        node_type = getattr(agent.params.get(node), "node_type", "")
        self._add(agent, turn.turn_id, "node_started", node=node, node_type=node_type)

    def node_ended(self, agent: Any, turn: Turn, node: str, exit_route: str) -> None:
        """Note the exit the node took."""
        track = self.track(agent.agent_id)
        seconds = agent.runtime.clock.now() - track.node_at
        track.node = ""
        self._add(
            agent, turn.turn_id, "node_ended", node=node, exit_route=exit_route, seconds=seconds
        )

    def generation_ended(self, agent: Any, turn: Turn, node: str, record: GenerationRecord) -> None:
        """The generation's tokens and times."""
        self._add(
            agent,
            turn.turn_id,
            "generation",
            node=node,
            model=record.model,
            prompt_tokens=record.prompt_tokens,
            tokens=record.tokens,
            seconds_to_first_token=record.seconds_to_first_token,
            seconds=record.seconds,
            error=record.error,
        )

    def tool_called(self, agent: Any, turn: Turn, event: ToolCallEvent) -> None:
        """A tool call with its arguments."""
        self._add(
            agent,
            turn.turn_id,
            "tool_call",
            node=event.node_name,
            call_id=event.call_id,
            tool=event.tool_name,
            arguments=event.arguments_json,
            disposition=event.disposition,
        )

    def paused(self, agent: Any, turn: Turn, info: PauseInfo) -> None:
        """Where the turn paused, and what a resume must bring."""
        track = self.track(agent.agent_id)
        track.paused_at = agent.runtime.clock.now()
        self._add(
            agent,
            turn.turn_id,
            "paused",
            node=info.node_name,
            pending_exit=info.pending_exit,
            pending_target=info.pending_target,
            timeout_ms=info.timeout_ms,
            pending_calls=[call.call_id for call in info.pending_calls],
            awaits_results=info.awaits_results,
        )

    def _pause_over(self, agent: Any) -> float | None:
        track = self.track(agent.agent_id)
        began, track.paused_at = track.paused_at, None
        return None if began is None else agent.runtime.clock.now() - began

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """How long the pause lasted, where the turn goes, the results sent back."""
        paused_for = self._pause_over(agent)
        results: dict[str, str] = {}
        for timeline in reversed(self.track(agent.agent_id).turns):
            if timeline.turn_id == turn.turn_id:
                pause = next((e for e in reversed(timeline.events) if e["kind"] == "paused"), None)
                if pause and pause["pending_calls"]:
                    calls = [
                        ToolCallEvent(call_id, "", "", node_name, "")
                        for call_id in pause["pending_calls"]
                    ]
                    results = tool_results_sent(turn, calls)
                break
        self._add(
            agent,
            turn.turn_id,
            "resumed",
            node=node_name,
            resume_node=resume_node,
            paused_seconds=paused_for,
            results=results,
        )

    def turn_ended(self, agent: Any, turn: Turn, result: TurnResult) -> None:
        """The final text and status."""
        paused_for = self._pause_over(agent)
        track = self.track(agent.agent_id)
        track.node = ""
        track.timeline(turn.turn_id).status = result.status.value
        self._add(
            agent,
            turn.turn_id,
            "turn_ended",
            status=result.status.value,
            text=result.text,
            tokens=result.tokens_generated,
            error_code=result.error_code,
            error_message=result.error_message,
            pause_count=result.pause_count,
            paused_seconds=result.paused_duration_s,
            ended_while_paused_for=paused_for,
        )

    def rejected(self, agent_id: int | None, operation: str, code: int, message: str) -> None:
        """Rejections reach the page that asked through its own reply (`actions`)."""


class Watchers:
    """The pages watching, each a queue of message batches: events are gathered for one loop
    iteration, then each page gets one batch."""

    def __init__(self, loop: asyncio.AbstractEventLoop, max_batches: int = 256) -> None:
        self._loop = loop
        self._queues: set[asyncio.Queue[list[dict[str, Any]]]] = set()
        self._pending: list[dict[str, Any]] = []
        self._max = max_batches

    def __len__(self) -> int:
        return len(self._queues)

    def join(self) -> asyncio.Queue[list[dict[str, Any]]]:
        """A new page's queue."""
        queue: asyncio.Queue[list[dict[str, Any]]] = asyncio.Queue(self._max)
        self._queues.add(queue)
        return queue

    def leave(self, queue: asyncio.Queue[list[dict[str, Any]]]) -> None:
        """A page went away."""
        self._queues.discard(queue)

    def push(self, message: dict[str, Any]) -> None:
        """Send `message` to every page, with the others of this loop iteration."""
        if not self._queues:
            return
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(message)

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        for queue in self._queues:
            if queue.full():  # a page that does not read: it gets told to reload instead
                while not queue.empty():
                    queue.get_nowait()
                queue.put_nowait([{"type": "resync"}])
            else:
                queue.put_nowait(batch)
