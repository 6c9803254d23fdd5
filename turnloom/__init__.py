"""turnloom: a turn engine for LLM agents in games and interactive apps.

An agent is a graph of typed nodes; each user message starts a turn that walks it, and a turn
can pause between nodes so the host can inspect, change params and resume.

Top level: what a host app needs (engines, agents, graphs and params, results, errors).
`turnloom.models` has the model backends and catalog, `turnloom.testing` the clocks and the
scripted mock model; `LlamaModel`, `CatalogEntry`, `register_model`, `MockModel` and
`VirtualClock` are also here, as the docs and examples use them. Real inference (`LlamaModel`,
and `Engine()` with no model) needs the `llama` extra (`pip install -e '.[llama]'` from a
checkout).
`ServedModel` runs inference on a serving engine over HTTP (the `served` extra).
"""

#: The package's version (pyproject.toml reads it from here: one place to change it).
__version__ = "0.1.0"

from . import models, testing
from .engine.durable.snapshot import AgentSnapshot
from .engine.durable.store import SQLiteStore, Store
from .engine.durable.store.slots import SlotInfo
from .engine.graph.builder import GraphDescription
from .engine.graph.params import (
    CannedResponseParams,
    GenerateParams,
    HistoryParams,
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
from .engine.inference.catalog import CatalogEntry, register_model
from .engine.inference.llama import LlamaModel
from .engine.inference.mock import MockModel
from .engine.inference.served import ServedModel, ServedModelError, ServerKind
from .engine.support.clock import VirtualClock
from .engine.turns.results import (
    MessageEvent,
    MessageFate,
    PauseInfo,
    Step,
    ToolCallEvent,
    ToolResult,
    TurnResult,
    TurnStatus,
)
from .engine.turns.runtime import EngineSettings
from .host import (
    Agent,
    AsyncAgent,
    AsyncEngine,
    AsyncRemoteEngine,
    BlockingCallInCallback,
    Engine,
    RemoteEngine,
    connect,
    connect_async,
)
from .protocol.errors import (
    AgentAlreadyDestroyed,
    AgentBusy,
    AgentError,
    AgentNotPaused,
    ClientError,
    ConnectionDropped,
    ConnectionFailed,
    ErrorCode,
    FrameTooLarge,
    GraphCompilationFailed,
    InferenceError,
    InferenceFailed,
    InferenceTimeout,
    InvalidAgentId,
    InvalidExitTarget,
    InvalidParamValue,
    InvalidToolResults,
    MalformedMessage,
    MaxStepsExceeded,
    ParamNotMutable,
    ProtocolError,
    ProtocolVersionMismatch,
    ServerError,
    ServerShuttingDown,
    SessionLimitExceeded,
    SessionNotReady,
    Timeout,
    TurnloomError,
    Unauthorized,
    UnknownMessageType,
    UnknownNode,
)
from .states import InputPolicy, TurnState

__all__ = [
    "Agent",
    "AgentAlreadyDestroyed",
    "AgentBusy",
    "AgentError",
    "AgentNotPaused",
    "AgentSnapshot",
    "AsyncAgent",
    "AsyncEngine",
    "AsyncRemoteEngine",
    "BlockingCallInCallback",
    "CannedResponseParams",
    "CatalogEntry",
    "ClientError",
    "ConnectionDropped",
    "ConnectionFailed",
    "Engine",
    "EngineSettings",
    "ErrorCode",
    "FrameTooLarge",
    "GenerateParams",
    "GraphCompilationFailed",
    "GraphDescription",
    "HistoryParams",
    "InferenceError",
    "InferenceFailed",
    "InferenceTimeout",
    "InputPolicy",
    "InvalidAgentId",
    "InvalidExitTarget",
    "InvalidParamValue",
    "InvalidToolResults",
    "LlamaModel",
    "MalformedMessage",
    "MaxStepsExceeded",
    "MessageEvent",
    "MessageFate",
    "MockModel",
    "NodeParams",
    "ParamNotMutable",
    "PauseInfo",
    "PauseParams",
    "Placement",
    "ProtocolError",
    "ProtocolVersionMismatch",
    "RemoteEngine",
    "SQLiteStore",
    "SamplingParams",
    "Selection",
    "ServedModel",
    "ServedModelError",
    "ServerError",
    "ServerKind",
    "ServerShuttingDown",
    "SessionLimitExceeded",
    "SessionNotReady",
    "SlotInfo",
    "Step",
    "Store",
    "Timeout",
    "ToolCallDisposition",
    "ToolCallEvent",
    "ToolCallMode",
    "ToolCallParams",
    "ToolDefinition",
    "ToolParamDefinition",
    "ToolResult",
    "TurnResult",
    "TurnState",
    "TurnStatus",
    "TurnloomError",
    "Unauthorized",
    "UnknownMessageType",
    "UnknownNode",
    "VirtualClock",
    "__version__",
    "connect",
    "connect_async",
    "models",
    "register_model",
    "testing",
]
