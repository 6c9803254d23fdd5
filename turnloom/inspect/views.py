"""The inspector's data: agents, graphs, node params and the turn machine as plain JSON, and
the graphs as SVG where Graphviz's `dot` is installed.

Only what the wire protocol already shows its own session goes out: ids, states, the graph and
its params, pauses and tool calls. Never a snapshot, a resume token or another secret.
"""

from __future__ import annotations

import dataclasses
import enum
import shutil
import typing
from collections import OrderedDict
from typing import Any

import graphviz

from ..engine.graph.diagram import graph_dot
from ..engine.graph.fields import param_fields, params_to_mapping
from ..states import TERMINAL_STATES, TRANSITIONS, TurnState
from ..states.diagrams import turn_machine_dot
from .recorder import AgentTrack

#: Drawn graphs kept (by compiled graph): agents made from one description share theirs.
KEPT_DRAWINGS = 64


def graph_label(agent: Any, labels: dict[int, str]) -> str:
    """What the page calls an agent's graph: its `graph` tag, else a number per distinct graph
    (agents made from one description share a compiled graph), with its start node."""
    tagged = agent.tags.get("graph") if agent.tags else None
    if tagged:
        return str(tagged)
    key = id(agent.graph)
    if key not in labels:
        labels[key] = f"graph {len(labels) + 1} ({agent.graph.start_node}…)"
    return labels[key]


def agent_summary(
    agent: Any, track: AgentTrack | None, labels: dict[int, str], now: float
) -> dict[str, Any]:
    """One row of the agent list."""
    turn = agent.turn
    pause = turn.pause
    state = turn.state.value
    in_node, last_node = track.node_now() if track is not None else ("", "")
    if pause is not None:
        node = pause.info.node_name
    else:
        node = in_node or (last_node if state != TurnState.IDLE.value else "")
    return {
        "id": agent.agent_id,
        "graph": graph_label(agent, labels),
        "state": state,
        "turn_id": turn.turn_id,
        "node": node,
        "last_node": last_node,
        "paused_node": pause.info.node_name if pause is not None else "",
        "pending_exit": pause.info.pending_exit if pause is not None else "",
        "paused_for_s": round(now - pause.started_at, 3) if pause is not None else None,
        "durable": type(agent).__name__ == "DurableAgentCore",
        "tags": dict(agent.tags or {}),
        "last_status": agent.last_result.status.value if agent.last_result else "",
    }


def row_key(agent: Any, track: AgentTrack | None) -> tuple[Any, ...]:
    """What an agent's row shows, cheaply: a row whose key has not changed since the pages
    last heard of it need not be sent again (the page ages the pause time itself)."""
    turn = agent.turn
    pause = turn.pause
    last = agent.last_result
    return (
        turn.state,
        None if pause is None else pause.started_at,
        None if pause is None else pause.info.node_name,
        ("", "") if track is None else track.node_now(),
        None if last is None else last.status,
        tuple(agent.tags.items()) if agent.tags else (),
    )


def agent_detail(
    agent: Any,
    track: AgentTrack | None,
    labels: dict[int, str],
    now: float,
    *,
    full: bool = True,
    have: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """What the page shows of the chosen agent. `full`: with its graph and params (what a page
    draws once, when the agent is chosen); `have`: ended turns the page already shows, left
    out of `timeline` (an ended turn never changes); `turn_ids` lists every turn kept."""
    detail = agent_summary(agent, track, labels, now)
    pause = agent.turn.pause
    detail["pause"] = None
    if pause is not None:
        info = pause.info
        detail["pause"] = {
            "node": info.node_name,
            "pending_exit": info.pending_exit,
            "pending_target": info.pending_target,
            "timeout_ms": info.timeout_ms,
            "awaits_results": info.awaits_results,
            "pending_calls": [
                {"call_id": c.call_id, "tool": c.tool_name, "arguments": c.arguments_json}
                for c in info.pending_calls
            ],
        }
    if full:
        detail["graph_data"] = graph_data(agent)
        detail["params"] = {name: params_form(params) for name, params in agent.params.items()}
    params = agent.params

    def node_type(node: str) -> str:
        return str(getattr(params.get(node), "node_type", ""))

    turns = track.timeline(node_type) if track is not None else []
    detail["turn_ids"] = [t["turn_id"] for t in turns]
    detail["timeline"] = [t for t in turns if not (t["status"] and t["turn_id"] in have)]
    return detail


def graph_data(agent: Any) -> dict[str, Any]:
    """The agent's graph as nodes and edges (what the page draws when there is no SVG)."""
    graph = agent.graph
    nodes = [
        {
            "name": name,
            "type": params.node_type,
            "pauses": bool(params.pausing_routes()),
        }
        for name, params in graph.nodes.items()
    ]
    edges = [
        {"source": name, "route": route, "target": target or "__end__"}
        for name, route, target in graph.edges()
    ]
    return {"start": graph.start_node, "nodes": nodes, "edges": edges}


def machine_data() -> dict[str, Any]:
    """The turn machine from its transition table: states, terminal ones, transitions."""
    return {
        "initial": TurnState.IDLE.value,
        "states": [state.value for state in TurnState],
        "terminal": sorted(state.value for state in TERMINAL_STATES),
        "transitions": [
            {"trigger": row.trigger.value, "source": source.value, "dest": row.dest.value}
            for row in TRANSITIONS
            for source in row.sources
        ],
    }


def _field_kind(tp: Any) -> tuple[str, list[Any] | None]:
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "enum", [member.value for member in tp]
    if tp is bool:
        return "bool", None
    if tp is int:
        return "int", None
    if tp is float:
        return "float", None
    if tp is str:
        return "str", None
    return "json", None


def params_form(params: Any) -> list[dict[str, Any]]:
    """A node's mutable fields with their current values, types and ranges: the form the page
    builds (nested params, such as `sampling`, one level down as `sampling.temperature`)."""
    values = params_to_mapping(params)
    fields: list[dict[str, Any]] = []
    for f, tp in param_fields(type(params)):
        if f.metadata.get("structural"):
            continue
        if isinstance(tp, type) and dataclasses.is_dataclass(tp):
            for inner, inner_tp in param_fields(tp):
                if not inner.metadata.get("structural"):
                    fields.append(
                        _form_field(
                            f"{f.name}.{inner.name}", inner, inner_tp, values[f.name][inner.name]
                        )
                    )
            continue
        fields.append(_form_field(f.name, f, tp, values[f.name]))
    return fields


def _form_field(name: str, f: dataclasses.Field[Any], tp: Any, value: Any) -> dict[str, Any]:
    kind, choices = _field_kind(tp)
    if typing.get_origin(tp) is list:
        kind = "json"
    meta = f.metadata
    return {
        "name": name,
        "kind": kind,
        "value": value,
        "choices": choices,
        "min": meta.get("min"),
        "max": meta.get("max"),
        "doc": meta.get("doc", ""),
    }


class Drawings:
    """SVG drawings of graphs and of the turn machine, made with Graphviz's `dot` when it is
    installed (`available`); without it the page draws from `graph_data` itself."""

    def __init__(self, use_dot: bool | None = None) -> None:
        found = shutil.which("dot") is not None
        self.available = found if use_dot is None else (use_dot and found)
        self._graphs: OrderedDict[int, tuple[Any, str]] = OrderedDict()
        self._machine: str | None = None

    def graph_svg(self, agent: Any) -> str:
        """The agent's graph (cached per compiled graph); call off the loop (runs `dot`)."""
        key = id(agent.graph)
        kept = self._graphs.get(key)
        if kept is not None and kept[0] is agent.graph:
            self._graphs.move_to_end(key)
            return kept[1]
        svg = _svg(graph_dot(agent.graph, title=""))
        self._graphs[key] = (agent.graph, svg)
        while len(self._graphs) > KEPT_DRAWINGS:
            self._graphs.popitem(last=False)
        return svg

    def machine_svg(self) -> str:
        """The turn machine (drawn once); call off the loop."""
        if self._machine is None:
            self._machine = _svg(turn_machine_dot())
        return self._machine


def _svg(dot_source: str) -> str:
    svg = graphviz.Source(dot_source).pipe(format="svg").decode("utf-8")
    # The XML prologue and doctype are for a file; inlined in the page only the <svg> counts.
    return svg[svg.index("<svg") :]
