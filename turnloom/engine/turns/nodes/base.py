"""What a node executor gets to work with, and what it returns."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...graph.params import NodeParams
from ...inference.base import (
    GenerationProgress,
    GenerationRequest,
    GenerationResult,
    ModelBackend,
)
from ...support.clock import Clock
from ..dialog.projection import Interaction
from ..results import InferenceTimeout, ToolCallEvent
from ..runtime import GenerationMeter
from .generation_watch import GenerationWatch


@dataclass(slots=True)
class NodeOutcome:
    """A node's exit: the route it takes, whether the turn pauses there, its diagnostics."""

    exit_route: str
    pauses: bool = False
    #: None for nodes that record nothing (a Pause node's debug entry has no diagnostics key).
    diagnostics: dict[str, Any] | None = None
    #: Calls detected by a ToolCall node, reported with the pause.
    pending_calls: tuple[ToolCallEvent, ...] = ()
    #: Whether the resume must carry the host's results for `pending_calls`.
    awaits_results: bool = False


class NodeContext(Protocol):
    """The turn as a node sees it."""

    node_name: str
    agent_id: int

    @property
    def clock(self) -> Clock:
        """The engine's clock (budgets and deadlines are measured on it)."""
        ...

    @property
    def dialog(self) -> Sequence[Interaction]:
        """The agent's finished interactions."""
        ...

    @property
    def interaction(self) -> Interaction:
        """The interaction this turn is building."""
        ...

    @property
    def rng(self) -> random.Random:
        """The agent's random source (seeded by agent id, so runs are repeatable)."""
        ...

    @property
    def meter(self) -> GenerationMeter | None:
        """What every inference must be admitted by and charged to (None: nothing)."""
        ...

    def backend(self, params: NodeParams) -> ModelBackend:
        """The model backend this node runs on."""
        ...

    def begin_reply(self) -> None:
        """Mark the start of a reply (separates it from earlier replies of the turn)."""
        ...

    def emit_text(self, text: str) -> None:
        """Stream a piece of reply text to the host."""
        ...

    def add_reply(self, text: str) -> None:
        """Record a finished reply in the interaction."""
        ...

    def add_tokens(self, count: int) -> None:
        """Count generated tokens for the turn."""
        ...

    def next_call_id(self) -> str:
        """A call id unique for the agent's lifetime (docs/reference/tools.md#call-ids)."""
        ...

    def emit_tool_call(self, event: ToolCallEvent) -> None:
        """Tell the host about a detected call."""
        ...

    def node_state(self) -> dict[str, Any]:
        """Per-agent scratch state of this node (survives across turns)."""
        ...

    def generation_watch(self, progress: GenerationProgress) -> GenerationWatch | None:
        """A timer of one generation for the engine's observers, listening to its `progress`
        (which then counts its tokens into the turn through it); None: there are none."""
        ...


async def generate_within_budget(
    ctx: NodeContext,
    backend: ModelBackend,
    request: GenerationRequest,
    on_delta: Callable[[str], None] | None = None,
) -> GenerationResult:
    """Run one generation; past `sampling.timeout_ms` on the engine clock, end it with
    `InferenceTimeout` (4002).

    The tokens the backend reports in `request.progress` are counted in the turn as they are
    produced, so a turn cancelled mid-generation (whose result is made at once) or ended by
    the budget counts them. On success that running count is withdrawn again: the caller
    counts `result.tokens`, the backend's final word (`ctx.add_tokens(result.tokens)`).
    """
    progress = request.progress
    before = progress.tokens
    meter = ctx.meter
    if meter is not None:
        meter.admit(ctx.agent_id)
    watch = ctx.generation_watch(progress)
    if watch is None:
        progress.listener = ctx.add_tokens
    try:
        result = await _generate_within_budget(ctx, backend, request, on_delta)
    except BaseException as exc:
        if meter is not None:  # cancelled or failed: what it produced was still spent
            meter.charge(ctx.agent_id, progress.tokens - before)
        if watch is not None:
            watch.ended(backend, request, 0, progress.tokens - before, exc)
        raise
    finally:
        progress.listener = None
    if meter is not None:
        meter.charge(ctx.agent_id, max(result.tokens, progress.tokens - before))
    ctx.add_tokens(before - progress.tokens)
    if watch is not None:
        # A backend whose result does not say, but that counts at once: counted when an
        # observer reads it (a prompt's count costs as much as rendering it).
        watch.ended(backend, request, result.prompt_tokens, result.tokens, None)
    return result


async def _generate_within_budget(
    ctx: NodeContext,
    backend: ModelBackend,
    request: GenerationRequest,
    on_delta: Callable[[str], None] | None,
) -> GenerationResult:
    budget_ms = request.sampling.timeout_ms
    if not budget_ms:
        return await backend.generate(request, on_delta)
    generation = asyncio.ensure_future(backend.generate(request, on_delta))
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        generation.cancel()

    timer = ctx.clock.call_at(ctx.clock.now() + budget_ms / 1000, expire)
    try:
        return await generation
    except asyncio.CancelledError:
        current = asyncio.current_task()
        if expired and (current is None or not current.cancelling()):
            raise InferenceTimeout(
                f"model '{backend.name}' did not finish within its {budget_ms} ms budget"
            ) from None
        raise
    finally:
        timer.cancel()


#: A node executor: runs one node and says how it exits.
NodeRunner = Callable[[NodeContext, Any], Awaitable[NodeOutcome]]
