"""What the inspector remembers of each agent: a timeline of its latest turns, and who changed.

`TimelineRecorder` is an engine observer, so it runs inside every turn: each callback only
appends a tuple of what it was handed (the engine's own records, not copies) to the agent's
current turn and notes the agent as changed. The timeline entries a page reads
(`TurnTimeline.entries`) are built from those tuples only when a page asks for the agent (and
once only for a turn that has ended), so a busy engine with the page open pays for what the
page shows, not for every event it could have shown.
"""

from __future__ import annotations

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
    """One turn's events, in order, as recorded: (kind, engine-clock time, what was handed)."""

    turn_id: int
    events: deque[tuple[Any, ...]] = field(
        default_factory=lambda: deque(maxlen=KEPT_EVENTS_PER_TURN)
    )
    status: str = ""
    #: The entries of an ended turn, built once (it gets no more events).
    built: list[dict[str, Any]] | None = None

    def entries(self, node_type: Callable[[str], str]) -> list[dict[str, Any]]:
        """The events as the page shows them (`node_type(node)`: the type of a node)."""
        if self.built is not None:
            return self.built
        entries = [_entry(self.turn_id, event, node_type) for event in self.events]
        if self.status:
            self.built = entries
        return entries


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
    #: The pause the turn is in, as it was told (its calls are answered on resume).
    pause: PauseInfo | None = None
    #: The latest turn's id and events (what every callback but the first appends to).
    turn_id: int = -1
    events: deque[tuple[Any, ...]] = field(default_factory=deque)

    def timeline(self, turn_id: int) -> deque[tuple[Any, ...]]:
        """The events of turn `turn_id` (a new timeline if it is not the latest)."""
        if self.turn_id != turn_id:
            latest = TurnTimeline(turn_id)
            self.turns.append(latest)
            self.turn_id, self.events = turn_id, latest.events
        return self.events


class TimelineRecorder(TurnObserver):
    """Records every agent's timeline, on `now` (the engine clock's `now`), and notes in
    `changed` the agents whose row or timeline changed (the inspector empties it)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.tracks: dict[int, AgentTrack] = {}
        self.now = now
        self.changed: set[int] = set()

    def track(self, agent_id: int) -> AgentTrack:
        """The agent's track (made on first use)."""
        found = self.tracks.get(agent_id)
        if found is None:
            found = self.tracks[agent_id] = AgentTrack()
        return found

    def forget(self, agent_id: int) -> None:
        """Drop the track of an agent that is gone."""
        self.tracks.pop(agent_id, None)

    def turn_started(self, agent: Any, turn: Turn) -> None:
        """Open the turn's timeline with the user's message."""
        agent_id = agent.agent_id
        events = self.track(agent_id).timeline(turn.turn_id)
        events.append(("turn_started", self.now(), turn.interaction.user_message))
        self.changed.add(agent_id)

    def node_started(self, agent: Any, turn: Turn, node: str) -> None:
        """Light the node."""
        agent_id = agent.agent_id
        track = self.tracks.get(agent_id) or self.track(agent_id)
        track.node = track.last_node = node
        track.node_at = now = self.now()
        _events(track, turn).append(("node_started", now, node))
        self.changed.add(agent_id)

    def node_ended(self, agent: Any, turn: Turn, node: str, exit_route: str) -> None:
        """Note the exit the node took."""
        track = self.tracks.get(agent.agent_id) or self.track(agent.agent_id)
        now = self.now()
        track.node = ""
        _events(track, turn).append(("node_ended", now, node, exit_route, now - track.node_at))

    def generation_ended(self, agent: Any, turn: Turn, node: str, record: GenerationRecord) -> None:
        """The generation's tokens and times. Its values, not the record: a record whose prompt
        is still to be counted holds the whole prompt, which the timeline would keep alive for
        turns (and every collection of the garbage collector would walk). So the prompt's
        count is shown when the backend reported it or another observer had it counted."""
        track = self.tracks.get(agent.agent_id) or self.track(agent.agent_id)
        _events(track, turn).append(
            (
                "generation",
                self.now(),
                node,
                record.model,
                record.prompt_tokens_if_counted,
                record.tokens,
                record.seconds_to_first_token,
                record.seconds,
                record.error,
            )
        )

    def tool_called(self, agent: Any, turn: Turn, event: ToolCallEvent) -> None:
        """A tool call with its arguments."""
        track = self.tracks.get(agent.agent_id) or self.track(agent.agent_id)
        _events(track, turn).append(("tool_call", self.now(), event))

    def paused(self, agent: Any, turn: Turn, info: PauseInfo) -> None:
        """Where the turn paused, and what a resume must bring."""
        agent_id = agent.agent_id
        track = self.tracks.get(agent_id) or self.track(agent_id)
        track.paused_at = now = self.now()
        track.pause = info
        _events(track, turn).append(("paused", now, info))
        self.changed.add(agent_id)

    def _pause_over(self, track: AgentTrack, now: float) -> float | None:
        began, track.paused_at, track.pause = track.paused_at, None, None
        return None if began is None else now - began

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """How long the pause lasted, where the turn goes, the results sent back."""
        agent_id = agent.agent_id
        track = self.tracks.get(agent_id) or self.track(agent_id)
        pause = track.pause
        now = self.now()
        paused_for = self._pause_over(track, now)
        # Read now: the results are the last messages of the turn only until it goes on.
        results = tool_results_sent(turn, pause.pending_calls) if pause is not None else {}
        _events(track, turn).append(("resumed", now, node_name, resume_node, paused_for, results))
        self.changed.add(agent_id)

    def turn_ended(self, agent: Any, turn: Turn, result: TurnResult) -> None:
        """The final text and status."""
        agent_id = agent.agent_id
        track = self.tracks.get(agent_id) or self.track(agent_id)
        now = self.now()
        paused_for = self._pause_over(track, now)
        track.node = ""
        events = _events(track, turn)
        track.turns[-1].status = result.status.value
        events.append(("turn_ended", now, result, paused_for))
        self.changed.add(agent_id)

    def rejected(self, agent_id: int | None, operation: str, code: int, message: str) -> None:
        """Rejections reach the page that asked through its own reply (`actions`)."""


def _events(track: AgentTrack, turn: Turn) -> deque[tuple[Any, ...]]:
    """The events of `turn` in `track` (the latest turn's, without a lookup, nearly always)."""
    return track.events if track.turn_id == turn.turn_id else track.timeline(turn.turn_id)


def _entry(turn_id: int, event: tuple[Any, ...], node_type: Callable[[str], str]) -> dict[str, Any]:
    """One recorded event as the page's timeline shows it."""
    kind, at, *rest = event
    entry: dict[str, Any] = {"turn_id": turn_id, "kind": kind, "at": round(at, 6)}
    if kind == "turn_started":
        entry["message"] = rest[0]
    elif kind == "node_started":
        entry.update(node=rest[0], node_type=node_type(rest[0]))
    elif kind == "node_ended":
        entry.update(node=rest[0], exit_route=rest[1], seconds=rest[2])
    elif kind == "generation":
        node, model, prompt_tokens, tokens, first_token, seconds, error = rest
        entry.update(
            node=node,
            model=model,
            prompt_tokens=prompt_tokens,
            tokens=tokens,
            seconds_to_first_token=first_token,
            seconds=seconds,
            error=error,
        )
    elif kind == "tool_call":
        call: ToolCallEvent = rest[0]
        entry.update(
            node=call.node_name,
            call_id=call.call_id,
            tool=call.tool_name,
            arguments=call.arguments_json,
            disposition=call.disposition,
        )
    elif kind == "paused":
        info: PauseInfo = rest[0]
        entry.update(
            node=info.node_name,
            pending_exit=info.pending_exit,
            pending_target=info.pending_target,
            timeout_ms=info.timeout_ms,
            pending_calls=[call.call_id for call in info.pending_calls],
            awaits_results=info.awaits_results,
        )
    elif kind == "resumed":
        entry.update(node=rest[0], resume_node=rest[1], paused_seconds=rest[2], results=rest[3])
    elif kind == "turn_ended":
        result: TurnResult = rest[0]
        entry.update(
            status=result.status.value,
            text=result.text,
            tokens=result.tokens_generated,
            error_code=result.error_code,
            error_message=result.error_message,
            pause_count=result.pause_count,
            paused_seconds=result.paused_duration_s,
            ended_while_paused_for=rest[1],
        )
    return entry
