"""What a node executor gets to work with, and what it returns."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..backends.base import ModelBackend
from ..params import NodeParams
from ..projection import Interaction
from ..results import ToolCallEvent


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
        """A call id unique for the agent's lifetime (R-T5)."""
        ...

    def emit_tool_call(self, event: ToolCallEvent) -> None:
        """Tell the host about a detected call."""
        ...

    def node_state(self) -> dict[str, Any]:
        """Per-agent scratch state of this node (survives across turns)."""
        ...


#: A node executor: runs one node and says how it exits.
NodeRunner = Callable[[NodeContext, Any], Awaitable[NodeOutcome]]
