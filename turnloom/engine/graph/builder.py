"""Graphs: the fluent builder and compilation into a frozen, validated graph
(docs/reference/graphs.md#validation-at-agent-creation)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from ..support.guards import brief
from ..support.rejections import GraphCompilationFailed, InvalidExitTarget
from .params import (
    GenerateParams,
    NodeParams,
    PauseParams,
    ToolCallMode,
    ToolCallParams,
    validate_params,
)

#: Nodes one graph may hold. Game agents use a handful; the cap keeps the validation of one
#: graph (tens of µs per node) from holding the engine loop.
MAX_NODES = 256


def too_many_nodes(count: int) -> GraphCompilationFailed | None:
    """The 3003 for a graph of `count` nodes, if that is over `MAX_NODES`."""
    if count <= MAX_NODES:
        return None
    return GraphCompilationFailed(f"graph has {count} nodes, over the limit of {MAX_NODES}")


#: The longest version string a graph may carry.
MAX_VERSION_CHARS = 64


class GraphDescription:
    """A graph under construction: named nodes with typed params, a start node, a default model.

    Nothing is checked while building; `Engine.create_agent` validates the whole graph.
    """

    def __init__(self) -> None:
        self.nodes: list[tuple[str, NodeParams]] = []
        self.start_node: str = ""
        self.default_model_name: str = ""
        #: The game's name for this revision of the graph (kept in snapshots; '' = none).
        self.version: str = ""
        # The last compilation and the description it was made from (see `compile_graph`).
        #: The last compiled copy, reused while the description still equals it.
        self._compiled: CompiledGraph | None = None

    def _compiles_to(self, compiled: CompiledGraph) -> bool:
        """Whether compiling this description now would give `compiled` (whose params are a
        private copy nobody changes, so it is its own record of what it was made from)."""
        return (
            self.start_node == compiled.start_node
            and self.default_model_name == compiled.default_model_name
            and self.version == compiled.version
            and self.nodes == list(compiled.nodes.items())
        )

    def add_node(self, name: str, params: NodeParams) -> GraphDescription:
        """Add a node; its type is the type of `params`."""
        self.nodes.append((name, params))
        return self

    def set_start_node(self, name: str) -> GraphDescription:
        """Name the node every turn starts at."""
        self.start_node = name
        return self

    def set_default_model_name(self, name: str) -> GraphDescription:
        """Name the model used by nodes whose `model_name` is empty."""
        self.default_model_name = name
        return self

    def set_version(self, version: str) -> GraphDescription:
        """Name this revision of the graph (e.g. "1.2"): snapshots record it, and restoring one
        into a graph of another structure names both
        (docs/reference/durability.md#graph-versions)."""
        self.version = version
        return self


@dataclass(frozen=True, slots=True)
class CompiledGraph:
    """A validated graph. Its params are the baseline every agent created from it starts with."""

    nodes: Mapping[str, NodeParams]
    start_node: str
    default_model_name: str
    #: The description's `version` ('' = none).
    version: str = ""

    def __iter__(self) -> Iterator[str]:
        return iter(self.nodes)

    def model_for(self, params: NodeParams) -> str:
        """The model a model-using node runs on."""
        return str(getattr(params, "model_name", "")) or self.default_model_name

    def edges(self) -> Iterator[tuple[str, str, str]]:
        """Every wired exit as (node, route, target); target '' is END."""
        for name, params in self.nodes.items():
            for route in params.exit_routes:
                yield name, route, params.exit_target(route)


#: Checks a node's params against the engine's models: returns an error text or None.
ModelCheck = Callable[[str, str, NodeParams], str | None]


def compile_graph(graph: GraphDescription, check_model: ModelCheck) -> CompiledGraph:
    """Validate `graph` and freeze a private copy of it; raise 3003/3007/3008 rejections.

    Agents made from an unchanged description share one compiled graph: comparing the params
    with the last compiled copy is much cheaper than copying and validating them again.
    """
    cached = graph._compiled
    if cached is not None and graph._compiles_to(cached):
        compiled = cached
    else:
        compiled = graph._compiled = _compile(graph)
    for name, params in compiled.nodes.items():
        if not params.uses_model:
            continue
        model = compiled.model_for(params)
        if not model:
            raise GraphCompilationFailed(
                f"node {brief(name)}: field 'model_name' is empty and the graph has no default "
                "model"
            )
        err = check_model(name, model, params)
        if err:
            raise GraphCompilationFailed(f"node {brief(name)}: {err}")
    return compiled


def _compile(graph: GraphDescription) -> CompiledGraph:
    if not graph.nodes:
        raise GraphCompilationFailed("graph has no nodes")
    if (refused := too_many_nodes(len(graph.nodes))) is not None:
        raise refused
    nodes: dict[str, NodeParams] = {}
    for name, params in graph.nodes:
        if not isinstance(name, str) or not name:
            raise GraphCompilationFailed(f"node name {brief(name)} must be a non-empty string")
        if name in nodes:
            raise GraphCompilationFailed(f"node {brief(name)} is defined more than once")
        if not isinstance(params, NodeParams) or not params.node_type:
            raise GraphCompilationFailed(
                f"node {brief(name)}: params must be a node params object, "
                f"got {type(params).__name__}"
            )
        # Copies follow the declared field types, so a hostile value is not walked here; the
        # validation below refuses it.
        nodes[name] = copy.deepcopy(params)
    if not isinstance(graph.start_node, str):
        raise GraphCompilationFailed(
            f"the start node must be a string, got {type(graph.start_node).__name__}"
        )
    if not isinstance(graph.default_model_name, str):
        raise GraphCompilationFailed(
            "the default model name must be a string, "
            f"got {type(graph.default_model_name).__name__}"
        )
    if not graph.start_node:
        raise GraphCompilationFailed("graph has no start node")
    if graph.start_node not in nodes:
        raise GraphCompilationFailed(f"start node {brief(graph.start_node)} is not in the graph")
    for name, params in nodes.items():
        validate_params(name, params)
    for name, params in nodes.items():
        for route in params.exit_routes:
            target = params.exit_target(route)
            if target and target not in nodes:
                raise InvalidExitTarget(
                    f"node {brief(name)}: field '{route}_exit' names {brief(target)}, "
                    "which is not in the graph"
                )
    for name, params in nodes.items():
        if (reason := answers_twice(nodes, name, params)) is not None:
            raise GraphCompilationFailed(reason)
    if not isinstance(graph.version, str) or len(graph.version) > MAX_VERSION_CHARS:
        raise GraphCompilationFailed(
            f"the graph's version must be a string of at most {MAX_VERSION_CHARS} characters, "
            f"got {brief(graph.version)}"
        )
    return CompiledGraph(nodes, graph.start_node, graph.default_model_name, graph.version)


def answers_twice(nodes: Mapping[str, NodeParams], name: str, params: NodeParams) -> str | None:
    """Why node `name` with `params` (in a graph of `nodes`) would answer the player twice in
    one turn, or None.

    A ToolCall node in `call_or_answer` mode replies itself when no tool is called; if its
    `no_tool_called` exit then leads to a Generate node (directly or through Pause nodes), that
    node replies again. Such a graph meant `detect_only`, so it is refused rather than run.
    """
    if not isinstance(params, ToolCallParams) or params.mode != ToolCallMode.CallOrAnswer:
        return None
    # Depth first from the exit, through Pause nodes (a pause passes the turn on, by either of
    # its exits), to the first Generate node.
    stack: list[tuple[str, tuple[str, ...]]] = [(params.no_tool_called_exit, ())]
    seen: set[str] = set()
    while stack:
        target, path = stack.pop()
        node = nodes.get(target) if target and target not in seen else None
        if node is None:
            continue
        seen.add(target)
        if isinstance(node, GenerateParams):
            through = f" (through {', '.join(map(brief, path))})" if path else ""
            return (
                f"node {brief(name)}: mode 'call_or_answer' already answers the player when no "
                f"tool is called, and its no_tool_called_exit leads to Generate node "
                f"{brief(target)}{through}, which would answer a second time; set "
                f"mode='detect_only' on {brief(name)} to let {brief(target)} answer alone, or "
                "route no_tool_called_exit elsewhere"
            )
        if isinstance(node, PauseParams):
            for route in reversed(node.exit_routes):
                stack.append((node.exit_target(route), (*path, target)))
    return None
