"""turnloom: a turn engine for LLM agents in games and interactive apps.

An agent is a graph of typed nodes; each user message starts a turn that walks it, and a turn
can pause between nodes so the host can inspect, change params and resume.
"""

from .engine.backends.base import GenerationRequest, GenerationResult, ModelBackend
from .engine.backends.catalog import (
    DEFAULT_MODEL,
    CatalogEntry,
    ToolGrammar,
    catalog_entry,
    catalog_names,
    register_model,
)
from .engine.backends.llama import GenerationStats, LlamaModel
from .engine.backends.mock import MockModel
from .engine.clock import Clock, LoopClock, VirtualClock
from .engine.core import EngineSettings
from .engine.graph import GraphDescription
from .engine.params import (
    CannedResponseParams,
    GenerateParams,
    NodeParams,
    PauseParams,
    Placement,
    SamplingParams,
    Selection,
    ToolCallDisposition,
    ToolCallMode,
    ToolCallParams,
    ToolDefinition,
    ToolParamDefinition,
)
from .engine.results import PauseInfo, Step, ToolCallEvent, ToolResult, TurnResult, TurnStatus
from .engine.tool_parsing import ToolCallFamily
from .host import Agent, AsyncAgent, AsyncEngine, BlockingCallInCallback, Engine
from .protocol.client import AsyncRemoteEngine, RemoteEngine, connect, connect_async
from .protocol.errors import ErrorCode, TurnloomError
from .states import TurnState

__all__ = [
    "DEFAULT_MODEL",
    "Agent",
    "AsyncAgent",
    "AsyncEngine",
    "AsyncRemoteEngine",
    "BlockingCallInCallback",
    "CannedResponseParams",
    "CatalogEntry",
    "Clock",
    "Engine",
    "EngineSettings",
    "ErrorCode",
    "GenerateParams",
    "GenerationRequest",
    "GenerationResult",
    "GenerationStats",
    "GraphDescription",
    "LlamaModel",
    "LoopClock",
    "MockModel",
    "ModelBackend",
    "NodeParams",
    "PauseInfo",
    "PauseParams",
    "Placement",
    "RemoteEngine",
    "SamplingParams",
    "Selection",
    "Step",
    "ToolCallDisposition",
    "ToolCallEvent",
    "ToolCallFamily",
    "ToolCallMode",
    "ToolCallParams",
    "ToolDefinition",
    "ToolGrammar",
    "ToolParamDefinition",
    "ToolResult",
    "TurnResult",
    "TurnState",
    "TurnStatus",
    "TurnloomError",
    "VirtualClock",
    "catalog_entry",
    "catalog_names",
    "connect",
    "connect_async",
    "register_model",
]
