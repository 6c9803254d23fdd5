"""Which graph an agent was built from: a fingerprint of the graph's structure, beside the
version string the game gives it (docs/reference/durability.md#graph-versions).

The fingerprint hashes what an agent's saved state depends on: the node names in order, their
types, their structural fields (exits, tools, models: what `change_params` may never change),
the start node and the default model. Mutable params are left out on purpose: a patch that only
retunes a prompt or a sampling setting keeps the fingerprint, so a saved agent restores into the
patched graph as it is (its own changed params still win over the new defaults).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .builder import CompiledGraph, GraphDescription
from .data import node_type_of
from .fields import param_fields, params_to_mapping

#: Fingerprints by compiled graph (agents share compiled graphs; a snapshot asks at every write).
_CACHE: dict[int, tuple[CompiledGraph, str]] = {}
_CACHE_MAX = 256


def _structure(graph: GraphDescription | CompiledGraph) -> dict[str, Any]:
    nodes = graph.nodes.items() if isinstance(graph, CompiledGraph) else graph.nodes
    shape = []
    for name, params in nodes:
        values = params_to_mapping(params)
        fixed = {
            f.name: values.get(f.name)
            for f, _ in param_fields(type(params))
            if f.metadata.get("structural")
        }
        shape.append([name, node_type_of(params), fixed])
    return {
        "nodes": shape,
        "start_node": graph.start_node,
        "default_model_name": graph.default_model_name,
    }


def graph_fingerprint(graph: GraphDescription | CompiledGraph) -> str:
    """16 hex digits that change exactly when the graph's structure does."""
    if isinstance(graph, CompiledGraph):
        cached = _CACHE.get(id(graph))
        if cached is not None and cached[0] is graph:
            return cached[1]
    canonical = json.dumps(_structure(graph), sort_keys=True, separators=(",", ":"), default=str)
    fingerprint = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]
    if isinstance(graph, CompiledGraph):
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()
        _CACHE[id(graph)] = (graph, fingerprint)
    return fingerprint


def graph_label(version: str, fingerprint: str) -> str:
    """How a message names a graph: its version (or that it has none) and its fingerprint."""
    return f"version {version!r} ({fingerprint})" if version else f"no version ({fingerprint})"
