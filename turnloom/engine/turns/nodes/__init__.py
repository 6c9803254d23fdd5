"""Node executors, one module per node type (and the ToolCall node's `score` decision, a
package of its own), and the registry that maps params to them. They may import the rest of
`turns` and the rooms below."""

from __future__ import annotations

from ...graph.params import (
    CannedResponseParams,
    GenerateParams,
    NodeParams,
    PauseParams,
    ToolCallParams,
)
from .base import NodeContext, NodeOutcome, NodeRunner
from .canned import run_canned
from .generate import run_generate
from .pause import run_pause
from .toolcall import run_tool_call

#: Which executor runs a node, by the type of its params.
RUNNERS: dict[type[NodeParams], NodeRunner] = {
    PauseParams: run_pause,
    GenerateParams: run_generate,
    CannedResponseParams: run_canned,
    ToolCallParams: run_tool_call,
}

__all__ = ["RUNNERS", "NodeContext", "NodeOutcome", "NodeRunner"]
