"""The ToolCall node: offer tools through the model's template, detect calls, apply the
disposition (docs/reference/tools.md).

The call is found one of two ways (`decision`): parsed from what the model generated, or
chosen by likelihood (`tool_decision`, for models too small to write calls). Both end in a
`ParseOutcome`, so events, call ids, dispositions and pauses are one path after it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...graph.params import Placement, ToolCallDisposition, ToolCallMode, ToolCallParams
from ...inference.base import GenerationRequest
from ...tools.arguments import arguments_as_strings, coerce_arguments
from ...tools.parsing import ParseOutcome, parse_tool_calls
from ..dialog.history import fit_history
from ..dialog.projection import Interaction, project_chat
from ..exchanges import call_message, result_message
from ..results import ToolCallEvent
from .base import NodeContext, NodeOutcome, generate_within_budget
from .score.decision import ScoreDecision, decide_by_score, resolve_decision


async def run_tool_call(ctx: NodeContext, params: ToolCallParams) -> NodeOutcome:
    """Generate with the node's tools; exit `tool_called` if a declared tool was called."""

    def request(
        dialog: Sequence[Interaction], tools: list[dict[str, Any]] | None = None
    ) -> GenerationRequest:
        messages = project_chat(
            dialog,
            ctx.interaction,
            system_prompt=params.system_prompt,
            prompt_text=ctx.interaction.user_message,
            placement=Placement.InPlaceOfUser,
        )
        return GenerationRequest(messages, params.sampling, tools, agent_id=ctx.agent_id)

    backend = ctx.backend(params)
    history: dict[str, Any] | None = None
    scored: ScoreDecision | None = None
    decision, fallback = resolve_decision(params.decision, backend, params.tools)
    if decision == "score":
        meter = ctx.meter
        if meter is not None:  # scoring is an inference too (it generates no tokens)
            meter.admit(ctx.agent_id)
        # The decision's outcome has the parser's shape: from here on both ways are one path.
        scored = await decide_by_score(
            backend, params.tools, ctx.interaction.user_message, ctx.agent_id, dialog=ctx.dialog
        )
        parsed = scored.outcome
        tokens = 0
        if not parsed.calls and params.mode is ToolCallMode.CallOrAnswer:
            # Nothing was generated to answer with: the answer is a plain reply (no tools
            # offered, so no call to drop; any markup it writes is dropped all the same).
            answer, history = await fit_history(
                backend, params.history, ctx.dialog, ctx.node_state(), request
            )
            reply = await generate_within_budget(ctx, backend, answer)
            ctx.add_tokens(reply.tokens)
            tokens = reply.tokens
            text = parse_tool_calls(reply.text, backend.tool_call_family()).residual_text
            parsed = ParseOutcome((), text, ())
    else:
        tools = [tool.json_schema() for tool in params.tools]
        offer, history = await fit_history(
            backend,
            params.history,
            ctx.dialog,
            ctx.node_state(),
            lambda dialog: request(dialog, tools),
        )
        generated = await generate_within_budget(ctx, backend, offer)
        ctx.add_tokens(generated.tokens)
        tokens = generated.tokens
        parsed = parse_tool_calls(generated.text, backend.tool_call_family())

    declared = {tool.name: tool for tool in params.tools}
    diagnostics: dict[str, Any] = {
        "model": backend.name,
        "tool_count": len(params.tools),
        "decision": decision,
        "tokens_generated": tokens,
        "detected_calls": [],
        "rejected_calls": [
            {"tool_name": call.name, "reason": "tool not declared by this node"}
            for call in parsed.calls
            if call.name not in declared
        ],
        "malformed_calls": len(parsed.malformed),
    }
    if fallback:
        diagnostics["score_unavailable"] = fallback
    if history is not None:
        diagnostics["history"] = history
    if scored is not None:  # how close the decision was, for a designer to see
        diagnostics["score"] = scored.diagnostics
    calls = [call for call in parsed.calls if call.name in declared]
    if not calls:
        diagnostics["exit"] = "no_tool_called"
        if params.mode is ToolCallMode.CallOrAnswer and parsed.residual_text:
            ctx.begin_reply()
            ctx.emit_text(parsed.residual_text)
            ctx.add_reply(parsed.residual_text)
        return NodeOutcome("no_tool_called", diagnostics=diagnostics)

    disposition = params.disposition
    events = []
    for call in calls:
        types = {p.name: p.type for p in declared[call.name].parameters}
        events.append(
            ToolCallEvent(
                call_id=ctx.next_call_id(),
                tool_name=call.name,
                arguments_json=json.dumps(arguments_as_strings(call.arguments)),
                node_name=ctx.node_name,
                disposition=disposition.value,
                arguments=coerce_arguments(call.arguments, types),
                unread_arguments=scored.unread if scored is not None else (),
            )
        )
    if disposition.acknowledges or disposition is ToolCallDisposition.AwaitResult:
        # The model will see these calls, so each must be answered: by the acknowledge text
        # now, or (AwaitResult) by the host's results on resume.
        ctx.interaction.messages.append(call_message(events))
        if disposition.acknowledges:
            ack = params.acknowledge_text or "ok"
            ctx.interaction.messages.extend(result_message(e, ack) for e in events)
    diagnostics["detected_calls"] = [
        {"call_id": e.call_id, "tool_name": e.tool_name, "arguments": e.arguments} for e in events
    ]
    diagnostics["exit"] = "tool_called"
    if disposition.notifies:
        for event in events:
            ctx.emit_tool_call(event)
    return NodeOutcome(
        "tool_called",
        pauses=disposition.pauses,
        diagnostics=diagnostics,
        pending_calls=tuple(events),
        awaits_results=disposition is ToolCallDisposition.AwaitResult,
    )
