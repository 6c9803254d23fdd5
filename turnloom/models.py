"""Models: the llama.cpp backend, the model catalog, and the interface a custom backend
implements. `turnloom.LlamaModel`, `CatalogEntry` and `register_model` are also top-level."""

from .engine.inference.base import GenerationRequest, GenerationResult, ModelBackend
from .engine.inference.catalog import (
    DEFAULT_MODEL,
    CatalogEntry,
    ToolGrammar,
    catalog_entry,
    catalog_names,
    register_model,
)
from .engine.inference.info import ModelInfo, model_info
from .engine.inference.llama import GenerationStats, LlamaModel
from .engine.tools.families import ToolCallFamily

__all__ = [
    "DEFAULT_MODEL",
    "CatalogEntry",
    "GenerationRequest",
    "GenerationResult",
    "GenerationStats",
    "LlamaModel",
    "ModelBackend",
    "ModelInfo",
    "ToolCallFamily",
    "ToolGrammar",
    "catalog_entry",
    "catalog_names",
    "model_info",
    "register_model",
]
