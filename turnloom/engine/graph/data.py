"""Graphs and node params as plain data: the one codec the wire and the snapshots share.

A node is `{"name", "type", "params"}`: `type` is the params class's `node_type` ("Pause",
"Generate", "CannedResponse", "ToolCall") and `params` the map of its fields
(`params_to_mapping`). Decoding builds the params with `params_from_mapping` and leaves every
value check to the engine, so a graph read from data is refused exactly as the same graph
would be in process (3003, 3007, 3008). Enum fields travel as their string values; a field the
params class lists in `deprecated_fields` (ToolCall's `tool_call_format`) is accepted and
dropped, as the constructor does.

It lives in the engine (not the protocol layer) because agent snapshots (`snapshot.py`) hold
their graph in this same form; `turnloom.protocol.graph_codec` re-exports it for the wire.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from ..support.guards import brief
from ..support.rejections import GraphCompilationFailed, InvalidParamValue
from .builder import CompiledGraph, GraphDescription, too_many_nodes
from .fields import params_from_mapping, params_to_mapping
from .params import (
    CannedResponseParams,
    GenerateParams,
    NodeParams,
    PauseParams,
    ToolCallParams,
)

#: The node types a graph may use, by `NodeParams.node_type`.
NODE_TYPES: dict[str, type[NodeParams]] = {
    cls.node_type: cls
    for cls in (PauseParams, GenerateParams, CannedResponseParams, ToolCallParams)
}


def to_plain(value: Any) -> Any:
    """`value` with params objects, enums and tuples turned into maps, values and lists."""
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return params_to_mapping(value)
    if isinstance(value, Mapping):
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    return value


def node_type_of(params: Any) -> str:
    """The data type of a node's params ('' for something that is not node params)."""
    return params.node_type if isinstance(params, NodeParams) else ""


def params_from_data(node_name: Any, node_type: Any, values: Any) -> NodeParams:
    """Build the params of `node_name` from its type and field map (3003 / 3007)."""
    cls = NODE_TYPES.get(node_type) if isinstance(node_type, str) else None
    if cls is None:
        raise GraphCompilationFailed(
            f"node {brief(node_name)}: unknown node type {brief(node_type)} "
            f"(known: {sorted(NODE_TYPES)})"
        )
    if not isinstance(values, Mapping):
        raise GraphCompilationFailed(
            f"node {brief(node_name)}: params must be a map, got {type(values).__name__}"
        )
    try:
        return params_from_mapping(cls, values)
    except InvalidParamValue as rejection:
        raise InvalidParamValue(f"node {brief(node_name)}: {rejection.message}") from None


def graph_to_data(graph: GraphDescription | CompiledGraph) -> dict[str, Any]:
    """A graph (a description or a compiled one) as plain data: nodes in order, start node,
    default model."""
    nodes = graph.nodes.items() if isinstance(graph, CompiledGraph) else graph.nodes
    data: dict[str, Any] = {
        "nodes": [
            {
                "name": name,
                "type": node_type_of(params),
                "params": params_to_mapping(params) if isinstance(params, NodeParams) else {},
            }
            for name, params in nodes
        ],
        "start_node": graph.start_node,
        "default_model_name": graph.default_model_name,
    }
    if graph.version:  # only then: graphs without one keep the data (and snapshots) they had
        data["version"] = graph.version
    return data


def graph_from_data(data: Mapping[str, Any]) -> GraphDescription:
    """The graph `graph_to_data` describes (3003 for a graph whose shape is wrong)."""
    nodes = data.get("nodes", [])
    if not isinstance(nodes, list):
        raise GraphCompilationFailed(f"graph 'nodes' must be an array, got {type(nodes).__name__}")
    if (refused := too_many_nodes(len(nodes))) is not None:
        raise refused  # before any node's params are built
    graph = GraphDescription()
    for index, node in enumerate(nodes):
        if not isinstance(node, Mapping):
            raise GraphCompilationFailed(
                f"graph node #{index} must be a map, got {type(node).__name__}"
            )
        # Not checked here: a bad name is the engine's 3003, as it is in process.
        name: Any = node.get("name")
        graph.add_node(name, params_from_data(name, node.get("type"), node.get("params", {})))
    graph.set_start_node(data.get("start_node", ""))
    graph.set_default_model_name(data.get("default_model_name", ""))
    graph.set_version(data.get("version", ""))
    return graph
