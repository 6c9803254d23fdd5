"""Tool exchanges in the dialog: call and result messages, and the checks on a results batch.

Every call the model is shown is followed by its result, whatever the disposition, so later
prompts stay well-formed for the model's chat template (R-T3).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence

from .backends.base import ChatMessage
from .rejections import InvalidToolResults
from .results import PauseInfo, ToolCallEvent, ToolResult


def call_message(calls: Iterable[ToolCallEvent]) -> ChatMessage:
    """The assistant message that makes the calls; arguments are objects, as templates expect."""
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": call.call_id,
                "type": "function",
                # A copy: the host holds `call.arguments` and may edit it; the dialog must not
                # change under the model's feet.
                "function": {"name": call.tool_name, "arguments": copy.deepcopy(call.arguments)},
            }
            for call in calls
        ],
    }


def result_message(call: ToolCallEvent, content: str) -> ChatMessage:
    """The tool message that answers `call`."""
    return {
        "role": "tool",
        "tool_call_id": call.call_id,
        "name": call.tool_name,
        "content": content,
    }


def timeout_result(timeout_ms: int) -> str:
    """What the model sees for a call whose result never came."""
    return json.dumps({"error": "timeout", "detail": f"no result within {timeout_ms} ms"})


def check_batch(
    agent_id: int,
    info: PauseInfo,
    batch: Sequence[ToolResult],
    *,
    max_result_bytes: int,
    max_batch_bytes: int,
) -> dict[str, str]:
    """Validate a resume's results against the pause (R-T7); return results by call id."""
    expected = [call.call_id for call in info.pending_calls] if info.awaits_results else []
    received = [r.call_id for r in batch]
    where = f"agent {agent_id}: node '{info.node_name}'"

    def refuse(reason: str) -> InvalidToolResults:
        return InvalidToolResults(f"{where}: {reason}; the turn stays paused", expected, received)

    if not info.awaits_results:
        if batch:
            raise refuse("this pause awaits no tool results (only AwaitResult pauses take them)")
        return {}
    if not batch:
        raise refuse("an AwaitResult pause needs one result per pending call; got none")
    dupes = sorted({cid for cid in received if received.count(cid) > 1})
    if dupes:
        raise refuse(f"call id(s) {dupes} given more than once")
    unknown = sorted(set(received) - set(expected))
    if unknown:
        raise refuse(f"unknown call id(s) {unknown}")
    missing = [cid for cid in expected if cid not in received]
    if missing:
        raise refuse(f"missing result(s) for {missing}")
    total = 0
    for result in batch:
        size = len(result.result.encode("utf-8"))
        total += size
        if size > max_result_bytes:
            raise refuse(
                f"result for {result.call_id} is {size} bytes, "
                f"over the {max_result_bytes}-byte limit"
            )
    if total > max_batch_bytes:
        raise refuse(f"batch is {total} bytes, over the {max_batch_bytes}-byte limit")
    return {r.call_id: r.result for r in batch}
