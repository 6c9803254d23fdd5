"""`AgentCore.change_params` in stages, for params too large to check on the loop.

`current_params` is the legality check of `change_params` (3002, 3004, 3005) and gives the
node's params; `proposed_params` (the one `change_params` uses, from `agent`) builds and
checks the new params from them (3006, 3007): the costly part (a deep copy and a check of
every field: 100-300 ms for a ToolCall node of 128 tools of 64 parameters), pure, so it may
run on a worker thread; `commit_params` sets them on the loop after checking again what may
have changed meanwhile, as `change_params` would.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ...states import Trigger
from ..graph.params import NodeParams, check_mutation
from .agent import AgentCore, proposed_params

__all__ = [
    "HEAVY",
    "commit_params",
    "current_params",
    "graph_weight",
    "node_params",
    "params_weight",
    "proposed_params",
]

#: The weight (`params_weight`, `graph_weight`) past which checking or copying takes long
#: enough (a few ms) to be done on a worker thread rather than on the engine loop.
HEAVY = 256


def current_params(agent: AgentCore, node_name: str) -> NodeParams:
    """The node's params, if `change_params` is legal now (refused as it refuses)."""
    agent._check(Trigger.EDIT, "change_params")
    return agent._node(node_name, "change_params")


def node_params(agent: AgentCore, node_name: str) -> NodeParams:
    """The node's live params (not a copy: only to read), refused as `get_params` refuses."""
    agent.check_alive("get_params")
    return agent._node(node_name, "get_params")


def params_weight(params: Any, depth: int = 0) -> int:
    """About how many declared objects copying or checking `params` walks: itself, those in
    its list fields and theirs (a ToolCall node's tools and their parameters), counted
    without walking the last level (~0.3 ms for the largest node)."""
    weight = 1
    for field in dataclasses.fields(params):
        value = getattr(params, field.name)
        if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            if depth:
                weight += len(value)
            else:
                weight += sum(params_weight(item, 1) for item in value)
    return weight


def commit_params(
    agent: AgentCore, node_name: str, current: NodeParams, proposed: NodeParams
) -> None:
    """Set `proposed` (made over `current`) as the node's params, on the loop; when the node's
    params are no longer `current`, `proposed` is checked against them first."""
    now = current_params(agent, node_name)
    if now is not current:
        check_mutation(node_name, now, proposed)
    agent.set_params(node_name, proposed)


def graph_weight(graph: Any) -> int:
    """About how many declared objects compiling `graph` walks: each node and the items of its
    list fields (tools, lines), in time linear in the nodes. 0 for anything that is not a
    graph's node list: creating the agent then refuses it as usual."""
    nodes = getattr(graph, "nodes", None)
    if not isinstance(nodes, list):
        return 0
    weight = 0
    for entry in nodes:
        params = entry[1] if isinstance(entry, tuple) and len(entry) == 2 else None
        weight += 1
        if dataclasses.is_dataclass(params) and not isinstance(params, type):
            for field in dataclasses.fields(params):
                value = getattr(params, field.name)
                if isinstance(value, list):
                    weight += len(value)
    return weight
