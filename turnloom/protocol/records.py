"""The engine's result records as plain wire maps and back: tool calls, pauses, completions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.durable.store.slots import SlotInfo
from ..engine.inference.info import ModelInfo
from ..engine.turns.results import (
    MessageEvent,
    MessageFate,
    PauseInfo,
    ToolCallEvent,
    ToolResult,
    TurnResult,
    TurnStatus,
)


def tool_call_to_wire(event: ToolCallEvent) -> dict[str, Any]:
    """A tool-call event as a map (docs/reference/tools.md#tool-call-events)."""
    wire: dict[str, Any] = {
        "call_id": event.call_id,
        "tool_name": event.tool_name,
        "arguments_json": event.arguments_json,
        "node_name": event.node_name,
        "disposition": event.disposition,
        "arguments": event.arguments,
    }
    if event.unread_arguments:  # only then: clients that do not know the key see no change
        wire["unread_arguments"] = list(event.unread_arguments)
    return wire


def tool_call_from_wire(data: Mapping[str, Any]) -> ToolCallEvent:
    """The event a `tool_call_to_wire` map describes."""
    return ToolCallEvent(
        call_id=data["call_id"],
        tool_name=data["tool_name"],
        arguments_json=data["arguments_json"],
        node_name=data["node_name"],
        disposition=data["disposition"],
        arguments=dict(data.get("arguments") or {}),
        unread_arguments=tuple(str(name) for name in data.get("unread_arguments") or ()),
    )


def message_to_wire(event: MessageEvent) -> dict[str, Any]:
    """A message's fate as the fields of a `NodeEvent` (event "message")."""
    return {
        "turn_id": event.turn_id or None,
        "text": event.text,
        "fate": event.fate.value,
        "replaced_turn_id": event.replaced_turn_id or None,
        "queued": event.queued,
        "waited": event.waited,
    }


def message_from_wire(data: Mapping[str, Any]) -> MessageEvent:
    """The event a `message_to_wire` map describes."""
    return MessageEvent(
        text=data["text"],
        fate=MessageFate(data["fate"]),
        turn_id=data.get("turn_id") or 0,
        replaced_turn_id=data.get("replaced_turn_id") or 0,
        queued=int(data.get("queued") or 0),
        waited=bool(data.get("waited")),
    )


def slot_to_wire(info: SlotInfo) -> dict[str, Any]:
    """A save slot's description as a map."""
    return {
        "slot": info.slot,
        "agent_id": info.agent_id,
        "saved_at": info.saved_at,
        "size": info.size,
    }


def slot_from_wire(data: Mapping[str, Any]) -> SlotInfo:
    """The description a `slot_to_wire` map holds."""
    return SlotInfo(data["slot"], data["agent_id"], float(data["saved_at"]), data["size"])


def pause_to_wire(info: PauseInfo) -> dict[str, Any]:
    """A pause as the fields of a `NodeEvent` (event "paused")."""
    return {
        "node_name": info.node_name,
        "pending_exit": info.pending_exit,
        "pending_target": info.pending_target,
        "timeout_ms": info.timeout_ms,
        "pending_calls": [tool_call_to_wire(call) for call in info.pending_calls],
        "awaits_results": info.awaits_results,
    }


def pause_from_wire(data: Mapping[str, Any]) -> PauseInfo:
    """The pause a `pause_to_wire` map describes."""
    return PauseInfo(
        node_name=data["node_name"],
        pending_exit=data["pending_exit"],
        pending_target=data["pending_target"],
        timeout_ms=data.get("timeout_ms", 0),
        pending_calls=tuple(tool_call_from_wire(c) for c in data.get("pending_calls") or ()),
        awaits_results=bool(data.get("awaits_results", False)),
    )


def result_to_wire(result: TurnResult) -> dict[str, Any]:
    """A completion as the fields of a `TurnComplete` frame
    (docs/reference/streaming.md#completion-fields)."""
    return result.as_fields()


def result_from_wire(data: Mapping[str, Any]) -> TurnResult:
    """The completion a `result_to_wire` map describes."""
    return TurnResult(
        turn_id=data["turn_id"],
        status=TurnStatus(data["status"]),
        text=data["text"],
        tokens_generated=data["tokens_generated"],
        error_code=data.get("error_code"),
        error_message=data.get("error_message", ""),
        paused_duration_s=data.get("paused_duration_s", 0.0),
        pause_count=data.get("pause_count", 0),
        debug_info=data.get("debug_info"),
    )


def tool_results_to_wire(batch: list[ToolResult]) -> list[dict[str, str]]:
    """A results batch as `[{call_id, result}]`."""
    return [{"call_id": r.call_id, "result": r.result} for r in batch]


def model_info_to_wire(info: ModelInfo) -> dict[str, Any]:
    """One item of `ModelListResponse.models`."""
    return {
        "name": info.name,
        "renders_tools": info.renders_tools,
        "tool_support_error": info.tool_support_error,
        "tool_call_family": info.tool_call_family,
        "context_size": info.context_size,
    }


def model_info_from_wire(data: Mapping[str, Any]) -> ModelInfo:
    """A `ModelListResponse` item back into a `ModelInfo`."""
    return ModelInfo(
        name=data["name"],
        renders_tools=data["renders_tools"],
        tool_support_error=data.get("tool_support_error", ""),
        tool_call_family=data.get("tool_call_family", ""),
        context_size=data.get("context_size"),
    )
