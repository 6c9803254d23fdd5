"""The interface every inference backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..params import SamplingParams
from ..tool_families import ToolCallFamily

#: A chat message in the shape chat templates take: role, content, and for tools
#: `tool_calls` / `tool_call_id`.
ChatMessage = dict[str, Any]


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One generation: the projected chat, the tools to offer (JSON-schema dicts), sampling."""

    messages: list[ChatMessage]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    tools: list[dict[str, Any]] | None = None
    #: The agent asking: a backend with several instances keeps an agent on one of them, so
    #: the model's prompt cache (prefix reuse) survives from turn to turn.
    agent_id: int = 0


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """What a generation produced."""

    text: str
    tokens: int


class ModelBackend(ABC):
    """An inference engine for one model name.

    `generate` runs on the engine loop; cancelling the awaiting task must stop the generation
    within a few tokens.
    """

    name: str

    @abstractmethod
    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        """Generate a reply for `request`, calling `on_delta` with each piece of text."""

    def tool_call_family(self) -> ToolCallFamily:
        """The call markup this model emits, which picks the parser for its output."""
        return ToolCallFamily.GENERIC

    def tool_support_error(self) -> str | None:
        """Why this model cannot render tools, or None if it can (R-T1)."""
        return None
