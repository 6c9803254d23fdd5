"""Tool exchanges in the dialog: call and result messages, and the checks on a results batch.

Every call the model is shown is followed by its result, whatever the disposition, so later
prompts stay well-formed for the model's chat template
(docs/reference/tools.md#every-call-gets-its-result).
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..inference.base import ChatMessage
from ..support.guards import brief, some
from ..support.rejections import InvalidToolResults
from .results import PauseInfo, ToolCallEvent, ToolResult

#: Most results one resume may carry. A batch names each pending call
#: once, so a valid batch is as long as its pause's calls; anything longer is refused (3016)
#: before a single item is read, so a huge batch costs its sender and nobody else.
MAX_TOOL_RESULTS_PER_BATCH = 4096


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


def _result_text(value: Any) -> str:
    # Results reach the model as text; structured values are sent as JSON, not Python reprs.
    return value if isinstance(value, str) else json.dumps(value)


def _one_result(where: str, index: int, item: Any) -> ToolResult:
    call_id: Any
    if isinstance(item, ToolResult):
        call_id, value = item.call_id, item.result
    elif isinstance(item, Mapping):
        call_id, value = item.get("call_id"), item.get("result", "")
    elif isinstance(item, tuple | list) and len(item) == 2:
        call_id, value = item
    else:
        raise InvalidToolResults(
            f"{where}: tool_results[{index}] must be a ToolResult, a {{call_id, result}} map or "
            f"a (call_id, result) pair, got {brief(item)}"
        )
    if not isinstance(call_id, str):
        raise InvalidToolResults(
            f"{where}: tool_results[{index}]: call_id must be a string, "
            f"got {type(call_id).__name__} {brief(call_id)}"
        )
    try:
        return ToolResult(call_id, _result_text(value))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidToolResults(
            f"{where}: tool_results[{index}] (call {brief(call_id)}): the result is neither a "
            f"string nor JSON-encodable ({type(exc).__name__}: {brief(str(exc))})"
        ) from None


def normalize_tool_results(items: Any, where: str = "resume") -> list[ToolResult]:
    """The results of a resume as `ToolResult`s, from `ToolResult`s, `(call_id, result)` pairs
    or `{call_id, result}` maps (a non-string result is JSON-encoded).

    Only the batch's shape is checked here (3016): a sequence of at most
    `MAX_TOOL_RESULTS_PER_BATCH` well-formed items, each with a string call id. Whether it fits
    the pause is `check_batch`'s business. `where` starts the messages.
    """
    if items is None or (type(items) is tuple and not items):  # a plain resume: no ABC check
        return []
    if not isinstance(items, Sequence) or isinstance(items, str | bytes | bytearray):
        # A string would otherwise be taken one character per result.
        raise InvalidToolResults(
            f"{where}: tool_results must be a list of results, got {type(items).__name__}"
        )
    if len(items) > MAX_TOOL_RESULTS_PER_BATCH:
        raise InvalidToolResults(
            f"{where}: tool_results has {len(items)} results, over the limit of "
            f"{MAX_TOOL_RESULTS_PER_BATCH} per batch"
        )
    return [_one_result(where, index, item) for index, item in enumerate(items)]


def check_batch(
    agent_id: int,
    info: PauseInfo,
    batch: Sequence[ToolResult],
    *,
    max_result_bytes: int,
    max_batch_bytes: int,
) -> dict[str, str]:
    """Validate a resume's results against the pause (docs/reference/tools.md#tool-results-batches);
    return results by call id.

    Linear in the batch and the pending calls: a batch is refused in time proportional to its
    size, whatever it holds.
    """
    if not batch and not info.awaits_results:
        return {}  # a plain resume of a plain pause, the common case
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
    counts = Counter(received)
    dupes = sorted(cid for cid, count in counts.items() if count > 1)
    if dupes:
        raise refuse(f"call id(s) {some(dupes)} given more than once")
    unknown = sorted(set(counts).difference(expected))
    if unknown:
        raise refuse(f"unknown call id(s) {some(unknown)}")
    missing = [cid for cid in expected if cid not in counts]
    if missing:
        raise refuse(f"missing result(s) for {some(missing)}")
    total = 0
    for result in batch:
        try:
            size = len(result.result.encode("utf-8"))
        except UnicodeEncodeError:
            raise refuse(f"result for {result.call_id} is not valid UTF-8 text") from None
        total += size
        if size > max_result_bytes:
            raise refuse(
                f"result for {result.call_id} is {size} bytes, "
                f"over the {max_result_bytes}-byte limit"
            )
    if total > max_batch_bytes:
        raise refuse(f"batch is {total} bytes, over the {max_batch_bytes}-byte limit")
    return {r.call_id: r.result for r in batch}
