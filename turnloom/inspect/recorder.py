"""What the inspector remembers of each agent: the logs of its latest turns, and who changed.

`TimelineRecorder` is an engine observer that reads turn logs (`TurnObserver.reads_turn_logs`):
while it is added, every turn keeps its own log of what it does, which the engine fills where
each event happens with a list append and no call; the recorder is called only where a turn
starts or resumes, to keep its log among the agent's latest turns and note the agent as
changed (or walking again). Everything else is worked out from the logs only when a page
asks: the node an agent is in (`AgentTrack.node_now`), how long a node ran or a pause lasted,
the timeline entries themselves (`AgentTrack.timeline`, built once for a turn that has ended),
and which walking turns moved since the pages last heard (`TimelineRecorder.take_changes`). A
busy engine pays for what a page shows, not for every event it could have shown.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from ..engine.turns.observers import TurnObserver
from ..engine.turns.turn import LOG_SLOTS, Turn, paused_log_values
from ..states import TurnState

#: The events after which a turn's log stays as it is until the turn resumes (or for good).
_STOPPED = frozenset({"paused", "turn_ended"})

#: Turns of history kept per agent: a long-running game keeps a bounded amount whatever its
#: agents do (a turn's own log is bounded too: `LOG_KEPT_EVENTS`).
KEPT_TURNS = 8


class AgentTrack:
    """What the inspector recorded of one agent: the logs of its latest turns, oldest first.

    A log holds a turn's events back to back, `LOG_SLOTS` items each: the kind, the time on
    the engine clock, and what it carries (`TurnObserver.reads_turn_logs` says what)."""

    __slots__ = ("built", "turns")

    def __init__(self) -> None:
        #: The kept turns, oldest first: (turn id, its log). The log of an ended turn is made
        #: a tuple when the next one starts: a tuple of plain values leaves the garbage
        #: collector's lists, so a long game's timelines are not walked at every collection.
        self.turns: deque[tuple[int, Sequence[Any]]] = deque(maxlen=KEPT_TURNS)
        #: The page's entries of ended turns, by turn id: built once (they get no more events).
        self.built: dict[int, list[dict[str, Any]]] = {}

    def keep(self, turn: Turn, log: Sequence[Any]) -> None:
        """Keep `turn`'s log as the latest (unless it is already)."""
        if not self.turns or self.turns[-1][0] != turn.turn_id:
            self.turns.append((turn.turn_id, log))

    def node_now(self) -> tuple[str, str]:
        """(the node the latest turn is in, '' between nodes or after the turn; the last node
        it entered), from its log."""
        if not self.turns:
            return "", ""
        events, ended = self.turns[-1][1], False
        for at in range(len(events) - LOG_SLOTS, -1, -LOG_SLOTS):
            kind = events[at]
            if kind == "node_started":
                node = events[at + 2]
                return ("", node) if ended else (node, node)
            if kind == "node_ended" or kind == "paused":  # a pause ends its node
                ended = True
        return "", ""

    def timeline(self, node_type: Callable[[str], str]) -> list[dict[str, Any]]:
        """The kept turns as the page shows them, oldest first: each its id, its final status
        ('' while open) and its entries (`node_type(node)`: the type of a node)."""
        shown, built = [], {}
        for turn_id, events in self.turns:
            status = ""
            if events and events[-LOG_SLOTS] == "turn_ended":
                status = events[-1][0]
            entries = self.built.get(turn_id) if status else None
            if entries is None:
                entries = _entries(turn_id, events, node_type)
            if status:
                built[turn_id] = entries
            shown.append({"turn_id": turn_id, "status": status, "events": entries})
            if events and events[1] is None:  # see `_log_begun_unseen`
                shown[-1]["before_inspector"] = True
        self.built = built  # those of turns no longer kept go
        return shown


class TimelineRecorder(TurnObserver):
    """Keeps every agent's latest turn logs (`tracks`), and notes in `changed` the agents whose
    turn started, or that were made or went; `take_changes` adds those whose walking turn
    logged something since it was last asked."""

    reads_turn_logs = True

    def __init__(self) -> None:
        self.tracks: dict[int, AgentTrack] = {}
        self.changed: set[int] = set()
        #: The turns walking now (not paused) by agent id, and the length of each one's log
        #: when `take_changes` last looked: a parked turn costs the page's ticks nothing.
        self.walking: dict[int, Turn] = {}
        self._seen: dict[int, int] = {}

    def attach(self, engine: Any) -> None:
        """Watch `engine` (its core) from now on; its turns already open log from now on."""
        engine.observers.append(self)
        for agent in list(engine.agents.values()):
            self.agent_added(agent)

    def detach(self, engine: Any) -> None:
        """Stop watching `engine`; if no other observer reads turn logs, its open turns stop
        keeping theirs."""
        observers = engine.observers
        if self in observers:
            observers.remove(self)
            if not observers.keep_logs:
                for agent in engine.agents.values():
                    agent.turn.log = None

    def track(self, agent_id: int) -> AgentTrack:
        """The agent's track (made on first use)."""
        found = self.tracks.get(agent_id)
        if found is None:
            found = self.tracks[agent_id] = AgentTrack()
        return found

    def forget(self, agent_id: int) -> None:
        """Drop the track of an agent that is gone (and the turn it had open)."""
        self.tracks.pop(agent_id, None)
        self.walking.pop(agent_id, None)
        self._seen.pop(agent_id, None)

    def take_changes(self) -> set[int]:
        """The agents changed since the last call: those noted in `changed`, and those whose
        walking turn logged an event since (entered a node, generated, called a tool, paused
        or ended: a turn found paused or ended is no longer looked at, until it resumes)."""
        changed, self.changed = self.changed, set()
        seen, stopped = self._seen, []
        for agent_id, turn in self.walking.items():
            log = turn.log
            if log is None:  # let go by a recorder detached since
                stopped.append(agent_id)
            elif seen.get(agent_id) != len(log):
                seen[agent_id] = len(log)
                changed.add(agent_id)
                if log and log[-LOG_SLOTS] in _STOPPED:
                    stopped.append(agent_id)
        for agent_id in stopped:
            del self.walking[agent_id]
            seen.pop(agent_id, None)
        return changed

    def agent_added(self, agent: Any) -> None:
        """A new row for the pages; a turn it has open (begun before the recorder was added,
        or paused in a snapshot) keeps a log from now on."""
        agent_id = agent.agent_id
        self.changed.add(agent_id)
        turn = agent.turn
        if turn.state is not TurnState.IDLE:
            if turn.log is None:
                turn.log = _log_begun_unseen(turn)
            self.track(agent_id).keep(turn, turn.log)
            if turn.pause is None:
                self.walking[agent_id] = turn

    def agent_removed(self, agent_id: int) -> None:
        """The row goes; the track with it."""
        self.forget(agent_id)
        self.changed.add(agent_id)

    def turn_started(self, agent: Any, turn: Turn) -> None:
        """Keep the turn's log (which begins with the player's message)."""
        agent_id = agent.agent_id
        log = turn.log
        if log is None:  # the recorder came after the turn began, before its first node
            log = turn.log = []
        turns = (self.tracks.get(agent_id) or self.track(agent_id)).turns
        if turns:  # the agent's previous turn has ended: its log is final
            ended_id, ended = turns[-1]
            if type(ended) is list:
                turns[-1] = (ended_id, tuple(ended))
        turns.append((turn.turn_id, log))
        # What the ticks saw of its previous turn may stay: the agent is in `changed` now,
        # and the next tick looks at this turn's log and notes its length.
        self.walking[agent_id] = turn
        self.changed.add(agent_id)

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """The turn walks again: the ticks look at its log again."""
        if turn.log is not None:
            self.walking[agent.agent_id] = turn


def _log_begun_unseen(turn: Turn) -> list[Any]:
    """The log of a turn that began before the recorder watched: what the turn itself still
    says (its message, its pause), so a late page is not left blank; its start has no time."""
    log: list[Any] = ["turn_started", None, turn.interaction.user_message]
    pause = turn.pause
    if pause is not None:
        log += ("paused", pause.started_at, paused_log_values(pause.info))
    return log


def _entries(
    turn_id: int, events: Sequence[Any], node_type: Callable[[str], str]
) -> list[dict[str, Any]]:
    """A turn's log (`LOG_SLOTS` items per event) as the page's timeline shows it, with what
    follows from it: how long each node ran and each pause lasted."""
    entries = []
    node = ""  # the node started last: the one a node_ended ends
    node_at: float | None = None
    open_node = False  # whether that node has not ended yet
    paused_at: float | None = None
    for first in range(0, len(events), LOG_SLOTS):
        kind, at, carried = events[first : first + LOG_SLOTS]
        entry: dict[str, Any] = {
            "turn_id": turn_id,
            "kind": kind,
            "at": None if at is None else round(at, 6),
        }
        if kind == "turn_started":
            entry["message"] = carried
        elif kind == "node_started":
            node, node_at, open_node = carried, at, True
            entry.update(node=node, node_type=node_type(node))
        elif kind == "node_ended":
            seconds = None if node_at is None else at - node_at
            entry.update(node=node, exit_route=carried, seconds=seconds)
            open_node = False
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
            if open_node and at_node == node:  # the node that paused ended here, by this exit
                seconds = None if node_at is None else at - node_at
                ended = {"turn_id": turn_id, "kind": "node_ended", "at": entry["at"]}
                ended.update(node=node, exit_route=pending_exit, seconds=seconds)
                entries.append(ended)
                open_node = False
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
                status=status,
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
