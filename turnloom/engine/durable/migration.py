"""Restoring a snapshot into a graph other than the one it was made from: a game's patched
graph (docs/reference/durability.md#graph-versions). The same structure (only mutable params
changed) restores as it is; another needs the game's migration, else it is refused naming both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..graph.builder import GraphDescription
from ..graph.data import graph_from_data, graph_to_data
from ..graph.versions import graph_fingerprint, graph_label
from .restore import check_graph_names, refuse, snapshot_header, unpacked
from .snapshot import AgentSnapshot

#: A game's migration of a snapshot made from an older graph: the document (`to_dict` form)
#: in, the document to restore into the new graph out.
Migration = Callable[[dict[str, Any]], Mapping[str, Any]]


def _saved_graph(raw: Mapping[str, Any]) -> GraphDescription:
    blob = raw.get("graph")
    data = unpacked(blob) if isinstance(blob, bytes) else blob
    if not isinstance(data, Mapping):
        raise refuse(f"graph must be a map, got {type(data).__name__}")
    return graph_from_data(data)


def into_graph(data: Any, graph: GraphDescription, migrate: Migration | None) -> dict[str, Any]:
    """The snapshot `data` (bytes or `to_dict` form), to be restored into `graph` instead of the
    graph it was made from: as it is when the structure is the same (only mutable params may
    differ), through the game's `migrate` when it is not; without one refused, naming both
    graphs. `read_snapshot` then checks the result like any snapshot."""
    raw = snapshot_header(data)
    saved = _saved_graph(raw)
    # Its record of the graph is checked against the graph it holds, as a plain restore does:
    # a record that names another graph must not decide whether it needs a migration.
    check_graph_names(raw, saved)
    saved_fp, target_fp = graph_fingerprint(saved), graph_fingerprint(graph)
    document = dict(raw)
    if saved_fp != target_fp:
        old = graph_label(saved.version, saved_fp)
        new = graph_label(graph.version, target_fp)
        if migrate is None:
            raise refuse(
                f"it was made from graph {old}, and the graph given has another structure, "
                f"{new}: pass migrate= to carry it over"
            )
        document = AgentSnapshot.from_dict({**raw, "graph": graph_to_data(saved)}).to_dict()
        migrated = migrate(document)
        if not isinstance(migrated, Mapping):
            raise refuse(f"the migration from {old} to {new} returned {type(migrated).__name__}")
        document = dict(migrated)
    document["graph"] = graph_to_data(graph)
    document["graph_version"] = graph.version
    document["graph_fingerprint"] = target_fp
    return document
