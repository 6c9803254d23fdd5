"""Drawings of an agent graph for the people who design it.

Nodes show their type (and are filled with its colour), the tools a ToolCall node offers the
model, whether the turn pauses after them and how long such a pause waits; nodes no exit leads
to are marked as reached only by a jump (`resume(node)`). Edges are solid when taken at once,
dashed when taken on the host's resume, dashed red when a pause times out. Each drawing carries
a legend saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import graphviz

from .builder import CompiledGraph, GraphDescription, compile_graph
from .params import NodeParams, ToolCallParams

_START = "__start__"
_END = "__end__"
# A timeout exit left empty ends the turn `pause_timed_out`, not like a plain END: its own node.
_TIMED_OUT = "__timed_out__"
_TIMEOUT_COLOR = "firebrick"
_JUMP_COLOR = "gray40"

#: The fill of each node type, so a designer tells the model's nodes from the game's at a glance.
TYPE_COLORS = {
    "Generate": "#dbe9f6",
    "ToolCall": "#fde3c8",
    "Pause": "#fff4c2",
    "CannedResponse": "#e2f0d9",
}

#: The legend's lines, shared by both formats.
LEGEND = (
    "blue: the model writes the reply (Generate)",
    "orange: the model may call one of the listed tools (ToolCall)",
    "yellow: a pause for the game (Pause)",
    "green: a fixed line, no model (CannedResponse)",
    "solid arrow: exit taken at once",
    "dashed arrow: exit taken when the host resumes the pause",
    "red dashed arrow: exit taken when the pause times out",
    "dashed box: the turn pauses after this node",
    "grey dotted box: no exit leads here; reached only by a jump, resume(node)",
)


@dataclass(frozen=True, slots=True)
class _Edge:
    source: str
    target: str  # a node, _END or _TIMED_OUT
    route: str
    kind: str  # "now", "resume" or "timeout"
    label: str


def _timeout_ms(params: NodeParams) -> int:
    """The node's pause deadline in ms; 0 when it never pauses or waits forever."""
    return int(getattr(params, "pause_timeout_ms", 0)) if params.pausing_routes() else 0


def _edges(graph: CompiledGraph) -> Iterator[_Edge]:
    """Every exit that can be taken, with how it is taken."""
    for name, route, target in graph.edges():
        params = graph.nodes[name]
        if route == "timeout":
            ms = _timeout_ms(params)
            if ms:  # a timeout exit without a timeout is never taken
                yield _Edge(name, target or _TIMED_OUT, route, "timeout", f"timeout after {ms} ms")
        elif route in params.pausing_routes():
            yield _Edge(name, target or _END, route, "resume", f"{route} (on resume)")
        else:
            yield _Edge(name, target or _END, route, "now", route)


def _jump_only(graph: CompiledGraph, edges: list[_Edge]) -> set[str]:
    """The nodes no walk from the start node reaches by its exits."""
    reached, todo = {graph.start_node}, [graph.start_node]
    while todo:
        node = todo.pop()
        for edge in edges:
            if edge.source == node and edge.target in graph.nodes and edge.target not in reached:
                reached.add(edge.target)
                todo.append(edge.target)
    return set(graph.nodes) - reached


def _node_lines(name: str, params: NodeParams, jump_only: bool) -> list[str]:
    lines = [name, params.node_type]
    if isinstance(params, ToolCallParams):
        for tool in params.tools:
            lines.append(f"{tool.name}({', '.join(p.name for p in tool.parameters)})")
    if params.pausing_routes():
        ms = _timeout_ms(params)
        lines.append(f"pauses, times out after {ms} ms" if ms else "pauses, waits for the host")
    if jump_only:
        lines.append("(reached only by a jump)")
    return lines


def graph_mermaid(graph: CompiledGraph, title: str = "agent") -> str:
    """The graph as a Mermaid flowchart, with a title and a legend."""
    edges = list(_edges(graph))
    jump_only = _jump_only(graph, edges)
    # Mermaid wraps labels at 200 px by default, which breaks every legend line in two.
    config = ["config:", "  flowchart:", "    wrappingWidth: 480"]
    lines = ["---", f"title: {title}", *config, "---", "flowchart LR"]
    lines += [f"  {_START}((start))", f"  {_END}(((END)))"]
    if any(edge.target == _TIMED_OUT for edge in edges):
        lines.append(f'  {_TIMED_OUT}((("END<br/>pause_timed_out")))')
    for name, params in graph.nodes.items():
        lines.append(f'  {name}["{"<br/>".join(_node_lines(name, params, name in jump_only))}"]')
        lines.append(f"  class {name} {params.node_type.lower()}")
        if params.pausing_routes():
            lines.append(f"  class {name} pausing")
        if name in jump_only:
            lines.append(f"  class {name} jumponly")
    lines.append(f"  {_START} --> {graph.start_node}")
    timeout_links = []
    for index, edge in enumerate(edges, start=1):  # link 0 is the start arrow
        arrow = "--" if edge.kind == "now" else "-."
        head = "-->" if edge.kind == "now" else ".->"
        lines.append(f'  {edge.source} {arrow} "{edge.label}" {head} {edge.target}')
        if edge.kind == "timeout":
            timeout_links.append(str(index))
    lines.append(f'  legend["{"<br/>".join(("Legend", *LEGEND))}"]')
    lines.append("  class legend legend")
    for node_type, color in TYPE_COLORS.items():
        lines.append(f"  classDef {node_type.lower()} fill:{color}")
    lines.append("  classDef pausing stroke-dasharray: 5 5")
    lines.append("  classDef jumponly fill:#eeeeee,stroke:#666666,stroke-dasharray: 2 2")
    lines.append("  classDef legend fill:#ffffff,stroke:#999999,text-align:left")
    if timeout_links:
        # linkStyle addresses links by their order of definition, the only handle Mermaid has.
        lines.append(f"  linkStyle {','.join(timeout_links)} stroke:{_TIMEOUT_COLOR},color:red")
    return "\n".join(lines) + "\n"


def graph_dot(graph: CompiledGraph, title: str = "agent") -> str:
    """The graph as Graphviz DOT source, with a title and a legend."""
    edges = list(_edges(graph))
    jump_only = _jump_only(graph, edges)
    dot = graphviz.Digraph(
        "agent",
        graph_attr={"rankdir": "LR", "label": title, "labelloc": "t", "fontname": "Helvetica"},
        node_attr={"fontname": "Helvetica"},
        edge_attr={"fontname": "Helvetica", "fontsize": "11"},
    )
    dot.node(_START, "start", shape="circle")
    dot.node(_END, "END", shape="doublecircle")
    if any(edge.target == _TIMED_OUT for edge in edges):
        dot.node(_TIMED_OUT, "END\\npause_timed_out", shape="doublecircle", color=_TIMEOUT_COLOR)
    for name, params in graph.nodes.items():
        label = "\\n".join(_node_lines(name, params, name in jump_only))
        if name in jump_only:
            style, extra = "rounded,dotted,filled", {"fillcolor": "gray93", "color": _JUMP_COLOR}
        else:
            style = "rounded,dashed,filled" if params.pausing_routes() else "rounded,filled"
            extra = {"fillcolor": TYPE_COLORS.get(params.node_type, "white")}
        dot.node(name, label, shape="box", style=style, **extra)
    dot.edge(_START, graph.start_node)
    for edge in edges:
        attrs = {"label": edge.label}
        if edge.kind == "resume":
            attrs["style"] = "dashed"
        elif edge.kind == "timeout":
            attrs.update(style="dashed", color=_TIMEOUT_COLOR, fontcolor=_TIMEOUT_COLOR)
        dot.edge(edge.source, edge.target, **attrs)
    legend = "Legend\\l" + "".join(f"{line}\\l" for line in LEGEND)
    dot.node("legend", legend, shape="note", fontsize="11", color="gray50")
    return str(dot.source)


def draw_graph(graph: GraphDescription, fmt: str = "mermaid", title: str = "agent") -> str:
    """Draw a graph description as 'mermaid' or 'dot' (it must be a valid graph)."""
    compiled = compile_graph(graph, lambda node, model, params: None)
    if fmt == "mermaid":
        return graph_mermaid(compiled, title)
    if fmt == "dot":
        return graph_dot(compiled, title)
    raise ValueError(f"unknown diagram format {fmt!r}; use 'mermaid' or 'dot'")
