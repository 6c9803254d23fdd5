"""The Pause node: a no-op checkpoint after which the turn always pauses."""

from __future__ import annotations

from ...graph.params import PauseParams
from .base import NodeContext, NodeOutcome


async def run_pause(ctx: NodeContext, params: PauseParams) -> NodeOutcome:
    """Exit `default` and ask for a pause; record no diagnostics."""
    return NodeOutcome("default", pauses=True)
