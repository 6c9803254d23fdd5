"""Drawings of an agent graph: nodes with their types, exits as labelled edges, pauses marked."""

from __future__ import annotations

from collections.abc import Iterator

import graphviz

from .graph import CompiledGraph, GraphDescription, compile_graph

_END = "__end__"


def _edges(graph: CompiledGraph) -> Iterator[tuple[str, str, str, bool]]:
    """(node, target or END, route, pauses after it) for each exit that can be taken."""
    for name, route, target in graph.edges():
        params = graph.nodes[name]
        if route == "timeout" and not getattr(params, "pause_timeout_ms", 0):
            continue  # a timeout exit without a timeout is never taken
        yield name, target or _END, route, route in params.pausing_routes()


def graph_mermaid(graph: CompiledGraph) -> str:
    """The graph as a Mermaid flowchart; pausing nodes are marked, edges after a pause dotted."""
    lines = ["flowchart LR", "  __start__((start))", f"  {_END}((END))"]
    for name, params in graph.nodes.items():
        mark = " ⏸" if params.pausing_routes() else ""
        lines.append(f'  {name}["{name}<br/>{params.node_type}{mark}"]')
        if mark:
            lines.append(f"  class {name} pausing")
    lines.append(f"  __start__ --> {graph.start_node}")
    for name, dest, route, paused in _edges(graph):
        if paused:
            lines.append(f'  {name} -. "{route} (paused)" .-> {dest}')
        else:
            lines.append(f'  {name} -- "{route}" --> {dest}')
    lines.append("  classDef pausing stroke-dasharray: 5 5")
    return "\n".join(lines) + "\n"


def graph_dot(graph: CompiledGraph, title: str = "agent") -> str:
    """The graph as Graphviz DOT source; pausing nodes and the edges after a pause are dashed."""
    dot = graphviz.Digraph(title, graph_attr={"rankdir": "LR"})
    dot.node("__start__", "start", shape="circle")
    dot.node(_END, "END", shape="doublecircle")
    for name, params in graph.nodes.items():
        pauses = bool(params.pausing_routes())
        label = f"{name}\\n{params.node_type}" + (" (pauses)" if pauses else "")
        dot.node(name, label, shape="box", style="rounded,dashed" if pauses else "rounded")
    dot.edge("__start__", graph.start_node)
    for name, dest, route, paused in _edges(graph):
        dot.edge(
            name,
            dest,
            label=f"{route} (paused)" if paused else route,
            style="dashed" if paused else "solid",
        )
    return str(dot.source)


def draw_graph(graph: GraphDescription, fmt: str = "mermaid") -> str:
    """Draw a graph description as 'mermaid' or 'dot' (it must be a valid graph)."""
    compiled = compile_graph(graph, lambda node, model, params: None)
    if fmt == "mermaid":
        return graph_mermaid(compiled)
    if fmt == "dot":
        return graph_dot(compiled)
    raise ValueError(f"unknown diagram format {fmt!r}; use 'mermaid' or 'dot'")
