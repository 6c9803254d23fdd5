"""What the inspector remembers of each agent: a timeline of its latest turns, and who changed.

`TimelineRecorder` is an engine observer, so it runs inside every turn, and does the least it
can there: each callback finds the turn's list of events by the turn itself (one dictionary
lookup), appends a tuple of what it was handed (the engine's own records, not copies) stamped
with the clock, and notes the agent as changed. Everything else is worked out from those
tuples only when a page asks: the node an agent is in (`AgentTrack.node_now`), how long a node
ran or a pause lasted, and the timeline entries themselves (`AgentTrack.timeline`, built once
for a turn that has ended). A busy engine pays for what a page shows, not for every event it
could have shown.
"""

from __future__ import annotations

import time
from asyncio import BaseEventLoop
from collections import deque
from collections.abc import Callable
from typing import Any

from ..engine.support.clock import Clock, LoopClock
from ..engine.turns.observers import GenerationRecord, TurnObserver, tool_results_sent
from ..engine.turns.results import PauseInfo, ToolCallEvent, TurnResult
from ..engine.turns.turn import Turn

#: Turns of history kept per agent, and events per turn: a long-running game keeps a bounded
#: amount whatever its agents do.
KEPT_TURNS = 8
KEPT_EVENTS_PER_TURN = 200

Events = deque[tuple[Any, ...]]


class AgentTrack:
    """What the inspector recorded of one agent: its latest turns' events."""

    __slots__ = ("built", "open_turn", "turns")

    def __init__(self) -> None:
        #: The latest turns: (turn id, its events as recorded: (kind, engine-clock time, what
        #: was handed)), oldest first.
        self.turns: deque[tuple[int, Events]] = deque(maxlen=KEPT_TURNS)
        #: The page's entries of ended turns, by turn id: built once (they get no more events).
        self.built: dict[int, list[dict[str, Any]]] = {}
        #: The agent's turn being recorded (until it ends).
        self.open_turn: Turn | None = None

    def node_now(self) -> tuple[str, str]:
        """(the node the latest turn is in, '' between nodes or after the turn; the last node
        it entered), from its events."""
        if not self.turns:
            return "", ""
        for event in reversed(self.turns[-1][1]):
            kind = event[0]
            if kind == "node_started":
                return event[2], event[2]
            if kind == "node_ended":
                return "", event[2]
        return "", ""

    def timeline(self, node_type: Callable[[str], str]) -> list[dict[str, Any]]:
        """The kept turns as the page shows them, oldest first: each its id, its final status
        ('' while open) and its entries (`node_type(node)`: the type of a node)."""
        shown, built = [], {}
        for turn_id, events in self.turns:
            status = _status(events)
            entries = self.built.get(turn_id) if status else None
            if entries is None:
                entries = _entries(turn_id, events, node_type)
            if status:
                built[turn_id] = entries
            shown.append({"turn_id": turn_id, "status": status, "events": entries})
        self.built = built  # those of turns no longer kept go
        return shown


def fast_now(clock: Clock) -> Callable[[], float]:
    """`clock.now`, or `time.monotonic` itself where that is all it returns (the loop clock of
    a standard asyncio loop, whose `time()` is `time.monotonic()`): events are stamped with
    one C call instead of two Python ones, on the same clock."""
    loop = clock.loop
    if type(clock) is LoopClock and loop is not None and type(loop).time is BaseEventLoop.time:
        return time.monotonic
    return clock.now


class TimelineRecorder(TurnObserver):
    """Records every agent's timeline, on `now` (the engine clock's `now`, see `fast_now`), and
    notes in `changed` the agents whose row or timeline changed, made or gone (the inspector
    empties it)."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.tracks: dict[int, AgentTrack] = {}
        self.now = now
        self.changed: set[int] = set()
        #: The events of each turn being recorded, by the turn itself: what every callback
        #: but a turn's first appends to.
        self.open: dict[Turn, Events] = {}

    def track(self, agent_id: int) -> AgentTrack:
        """The agent's track (made on first use)."""
        found = self.tracks.get(agent_id)
        if found is None:
            found = self.tracks[agent_id] = AgentTrack()
        return found

    def forget(self, agent_id: int) -> None:
        """Drop the track of an agent that is gone (and the turn it had open)."""
        track = self.tracks.pop(agent_id, None)
        if track is not None and track.open_turn is not None:
            self.open.pop(track.open_turn, None)

    def _events(self, agent: Any, turn: Turn) -> Events:
        """The events of a turn first heard of midway (it began before the recorder was
        added, or came back paused from a snapshot): the latest turn's if it is that one."""
        track = self.track(agent.agent_id)
        if track.open_turn is not None:
            self.open.pop(track.open_turn, None)
        if track.turns and track.turns[-1][0] == turn.turn_id:
            events = track.turns[-1][1]
        else:
            events = deque(maxlen=KEPT_EVENTS_PER_TURN)
            track.turns.append((turn.turn_id, events))
        self.open[turn] = events
        track.open_turn = turn
        return events

    # Each callback: the turn's events by the turn, one tuple appended, the agent noted.

    def agent_added(self, agent: Any) -> None:
        """A new row for the pages."""
        self.changed.add(agent.agent_id)

    def agent_removed(self, agent_id: int) -> None:
        """The row goes; the track with it."""
        self.forget(agent_id)
        self.changed.add(agent_id)

    def turn_started(self, agent: Any, turn: Turn) -> None:
        """Open the turn's timeline with the user's message."""
        agent_id = agent.agent_id
        track = self.tracks.get(agent_id) or self.track(agent_id)
        events = deque(
            (("turn_started", self.now(), turn.interaction.user_message),), KEPT_EVENTS_PER_TURN
        )
        if track.open_turn is not None:  # one that never ended here (let go midway)
            self.open.pop(track.open_turn, None)
        self.open[turn] = events
        track.open_turn = turn
        track.turns.append((turn.turn_id, events))
        self.changed.add(agent_id)

    def node_started(self, agent: Any, turn: Turn, node: str) -> None:
        """Light the node."""
        (self.open.get(turn) or self._events(agent, turn)).append(
            ("node_started", self.now(), node)
        )
        self.changed.add(agent.agent_id)

    def node_ended(self, agent: Any, turn: Turn, node: str, exit_route: str) -> None:
        """Note the exit the node took."""
        (self.open.get(turn) or self._events(agent, turn)).append(
            ("node_ended", self.now(), node, exit_route)
        )

    def generation_ended(self, agent: Any, turn: Turn, node: str, record: GenerationRecord) -> None:
        """The generation's tokens and times. Its values, not the record: a record whose prompt
        is still to be counted holds the whole prompt, which the timeline would keep alive for
        turns (and every collection of the garbage collector would walk). So the prompt's
        count is shown when the backend reported it or another observer had it counted."""
        (self.open.get(turn) or self._events(agent, turn)).append(
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

    # The pause, the call and the result are kept as their values, not as the engine's
    # objects: a tuple of plain values leaves the garbage collector's lists at its first
    # collection, where one holding an object would be walked again at every collection for
    # as long as the timeline keeps it.

    def tool_called(self, agent: Any, turn: Turn, event: ToolCallEvent) -> None:
        """A tool call with its arguments."""
        (self.open.get(turn) or self._events(agent, turn)).append(
            (
                "tool_call",
                self.now(),
                event.node_name,
                event.call_id,
                event.tool_name,
                event.arguments_json,
                event.disposition,
            )
        )

    def paused(self, agent: Any, turn: Turn, info: PauseInfo) -> None:
        """Where the turn paused, and what a resume must bring."""
        calls = info.pending_calls
        (self.open.get(turn) or self._events(agent, turn)).append(
            (
                "paused",
                self.now(),
                info.node_name,
                info.pending_exit,
                info.pending_target,
                info.timeout_ms,
                tuple([call.call_id for call in calls]) if calls else (),
                info.awaits_results,
            )
        )
        self.changed.add(agent.agent_id)

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """Where the turn goes, and the results sent back (read now: they are the last
        messages of the turn only until it goes on)."""
        events = self.open.get(turn) or self._events(agent, turn)
        last = events[-1] if events else None
        results = None
        if last is not None and last[0] == "paused" and last[6]:
            results = tool_results_sent(turn, last[6])
        events.append(("resumed", self.now(), node_name, resume_node, results))
        self.changed.add(agent.agent_id)

    def turn_ended(self, agent: Any, turn: Turn, result: TurnResult) -> None:
        """The final text and status."""
        events = self.open.pop(turn, None)
        if events is None:
            events = self._events(agent, turn)
            del self.open[turn]
        events.append(
            (
                "turn_ended",
                self.now(),
                result.status,
                result.text,
                result.tokens_generated,
                result.error_code,
                result.error_message,
                result.pause_count,
                result.paused_duration_s,
            )
        )
        agent_id = agent.agent_id
        track = self.tracks.get(agent_id)
        if track is not None and track.open_turn is turn:
            track.open_turn = None
        self.changed.add(agent_id)


def _status(events: Events) -> str:
    """A turn's final status from its events ('' while it is open)."""
    if events and events[-1][0] == "turn_ended":
        return str(events[-1][2].value)
    return ""


def _entries(turn_id: int, events: Events, node_type: Callable[[str], str]) -> list[dict[str, Any]]:
    """A turn's recorded events as the page's timeline shows them, with what follows from
    them: how long each node ran and each pause lasted."""
    entries = []
    node_at: float | None = None
    paused_at: float | None = None
    for event in events:
        kind, at = event[0], event[1]
        entry: dict[str, Any] = {"turn_id": turn_id, "kind": kind, "at": round(at, 6)}
        if kind == "turn_started":
            entry["message"] = event[2]
        elif kind == "node_started":
            node_at = at
            entry.update(node=event[2], node_type=node_type(event[2]))
        elif kind == "node_ended":
            seconds = None if node_at is None else at - node_at
            entry.update(node=event[2], exit_route=event[3], seconds=seconds)
        elif kind == "generation":
            node, model, prompt_tokens, tokens, first_token, seconds, error = event[2:]
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
            node, call_id, tool, arguments, disposition = event[2:]
            entry.update(
                node=node, call_id=call_id, tool=tool, arguments=arguments, disposition=disposition
            )
        elif kind == "paused":
            paused_at = at
            node, pending_exit, pending_target, timeout_ms, calls, awaits = event[2:]
            entry.update(
                node=node,
                pending_exit=pending_exit,
                pending_target=pending_target,
                timeout_ms=timeout_ms,
                pending_calls=list(calls),
                awaits_results=awaits,
            )
        elif kind == "resumed":
            paused_for = None if paused_at is None else at - paused_at
            paused_at = None
            entry.update(
                node=event[2],
                resume_node=event[3],
                paused_seconds=paused_for,
                results=event[4] or {},
            )
        elif kind == "turn_ended":
            status, text, tokens, error_code, error_message, pauses, paused_s = event[2:]
            entry.update(
                status=status.value,
                text=text,
                tokens=tokens,
                error_code=error_code,
                error_message=error_message,
                pause_count=pauses,
                paused_seconds=paused_s,
                ended_while_paused_for=None if paused_at is None else at - paused_at,
            )
        entries.append(entry)
    return entries
