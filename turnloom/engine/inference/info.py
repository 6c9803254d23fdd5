"""What a host may ask about a loaded model before building a graph for it (`list_models`)."""

from __future__ import annotations

from dataclasses import dataclass

from .base import ModelBackend
from .llama import LlamaModel


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """One model an engine (or a server) offers, as `list_models()` reports it."""

    #: The name graphs use (`set_default_model_name`, a node's `model_name`).
    name: str
    #: Whether a ToolCall node may use it (its chat template renders tools, calls and results).
    renders_tools: bool
    #: Why it cannot render tools ("" when it can): the 3003 a ToolCall graph would get.
    tool_support_error: str
    #: The call markup its ToolCall nodes read (`hermes`, `llama3`, `mistral`, `generic`, …).
    tool_call_family: str
    #: Its context window in tokens; None for a backend without a fixed one (the mock).
    context_size: int | None


def model_info(backend: ModelBackend) -> ModelInfo:
    """Describe `backend` (may read a GGUF's metadata once; never loads weights)."""
    error = backend.tool_support_error() or ""
    context = backend.entry.n_ctx if isinstance(backend, LlamaModel) else None
    return ModelInfo(
        name=backend.name,
        renders_tools=not error,
        tool_support_error=error,
        tool_call_family=str(backend.tool_call_family().value),
        context_size=context,
    )
