"""What the inspector remembers of each agent: a timeline of its latest turns, and who changed.

`TimelineRecorder` is an engine observer, so it runs inside every turn, and does the least it
can there: each callback finds the agent's track by the turn itself (one dictionary lookup),
appends the event's kind, its time and what it was handed (the engine's own records, or a
tuple of their values) to the track's one flat list, and notes the agent as changed.
Everything else is worked out from that only when a page asks: the node an agent is in
(`AgentTrack.node_now`), how long a node ran or a pause lasted, and the timeline entries
themselves (`AgentTrack.timeline`, built once for a turn that has ended). A busy engine pays
for what a page shows, not for every event it could have shown.

Flat, because a recorder's cost is as much the memory it holds as the calls it takes: a turn
leaves no list of its own and no tuple for an event that carries one value (a node's name,
its exit), so the garbage collector has that much less to walk, and dropping the oldest turn
frees a few objects, not dozens.
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
#: amount whatever its agents do. A turn that walks many nodes is cut back, as it goes, to its
#: first event (the player's message) and its latest ones (from a node's start on): at a node's
#: start, so the few events that follow one may pass the bound until the next.
KEPT_TURNS = 8
KEPT_EVENTS_PER_TURN = 200

#: Slots of `AgentTrack.events` per event: its kind, its time, what it carries.
SLOTS = 3
_CUT_PAST = SLOTS * KEPT_EVENTS_PER_TURN


class AgentTrack:
    """What the inspector recorded of one agent: the events of its latest turns, in order.

    `events` holds them back to back, `SLOTS` slots each: the kind, the time on the engine
    clock, and what it carries: turn_started the player's message; node_started the node;
    node_ended the exit it took (the node is the one started last); the others a tuple of
    values (see the recorder's callbacks). Slots are counted from the first ever recorded:
    `dropped` of them went with the turns no longer kept, and `turns` holds each kept turn's
    id and the count of its first slot."""

    __slots__ = ("built", "dropped", "events", "open_start", "open_turn", "turns")

    def __init__(self) -> None:
        self.events: list[Any] = []
        #: The kept turns, oldest first: (turn id, count of its first slot).
        self.turns: deque[tuple[int, int]] = deque()
        self.dropped = 0
        #: The page's entries of ended turns, by turn id: built once (they get no more events).
        self.built: dict[int, list[dict[str, Any]]] = {}
        #: The agent's turn being recorded (until it ends), and where in `events` it begins.
        self.open_turn: Turn | None = None
        self.open_start = 0

    def begin(self, turn_id: int) -> None:
        """A new turn's events start here (the oldest turn goes when `KEPT_TURNS` are kept)."""
        turns = self.turns
        if len(turns) >= KEPT_TURNS:
            turns.popleft()
            gone = turns[0][1] - self.dropped
            del self.events[:gone]
            self.dropped += gone
        self.open_start = len(self.events)
        turns.append((turn_id, self.dropped + self.open_start))

    def cut(self) -> None:
        """Cut the open turn back to its first event and its latest ones, from a node's start
        on. (The open turn is the latest: no kept turn begins after it.)"""
        events = self.events
        keep = len(events) - SLOTS * (KEPT_EVENTS_PER_TURN // 2)
        while keep < len(events) and events[keep] != "node_started":
            keep += SLOTS
        del events[self.open_start + SLOTS : keep]

    def _bounds(self) -> list[tuple[int, int, int]]:
        """Each kept turn's id and where its events begin and end in `events`."""
        starts = [(turn_id, start - self.dropped) for turn_id, start in self.turns]
        ends = [start for _, start in starts[1:]] + [len(self.events)]
        return [(turn_id, start, end) for (turn_id, start), end in zip(starts, ends, strict=True)]

    def node_now(self) -> tuple[str, str]:
        """(the node the latest turn is in, '' between nodes or after the turn; the last node
        it entered), from its events."""
        events, ended = self.events, False
        first = self.turns[-1][1] - self.dropped if self.turns else len(events)
        for at in range(len(events) - SLOTS, first - 1, -SLOTS):
            kind = events[at]
            if kind == "node_started":
                node = events[at + 2]
                return ("", node) if ended else (node, node)
            if kind == "node_ended":
                ended = True
        return "", ""

    def timeline(self, node_type: Callable[[str], str]) -> list[dict[str, Any]]:
        """The kept turns as the page shows them, oldest first: each its id, its final status
        ('' while open) and its entries (`node_type(node)`: the type of a node)."""
        shown, built, events = [], {}, self.events
        for turn_id, start, end in self._bounds():
            status = ""
            if end > start and events[end - SLOTS] == "turn_ended":
                status = str(events[end - 1][0].value)
            entries = self.built.get(turn_id) if status else None
            if entries is None:
                entries = _entries(turn_id, events[start:end], node_type)
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
        #: The track of each turn being recorded, by the turn itself: what every callback but
        #: a turn's first finds its track by.
        self.open: dict[Turn, AgentTrack] = {}

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

    def _open(self, track: AgentTrack, turn: Turn) -> None:
        if track.open_turn is not None:  # one that never ended here (let go midway)
            self.open.pop(track.open_turn, None)
        self.open[turn] = track
        track.open_turn = turn

    def _midway(self, agent: Any, turn: Turn) -> AgentTrack:
        """The track of a turn first heard of midway (it began before the recorder was added,
        or came back paused from a snapshot): its events go on the latest turn's if it is
        that one."""
        track = self.track(agent.agent_id)
        if track.turns and track.turns[-1][0] == turn.turn_id:
            track.open_start = track.turns[-1][1] - track.dropped
        else:
            track.begin(turn.turn_id)
        self._open(track, turn)
        return track

    # Each callback: the track by the turn, the kind and what it carries appended, the time.

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
        track.begin(turn.turn_id)
        self._open(track, turn)
        track.events += ("turn_started", self.now(), turn.interaction.user_message)
        self.changed.add(agent_id)

    def node_started(self, agent: Any, turn: Turn, node: str) -> None:
        """Light the node."""
        track = self.open.get(turn) or self._midway(agent, turn)
        events = track.events
        if len(events) - track.open_start > _CUT_PAST:
            track.cut()
        events += ("node_started", self.now(), node)
        self.changed.add(agent.agent_id)

    def node_ended(self, agent: Any, turn: Turn, node: str, exit_route: str) -> None:
        """Note the exit the node took."""
        track = self.open.get(turn) or self._midway(agent, turn)
        track.events += ("node_ended", self.now(), exit_route)

    def generation_ended(self, agent: Any, turn: Turn, node: str, record: GenerationRecord) -> None:
        """The generation's tokens and times. Its values, not the record: a record whose prompt
        is still to be counted holds the whole prompt, which the timeline would keep alive for
        turns (and every collection of the garbage collector would walk). So the prompt's
        count is shown when the backend reported it or another observer had it counted."""
        track = self.open.get(turn) or self._midway(agent, turn)
        track.events += (
            "generation",
            self.now(),
            (
                node,
                record.model,
                record.prompt_tokens_if_counted,
                record.tokens,
                record.seconds_to_first_token,
                record.seconds,
                record.error,
            ),
        )

    # The pause, the call and the result are kept as their values, not as the engine's
    # objects: a tuple of plain values leaves the garbage collector's lists at its first
    # collection, where one holding an object would be walked again at every collection for
    # as long as the timeline keeps it.

    def tool_called(self, agent: Any, turn: Turn, event: ToolCallEvent) -> None:
        """A tool call with its arguments."""
        track = self.open.get(turn) or self._midway(agent, turn)
        track.events += (
            "tool_call",
            self.now(),
            (
                event.node_name,
                event.call_id,
                event.tool_name,
                event.arguments_json,
                event.disposition,
            ),
        )

    def paused(self, agent: Any, turn: Turn, info: PauseInfo) -> None:
        """Where the turn paused, and what a resume must bring."""
        calls = info.pending_calls
        track = self.open.get(turn) or self._midway(agent, turn)
        track.events += (
            "paused",
            self.now(),
            (
                info.node_name,
                info.pending_exit,
                info.pending_target,
                info.timeout_ms,
                tuple([call.call_id for call in calls]) if calls else (),
                info.awaits_results,
            ),
        )
        self.changed.add(agent.agent_id)

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """Where the turn goes, and the results sent back (read now: they are the last
        messages of the turn only until it goes on)."""
        track = self.open.get(turn) or self._midway(agent, turn)
        events = track.events
        results = None
        if len(events) > track.open_start and events[-SLOTS] == "paused":
            calls = events[-1][4]
            if calls:
                results = tool_results_sent(turn, calls)
        events += ("resumed", self.now(), (node_name, resume_node, results))
        self.changed.add(agent.agent_id)

    def turn_ended(self, agent: Any, turn: Turn, result: TurnResult) -> None:
        """The final text and status."""
        track = self.open.pop(turn, None)
        if track is None:
            track = self._midway(agent, turn)
            del self.open[turn]
        track.events += (
            "turn_ended",
            self.now(),
            (
                result.status,
                result.text,
                result.tokens_generated,
                result.error_code,
                result.error_message,
                result.pause_count,
                result.paused_duration_s,
            ),
        )
        track.open_turn = None
        self.changed.add(agent.agent_id)


def _entries(
    turn_id: int, events: list[Any], node_type: Callable[[str], str]
) -> list[dict[str, Any]]:
    """A turn's recorded events (`AgentTrack.events`' slots) as the page's timeline shows
    them, with what follows from them: how long each node ran and each pause lasted."""
    entries = []
    node = ""  # the node started last: the one a node_ended ends
    node_at: float | None = None
    paused_at: float | None = None
    for first in range(0, len(events), SLOTS):
        kind, at, carried = events[first : first + SLOTS]
        entry: dict[str, Any] = {"turn_id": turn_id, "kind": kind, "at": round(at, 6)}
        if kind == "turn_started":
            entry["message"] = carried
        elif kind == "node_started":
            node, node_at = carried, at
            entry.update(node=node, node_type=node_type(node))
        elif kind == "node_ended":
            seconds = None if node_at is None else at - node_at
            entry.update(node=node, exit_route=carried, seconds=seconds)
        elif kind == "generation":
            at_node, model, prompt_tokens, tokens, first_token, seconds, error = carried
            entry.update(
                node=at_node,
                model=model,
                prompt_tokens=prompt_tokens,
                tokens=tokens,
                seconds_to_first_token=first_token,
                seconds=seconds,
                error=error,
            )
        elif kind == "tool_call":
            at_node, call_id, tool, arguments, disposition = carried
            entry.update(
                node=at_node,
                call_id=call_id,
                tool=tool,
                arguments=arguments,
                disposition=disposition,
            )
        elif kind == "paused":
            paused_at = at
            at_node, pending_exit, pending_target, timeout_ms, calls, awaits = carried
            entry.update(
                node=at_node,
                pending_exit=pending_exit,
                pending_target=pending_target,
                timeout_ms=timeout_ms,
                pending_calls=list(calls),
                awaits_results=awaits,
            )
        elif kind == "resumed":
            paused_for = None if paused_at is None else at - paused_at
            paused_at = None
            at_node, resume_node, results = carried
            entry.update(
                node=at_node,
                resume_node=resume_node,
                paused_seconds=paused_for,
                results=results or {},
            )
        elif kind == "turn_ended":
            status, text, tokens, error_code, error_message, pauses, paused_s = carried
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
