"""Routing an agent's events to the host: callbacks and registered tools
(docs/reference/host.md#callbacks, docs/reference/tools.md#registered-tool-handlers).

Everything here runs on the loop that delivers the events: the engine loop when embedded, the
client's loop over the wire. A handler registered with `register_tool` runs when a pausing
ToolCall pauses and every pending call has a handler; the turn is then resumed (with the
handlers' results for AwaitResult). If that resume is refused, the batch is kept for
`retry_paused_tool_batch`. How a batch is sent is the one thing the two hosts do differently,
so it is a hook (`resume_batch`).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from ..engine.support.logs import get_logger
from ..engine.turns.results import (
    AgentListener,
    MessageEvent,
    PauseInfo,
    ToolCallEvent,
    ToolResult,
    TurnResult,
)

log = get_logger("turnloom.host")

PausedCallback = Callable[[str, str], None]
ResumedCallback = Callable[[str, str], None]
AnswerTextCallback = Callable[[str, bool, bool], None]
TurnCompleteCallback = Callable[[TurnResult], None]
ToolCallWithIdCallback = Callable[[str, str, str], None]
ToolCallEventCallback = Callable[[ToolCallEvent], None]
MessageCallback = Callable[[MessageEvent], None]
#: A registered tool: gets the call, returns the result text (used for AwaitResult only).
ToolHandler = Callable[[ToolCallEvent], "str | Awaitable[str] | Any"]
#: Resumes the paused turn plainly with a batch of results. Embedded it runs at once and raises
#: the host-facing error when refused; over the wire it returns an awaitable that does.
BatchResume = Callable[[list[ToolResult]], "Awaitable[Any] | None"]


class CallbackDispatch(AgentListener):
    """One agent's host-side callbacks and tool handlers."""

    __slots__ = (
        "_pause_seen",
        "answer_text",
        "auto_resume",
        "kept_batch",
        "message",
        "paused",
        "resume_batch",
        "resumed",
        "tool_call_event",
        "tool_call_with_id",
        "tools",
        "turn_complete",
    )

    def __init__(self, resume_batch: BatchResume | None = None) -> None:
        self.resume_batch = resume_batch
        self.paused: PausedCallback | None = None
        self.resumed: ResumedCallback | None = None
        self.answer_text: AnswerTextCallback | None = None
        self.turn_complete: TurnCompleteCallback | None = None
        self.tool_call_with_id: ToolCallWithIdCallback | None = None
        self.tool_call_event: ToolCallEventCallback | None = None
        self.message: MessageCallback | None = None
        #: Registered tool handlers by tool name; None until the first (most agents have none).
        self.tools: dict[str, ToolHandler] | None = None
        self.kept_batch: list[ToolResult] | None = None
        #: An automatic resume still waiting for its answer (over the wire): True if accepted.
        self.auto_resume: asyncio.Future[bool] | None = None
        #: Counts the pauses heard and their ends (resumed, completed): a handler's results
        #: resume only the pause they were for, not a later one (an interrupt's new turn).
        self._pause_seen = 0

    # --- events ------------------------------------------------------------------------------

    def on_paused(self, agent_id: int, info: PauseInfo, awaited: bool) -> None:
        """Call the paused callback, run registered tools, warn if nothing can resume."""
        self.kept_batch = None
        self._pause_seen += 1
        if self.paused is not None:
            self.paused(info.node_name, info.pending_exit)
        handled = self._run_tool_handlers(info)
        listens_for_calls = bool(info.pending_calls) and (
            self.tool_call_with_id is not None or self.tool_call_event is not None
        )
        if not (self.paused or handled or awaited or listens_for_calls):
            log.warning(
                "pause.unattended",
                agent_id=agent_id,
                node=info.node_name,
                hint="nothing here can resume this pause: no paused callback, no tool handler "
                "for its calls, no caller waiting; it will wait until resumed, cancelled or "
                "timed out",
            )

    def on_resumed(self, agent_id: int, node_name: str, resume_node: str) -> None:
        """Call the resumed callback."""
        self._pause_seen += 1
        if self.resumed is not None:
            self.resumed(node_name, resume_node)

    def on_answer_text(self, agent_id: int, text: str, is_delta: bool, is_final: bool) -> None:
        """Call the answer-text callback."""
        if self.answer_text is not None:
            self.answer_text(text, is_delta, is_final)

    def on_tool_call(self, agent_id: int, event: ToolCallEvent) -> None:
        """Call the tool-call callbacks."""
        if self.tool_call_with_id is not None:
            self.tool_call_with_id(event.call_id, event.tool_name, event.arguments_json)
        if self.tool_call_event is not None:
            self.tool_call_event(event)

    def on_turn_complete(self, agent_id: int, result: TurnResult) -> None:
        """Drop any kept batch and call the turn-complete callback."""
        self.kept_batch = None
        self._pause_seen += 1
        if self.turn_complete is not None:
            self.turn_complete(result)

    @property
    def hears_messages(self) -> bool:  # type: ignore[override]
        """Only when the host set a message callback."""
        return self.message is not None

    def on_message(self, agent_id: int, event: MessageEvent) -> None:
        """Call the message callback."""
        if self.message is not None:
            self.message(event)

    # --- registered tools --------------------------------------------------------------------

    def _run_tool_handlers(self, info: PauseInfo) -> bool:
        calls, tools = info.pending_calls, self.tools
        if not calls or tools is None or not all(call.tool_name in tools for call in calls):
            return False
        try:
            outputs = [tools[call.tool_name](call) for call in calls]
        except Exception:
            log.exception("tool_handler.failed", node=info.node_name)
            return True
        if any(inspect.isawaitable(out) for out in outputs):
            task = self._finish_async(info, outputs, self._pause_seen)
            asyncio.get_running_loop().create_task(task)
        else:
            self._auto_resume(info, outputs)
        return True

    async def _finish_async(self, info: PauseInfo, outputs: list[Any], pause: int) -> None:
        try:
            done = [await out if inspect.isawaitable(out) else out for out in outputs]
        except Exception:
            log.exception("tool_handler.failed", node=info.node_name)
            return
        if pause != self._pause_seen:  # that pause ended meanwhile (resumed, cancelled)
            log.info("tool_handler.pause_ended", node=info.node_name)
            return
        self._auto_resume(info, done)

    def _auto_resume(self, info: PauseInfo, outputs: list[Any]) -> None:
        # Pause / PauseAndAcknowledge handlers run for their side effects only: sending their
        # return values would be refused (3016).
        batch = (
            [
                ToolResult(call.call_id, out)
                for call, out in zip(info.pending_calls, outputs, strict=True)
            ]
            if info.awaits_results
            else []
        )
        self.kept_batch = batch
        assert self.resume_batch is not None
        try:
            outcome = self.resume_batch(batch)
        except Exception as error:
            log.warning("tool_batch.resume_refused", node=info.node_name, error=str(error))
            return
        if outcome is None:
            self.drop_batch(batch)
        else:
            self.auto_resume = asyncio.ensure_future(self._answered(info, batch, outcome))

    async def _answered(self, info: PauseInfo, batch: list[ToolResult], outcome: Any) -> bool:
        try:
            await outcome
        except Exception as error:
            log.warning("tool_batch.resume_refused", node=info.node_name, error=str(error))
            return False
        self.drop_batch(batch)
        return True

    def drop_batch(self, batch: list[ToolResult]) -> None:
        """Forget `batch` once a resume carrying it was accepted (not a newer one)."""
        if self.kept_batch is batch:
            self.kept_batch = None

    def kept(self) -> list[ToolResult]:
        """The kept batch (RuntimeError when there is none)."""
        if self.kept_batch is None:
            raise RuntimeError("no paused tool batch is kept; nothing to retry")
        return self.kept_batch


def checked(setter: str, callback: Any, params: tuple[str, ...]) -> Any:
    """`callback` if it can be called with `params` positionally (or None), else TypeError.

    Checked when it is set: a callback with the wrong signature would otherwise raise inside
    the engine at every event, where it can only be logged. A callable without an inspectable
    signature (some builtins) is taken on trust.
    """
    if callback is None:
        return None
    if not callable(callback):
        raise TypeError(
            f"{setter}: the callback must be callable or None, got {type(callback).__name__}"
        )
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):
        return callback
    try:
        signature.bind(*params)
    except TypeError as exc:
        name = getattr(callback, "__qualname__", type(callback).__name__)
        raise TypeError(
            f"{setter}: the callback is called as callback({', '.join(params)}), but "
            f"{str(name)[:80]}{str(signature)[:200]} cannot take that ({exc})"
        ) from None
    return callback


class DispatchFace:
    """The callback setters and tool registry of every agent face (embedded, remote, blocking):
    written once here, they all route through the face's `CallbackDispatch`."""

    __slots__ = ()
    #: The agent's callbacks and registered tools.
    dispatch: CallbackDispatch

    def set_on_paused(self, callback: PausedCallback | None) -> None:
        """`callback(node_name, pending_exit)` when a turn pauses."""
        self.dispatch.paused = checked("set_on_paused", callback, ("node_name", "pending_exit"))

    def set_on_resumed(self, callback: ResumedCallback | None) -> None:
        """`callback(node_name, resume_node)` when a paused turn goes on."""
        self.dispatch.resumed = checked("set_on_resumed", callback, ("node_name", "resume_node"))

    def set_on_answer_text(self, callback: AnswerTextCallback | None) -> None:
        """`callback(text, is_delta, is_final)` for each piece of reply text."""
        self.dispatch.answer_text = checked(
            "set_on_answer_text", callback, ("text", "is_delta", "is_final")
        )

    def set_on_turn_complete(self, callback: TurnCompleteCallback | None) -> None:
        """`callback(result)` once per turn, when it ends."""
        self.dispatch.turn_complete = checked("set_on_turn_complete", callback, ("result",))

    def set_on_tool_call_with_id(self, callback: ToolCallWithIdCallback | None) -> None:
        """`callback(call_id, tool_name, arguments_json)` for each notified tool call."""
        self.dispatch.tool_call_with_id = checked(
            "set_on_tool_call_with_id", callback, ("call_id", "tool_name", "arguments_json")
        )

    def set_on_tool_call_event(self, callback: ToolCallEventCallback | None) -> None:
        """`callback(ToolCallEvent)` for each notified tool call."""
        self.dispatch.tool_call_event = checked("set_on_tool_call_event", callback, ("event",))

    def set_on_message(self, callback: MessageCallback | None) -> None:
        """`callback(MessageEvent)` when a message's fate is decided: started, queued,
        interrupted, merged or dropped (docs/reference/turns.md#input-policies)."""
        self.dispatch.message = checked("set_on_message", callback, ("event",))

    def register_tool(self, name: str, handler: ToolHandler | None) -> None:
        """Run `handler(call)` when a pausing ToolCall pauses on `name`, then resume.

        For AwaitResult the handlers' return values become the results; for Pause and
        PauseAndAcknowledge they run for their side effects. `None` unregisters. Handlers run
        on the loop the agent's events arrive on (a coroutine function's result is awaited
        there).
        """
        if not isinstance(name, str):
            raise TypeError(f"register_tool: name must be a string, got {type(name).__name__}")
        dispatch = self.dispatch
        if handler is None:
            if dispatch.tools is not None:
                dispatch.tools.pop(name, None)
            return
        checked_handler = checked("register_tool", handler, ("call",))
        if dispatch.tools is None:
            dispatch.tools = {}
        dispatch.tools[name] = checked_handler

    def has_paused_tool_batch(self) -> bool:
        """Whether an automatic resume with registered tools' results was refused and kept."""
        return self.dispatch.kept_batch is not None
