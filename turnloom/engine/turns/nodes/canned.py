"""The CannedResponse node: one of a fixed set of lines, no model."""

from __future__ import annotations

from ...graph.params import CannedResponseParams, Selection
from .base import NodeContext, NodeOutcome


async def run_canned(ctx: NodeContext, params: CannedResponseParams) -> NodeOutcome:
    """Pick a line by the node's selection rule and reply with it."""
    lines = params.lines
    if params.selection is Selection.Random:
        index = ctx.rng.randrange(len(lines))
    elif params.selection is Selection.Cycle:
        state = ctx.node_state()
        index = state.get("next", 0) % len(lines)
        state["next"] = index + 1
    else:
        index = 0
    ctx.begin_reply()
    ctx.emit_text(lines[index])
    ctx.add_reply(lines[index])
    return NodeOutcome("default", diagnostics={"line_index": index})
