"""The Generate node: render the prompt, project the dialog, generate (and stream) a reply."""

from __future__ import annotations

from collections.abc import Sequence

from ...graph.params import GenerateParams
from ...inference.base import GenerationRequest
from ..dialog.history import fit_history
from ..dialog.projection import Interaction, project_chat, prompt_context, render_prompt
from .base import NodeContext, NodeOutcome, generate_within_budget


async def run_generate(ctx: NodeContext, params: GenerateParams) -> NodeOutcome:
    """Generate one reply with the node's model; stream deltas if `stream` is set."""
    prompt_text = render_prompt(params.template, prompt_context(ctx.interaction))

    def request(dialog: Sequence[Interaction]) -> GenerationRequest:
        messages = project_chat(
            dialog,
            ctx.interaction,
            system_prompt=params.system_prompt,
            prompt_text=prompt_text,
            placement=params.placement,
        )
        return GenerationRequest(messages, params.sampling, agent_id=ctx.agent_id)

    backend = ctx.backend(params)
    fitted, history = await fit_history(
        backend, params.history, ctx.dialog, ctx.node_state(), request
    )
    messages = fitted.messages
    ctx.begin_reply()
    result = await generate_within_budget(
        ctx, backend, fitted, ctx.emit_text if params.stream else None
    )
    ctx.add_tokens(result.tokens)  # first: a callback of `emit_text` may end the turn
    if not params.stream:
        ctx.emit_text(result.text)
    ctx.add_reply(result.text)
    diagnostics = {
        "model": backend.name,
        "prompt_messages": len(messages),
        "tokens_generated": result.tokens,
    }
    if history is not None:
        diagnostics["history"] = history
    return NodeOutcome("default", diagnostics=diagnostics)
