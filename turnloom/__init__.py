"""turnloom: a turn engine for LLM agents in games and interactive apps.

An agent is a graph of typed nodes; each user message starts a turn that walks it, and a turn
can pause between nodes so the host can inspect, change params and resume.
"""

from .engine.backends.base import GenerationRequest, GenerationResult, ModelBackend
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
    "Agent",
    "AsyncAgent",
    "AsyncEngine",
    "AsyncRemoteEngine",
    "BlockingCallInCallback",
    "CannedResponseParams",
    "Clock",
    "Engine",
    "EngineSettings",
    "ErrorCode",
    "GenerateParams",
    "GenerationRequest",
    "GenerationResult",
    "GraphDescription",
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
    "ToolParamDefinition",
    "ToolResult",
    "TurnResult",
    "TurnState",
    "TurnStatus",
    "TurnloomError",
    "VirtualClock",
    "connect",
    "connect_async",
]
