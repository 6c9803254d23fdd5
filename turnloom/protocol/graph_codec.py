"""Graphs and node params as plain data, for the wire.

The codec itself is the engine's (`turnloom.engine.graph.data`), which agent snapshots use
too; this module gives it the wire's names, so a graph sent over the wire is read exactly as a
snapshot's graph is.
"""

from __future__ import annotations

from ..engine.graph.data import NODE_TYPES, node_type_of, to_plain
from ..engine.graph.data import graph_from_data as graph_from_wire
from ..engine.graph.data import graph_to_data as graph_to_wire
from ..engine.graph.data import params_from_data as params_from_wire

__all__ = [
    "NODE_TYPES",
    "graph_from_wire",
    "graph_to_wire",
    "node_type_of",
    "params_from_wire",
    "to_plain",
]
