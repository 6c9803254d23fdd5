"""What a turn reports to the host: pauses, steps, completions, and why a turn failed."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class TurnStatus(enum.StrEnum):
    """How a turn ended (docs/reference/streaming.md#completion-fields)."""

    SUCCESS = "success"
    ERROR = "error"
    CANCELLED = "cancelled"
    PAUSE_TIMED_OUT = "pause_timed_out"


class TurnFailure(Exception):
    """A turn-local failure: the turn ends with status `error`, the agent stays usable."""


class InferenceFailed(TurnFailure):
    """The backend raised while generating."""


class InferenceTimeout(TurnFailure):
    """A generation outlived its node's time budget."""


class MaxStepsExceeded(TurnFailure):
    """The turn walked more nodes than `max_steps_per_turn` allows (4003)."""


@dataclass(frozen=True, slots=True)
class ToolCallEvent:
    """A detected call of a declared tool, as the host sees it
    (docs/reference/tools.md#tool-call-events)."""

    call_id: str
    tool_name: str
    #: The arguments as a JSON object whose values are all strings.
    arguments_json: str
    node_name: str
    #: The node's disposition (a `ToolCallDisposition` value).
    disposition: str
    #: The arguments coerced to the tool's declared parameter types.
    arguments: dict[str, Any] = field(default_factory=dict)
    #: The arguments the player did not give, whose values are defaults (the `score`
    #: decision's count when no number is said): the game may ask rather than trust them.
    unread_arguments: tuple[str, ...] = ()


class MessageFate(enum.StrEnum):
    """What became of a player message (docs/reference/turns.md#input-policies)."""

    #: It started turn `turn_id`: the agent was idle, or the message waited in the queue.
    STARTED = "started"
    #: The agent's turn was open: it waits in the queue (`enqueue` policy).
    QUEUED = "queued"
    #: It cancelled the open turn `replaced_turn_id` and started turn `turn_id`.
    INTERRUPTED = "interrupted"
    #: As interrupted, and turn `turn_id`'s user message holds both messages.
    MERGED = "merged"
    #: It was waiting in the queue when the agent was destroyed: it never ran.
    DROPPED = "dropped"


@dataclass(frozen=True, slots=True)
class MessageEvent:
    """One player message's fate, reported when it is decided (`AgentListener.on_message`)."""

    text: str
    fate: MessageFate
    #: The turn the message started (0 while it is queued, or when it was dropped).
    turn_id: int = 0
    #: The open turn it cancelled (interrupted, merged), else 0.
    replaced_turn_id: int = 0
    #: How many messages wait in the queue after this event.
    queued: int = 0
    #: Whether the message waited in the queue (or behind a cancelled turn) before this event.
    waited: bool = False


@dataclass(frozen=True, slots=True)
class PauseInfo:
    """Where a turn is paused: the node that paused and the exit it would take
    (docs/reference/pauses.md#when-the-pause-happens)."""

    node_name: str
    #: The exit route a plain resume takes, e.g. "default" or "tool_called".
    pending_exit: str
    #: The node that route leads to ("" = END).
    pending_target: str
    #: The pause's deadline budget in ms (0 = waits forever).
    timeout_ms: int = 0
    #: The calls detected by the ToolCall node that paused (empty for a Pause node).
    pending_calls: tuple[ToolCallEvent, ...] = ()
    #: True when the resume must carry one result per pending call (AwaitResult).
    awaits_results: bool = False


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The one completion of a turn (docs/reference/streaming.md#completion-fields)."""

    turn_id: int
    status: TurnStatus
    text: str
    tokens_generated: int
    #: The error code for status `error` (4001, 4002, 4003), else None.
    error_code: int | None = None
    error_message: str = ""
    paused_duration_s: float = 0.0
    pause_count: int = 0
    #: Only when the agent was created with `enable_diagnostics=True`.
    debug_info: dict[str, Any] | None = None

    def as_fields(self) -> dict[str, Any]:
        """The result as plain data, its status as its string value: what a snapshot keeps
        and a `TurnComplete` frame carries."""
        return {
            "turn_id": self.turn_id,
            "status": self.status.value,
            "text": self.text,
            "tokens_generated": self.tokens_generated,
            "error_code": self.error_code,
            "error_message": self.error_message,
            "paused_duration_s": self.paused_duration_s,
            "pause_count": self.pause_count,
            "debug_info": self.debug_info,
        }


@dataclass(frozen=True, slots=True)
class Step:
    """Where a turn stands after a call returns: paused (`pause`) or finished (`result`)."""

    pause: PauseInfo | None = None
    result: TurnResult | None = field(default=None)

    @property
    def paused(self) -> bool:
        """True while the turn waits for a resume."""
        return self.pause is not None

    @property
    def final(self) -> TurnResult:
        """The finished turn's `result`, typed without None (RuntimeError if it is paused)."""
        # `result` is Optional, so a type checker flags `step.result.text` even after a
        # `while step.paused` loop; this is the narrowing a checker cannot do itself.
        if self.result is None:
            where = f" at '{self.pause.node_name}'" if self.pause is not None else ""
            raise RuntimeError(f"the turn is paused{where}, not finished: resume it first")
        return self.result


class AgentListener:
    """Receives an agent's events on the engine loop. The host API and the server implement it.

    Methods must not block; exceptions they raise are logged and otherwise ignored.
    """

    #: Whether `on_message` is worth calling for a message that simply starts a turn (the
    #: agent makes no event for one when it is not: that is every turn of most agents).
    hears_messages: bool = True

    def on_paused(self, agent_id: int, info: PauseInfo, awaited: bool) -> None:
        """The turn paused; `awaited` when a caller is waiting for this step."""

    def on_resumed(self, agent_id: int, node_name: str, resume_node: str) -> None:
        """A paused turn was resumed, plainly ('' resume_node), by jump, or by timeout."""

    def on_answer_text(self, agent_id: int, text: str, is_delta: bool, is_final: bool) -> None:
        """A chunk of reply text (docs/reference/streaming.md#answer-text-chunks)."""

    def on_tool_call(self, agent_id: int, event: ToolCallEvent) -> None:
        """A ToolCall node with a notifying disposition detected a call."""

    def on_turn_complete(self, agent_id: int, result: TurnResult) -> None:
        """The turn reached a terminal state (exactly once per turn)."""

    def on_message(self, agent_id: int, event: MessageEvent) -> None:
        """What became of a player message: started, queued, interrupted, merged, dropped."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The host's result for one tool call, echoing the call's id."""

    call_id: str
    result: str
