"""Reading a snapshot back: check the whole document, then rebuild the agent
(docs/reference/durability.md#refused-snapshots).

`read_snapshot` checks everything and builds nothing the engine holds, so a refused snapshot
changes nothing; `apply_snapshot` then fills a new agent and cannot fail. What is refused:

* bytes that are not a msgpack map (truncated, garbage), a `format` that is not
  "turnloom.agent", a `version` this engine does not read, a field of the wrong type, and a
  document that contradicts itself or its graph (a pause at a node that does not pause, a call
  id the counter never handed out or handed to two pending calls, a call of a tool the node
  does not declare, changed params that touch a structural field): **3007** InvalidParamValue,
  the message starting "snapshot:" and naming the field;
* a graph that does not compile, or that names a model this engine does not have: the codes a
  `create_agent` of that graph gets (**3003** GraphCompilationFailed, 3007, 3008).

The module is longer than 400 lines because it is one job done in one pass: every field a
snapshot may hold (turn, pause, calls, queue, lineage) is checked here before anything is built,
and splitting the checks would split the one place that says what a valid snapshot is.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgpack

from ...states import InputPolicy
from ..graph.builder import (
    CompiledGraph,
    GraphDescription,
    ModelCheck,
    answers_twice,
    compile_graph,
)
from ..graph.data import graph_from_data
from ..graph.fields import params_from_mapping
from ..graph.params import NodeParams, ToolCallDisposition, ToolCallParams, check_mutation
from ..support.guards import brief
from ..support.rejections import InvalidParamValue
from ..turns.agent_tags import checked_tags
from ..turns.dialog.messages import dialog_from_messages
from ..turns.dialog.projection import Interaction
from ..turns.input_queue import WaitingMessage, checked_policy
from ..turns.results import MessageFate, PauseInfo, ToolCallEvent, TurnResult, TurnStatus
from .snapshot import FORMAT, RNG_STATE, VERSION, pack

_CALL_ID = re.compile(r"c([0-9a-f]{8})")
_GRAPHS: dict[bytes, GraphDescription] = {}
_GRAPHS_MAX = 256
_NUMBER = (int, float)


class _Doc:
    """Typed reads of one map of the document; a miss is the snapshot's 3007."""

    __slots__ = ("data", "where")

    def __init__(self, data: Any, where: str) -> None:
        if data.__class__ is not dict and not isinstance(data, Mapping):
            raise refuse(f"{where} must be a map, got {type(data).__name__}")
        self.data = data
        self.where = where

    def get(self, key: str, types: type | tuple[type, ...], *, nullable: bool = False) -> Any:
        value = self.data.get(key)
        # The common case first, and cheap: 100,000 agents restored read 3.7 million fields.
        if isinstance(value, types) and value.__class__ is not bool:
            return value
        if value is None and nullable:
            return None
        if isinstance(value, bool) and bool in _tuple(types):
            return value
        raise refuse(f"{self.where}.{key} must be {_names(types)}, got {brief(value)}")

    def count(self, key: str, minimum: int = 0) -> int:
        value: int = self.get(key, int)
        if value < minimum:
            raise refuse(f"{self.where}.{key} must be >= {minimum}, got {value}")
        return value

    def sub(self, key: str) -> _Doc:
        return _Doc(self.data.get(key), f"{self.where}.{key}")


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _names(types: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _tuple(types))


def refuse(reason: str) -> InvalidParamValue:
    """The 3007 of a snapshot that cannot be restored."""
    return InvalidParamValue(f"snapshot: {reason}; nothing was restored")


@dataclass(slots=True)
class PausedTurnPlan:
    """A paused turn as read from a snapshot, checked."""

    turn_id: int
    interaction: Interaction
    counters: tuple[int, int, int, int, float]  # steps, tokens, pause_count, pause_seq, paused
    reply_parts: list[str]
    debug_nodes: list[dict[str, Any]] | None
    info: PauseInfo
    timeout_target: str
    debug_index: int | None
    paused_at: float
    deadline: float | None


@dataclass(slots=True)
class SnapshotPlan:
    """Everything a snapshot restores, checked; `apply_snapshot` puts it into an agent."""

    agent_id: int
    rng_seed: int
    tags: Mapping[str, str]
    graph: CompiledGraph
    enable_diagnostics: bool
    max_steps: int
    params: dict[str, NodeParams]
    dialog: list[Interaction]
    call_seq: int
    node_state: dict[str, dict[str, Any]]
    rng_state: tuple[int, ...] | None
    last_result: TurnResult | None
    turn: PausedTurnPlan | None
    input_policy: InputPolicy = InputPolicy.REJECT
    queue: list[WaitingMessage] | None = None
    lineage: tuple[Mapping[str, Any], ...] = ()
    #: When the snapshot was taken (absolute seconds; None when it does not say).
    saved_at: float | None = None

    @property
    def max_turn_id(self) -> int:
        """The largest turn id the agent has used (the engine's ids continue past it)."""
        last = self.last_result.turn_id if self.last_result is not None else 0
        return max(last, self.turn.turn_id if self.turn is not None else 0)


def unpacked(data: bytes | bytearray | memoryview) -> Any:
    """msgpack bytes decoded, or the snapshot's 3007."""
    try:
        return msgpack.unpackb(data, raw=False)
    except Exception as exc:  # msgpack raises several types for cut or garbled input
        raise refuse(f"not a msgpack document ({type(exc).__name__}: {brief(str(exc))})") from None


def _graph(blob: Any, check_model: ModelCheck) -> CompiledGraph:
    if isinstance(blob, Mapping):  # the to_dict form
        blob = pack(blob)
    if not isinstance(blob, bytes):
        raise refuse(f"graph must be a packed graph document, got {type(blob).__name__}")
    description = _GRAPHS.get(blob)
    if description is None:
        data = unpacked(blob)
        if not isinstance(data, Mapping):
            raise refuse(f"graph must be a map, got {type(data).__name__}")
        description = graph_from_data(data)
        if len(_GRAPHS) >= _GRAPHS_MAX:
            _GRAPHS.clear()
    compiled = compile_graph(description, check_model)  # cached by the description itself
    _GRAPHS[blob] = description  # only once it compiled: a bad graph is not kept
    return compiled


def _params(doc: _Doc, graph: CompiledGraph) -> dict[str, NodeParams]:
    changed = doc.get("params", dict)
    params: dict[str, NodeParams] = {}
    for name, values in changed.items():
        base = graph.nodes.get(name) if isinstance(name, str) else None
        if base is None:
            raise refuse(f"params names node {brief(name)}, which is not in the graph")
        if not isinstance(values, Mapping):
            raise refuse(f"params[{brief(name)}] must be a map")
        proposed = params_from_mapping(type(base), values, base=base)
        check_mutation(name, base, proposed)  # 3006 for a structural change, 3007 off range
        params[name] = proposed
    merged = {**graph.nodes, **params}
    for name, proposed in params.items():
        if (twice := answers_twice(merged, name, proposed)) is not None:
            raise refuse(f"params[{brief(name)}]: {twice}")
    return params


def _result(doc: _Doc | None) -> TurnResult | None:
    if doc is None:
        return None
    try:
        status = TurnStatus(doc.get("status", str))
    except ValueError:
        raise refuse(f"last_result.status {brief(doc.data.get('status'))} is unknown") from None
    return TurnResult(
        turn_id=doc.count("turn_id", 1),
        status=status,
        text=doc.get("text", str),
        tokens_generated=doc.count("tokens_generated"),
        error_code=doc.get("error_code", int, nullable=True),
        error_message=doc.get("error_message", str),
        paused_duration_s=float(doc.get("paused_duration_s", _NUMBER)),
        pause_count=doc.count("pause_count"),
        debug_info=doc.get("debug_info", dict, nullable=True),
    )


def _calls(doc: _Doc, params: NodeParams, node: str, call_seq: int) -> tuple[ToolCallEvent, ...]:
    declared = {tool.name for tool in params.tools} if isinstance(params, ToolCallParams) else set()
    calls: list[ToolCallEvent] = []
    for index, item in enumerate(doc.get("pending_calls", list)):
        where = f"{doc.where}.pending_calls[{index}]"
        call = _Doc(item, where)
        call_id = call.get("call_id", str)
        match = _CALL_ID.fullmatch(call_id)
        if match is None or int(match.group(1), 16) >= call_seq:
            raise refuse(f"call id {brief(call_id)} was never handed out (call_seq {call_seq})")
        if any(earlier.call_id == call_id for earlier in calls):
            # Results are matched to calls by id: two calls with one id could not both be answered.
            raise refuse(f"{where}.call_id {call_id} is already the id of an earlier pending call")
        if call.get("node_name", str) != node:
            raise refuse(f"call {call_id} belongs to another node than the pause's")
        tool_name = call.get("tool_name", str)
        if tool_name not in declared:
            raise refuse(
                f"{where}.tool_name {brief(tool_name)} is not a tool node '{node}' declares "
                f"({', '.join(sorted(declared)) or 'none'})"
            )
        calls.append(
            ToolCallEvent(
                call_id=call_id,
                tool_name=tool_name,
                arguments_json=call.get("arguments_json", str),
                node_name=node,
                disposition=call.get("disposition", str),
                arguments=call.get("arguments", dict),
                unread_arguments=_unread(call),
            )
        )
    return tuple(calls)


def _unread(call: _Doc) -> tuple[str, ...]:
    if call.data.get("unread_arguments") is None:
        return ()
    names = call.get("unread_arguments", list)
    if not all(isinstance(name, str) for name in names):
        raise refuse(f"{call.where}.unread_arguments must be argument names")
    return tuple(names)


def _pause(doc: _Doc, params: NodeParams, node: str, call_seq: int) -> PauseInfo:
    exit_route = doc.get("pending_exit", str)
    timeout_ms = doc.count("timeout_ms")
    awaits = doc.get("awaits_results", bool)
    info = PauseInfo(
        node, exit_route, doc.get("pending_target", str), timeout_ms,
        _calls(doc, params, node, call_seq), awaits,
    )  # fmt: skip
    is_await = (
        isinstance(params, ToolCallParams) and params.disposition is ToolCallDisposition.AwaitResult
    )
    if (
        exit_route not in params.pausing_routes()
        or info.pending_target != params.exit_target(exit_route)
        or timeout_ms != getattr(params, "pause_timeout_ms", 0)
        or awaits != is_await
        or (bool(info.pending_calls) != isinstance(params, ToolCallParams))
    ):
        raise refuse(f"the pause at node '{node}' does not fit the node's params")
    return info


def _turn(doc: _Doc, plan: SnapshotPlan, params: dict[str, NodeParams]) -> PausedTurnPlan:
    pause = doc.sub("pause")
    node = pause.get("node_name", str)
    if node not in params:
        raise refuse(f"the turn is paused at node {brief(node)}, which is not in the graph")
    info = _pause(pause, params[node], node, plan.call_seq)
    timeout_target = pause.get("timeout_target", str)
    expected_target = params[node].exit_target("timeout") if info.timeout_ms else ""
    if timeout_target != expected_target:
        raise refuse(f"turn.pause.timeout_target must be {brief(expected_target)}")
    debug_nodes = doc.get("debug_nodes", list, nullable=True)
    if (debug_nodes is not None) != plan.enable_diagnostics or not all(
        isinstance(entry, dict) for entry in debug_nodes or ()
    ):
        raise refuse("turn.debug_nodes must be a list of maps exactly when diagnostics are on")
    debug_index = pause.get("debug_index", int, nullable=True)
    if debug_index is not None and not 0 <= debug_index < len(debug_nodes or ()):
        raise refuse(f"turn.pause.debug_index {debug_index} is out of range")
    user = {"role": "user", "content": doc.get("user_message", str)}
    messages = [user, *doc.get("messages", list)]
    (interaction,) = dialog_from_messages(messages, "snapshot: turn", copied=False)
    deadline = pause.get("deadline", _NUMBER, nullable=True)
    if (deadline is None) != (info.timeout_ms == 0):
        raise refuse("turn.pause.deadline must be set exactly when the pause has a timeout")
    reply_parts = doc.get("reply_parts", list)
    if not all(isinstance(part, str) for part in reply_parts):
        raise refuse("turn.reply_parts must be strings")
    pause_seq = doc.count("pause_seq", 1)
    counters = (
        doc.count("steps", 1),
        doc.count("tokens"),
        doc.count("pause_count", 1),
        pause_seq,
        float(doc.get("paused_duration_s", _NUMBER)),
    )
    return PausedTurnPlan(
        turn_id=doc.count("turn_id", 1),
        interaction=interaction,
        counters=counters,
        reply_parts=reply_parts,
        debug_nodes=debug_nodes,
        info=info,
        timeout_target=timeout_target,
        debug_index=debug_index,
        paused_at=float(pause.get("paused_at", _NUMBER)),
        deadline=None if deadline is None else float(deadline),
    )


def _rng(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, bytes) or len(value) != RNG_STATE.size:
        raise refuse(f"rng_state must be {RNG_STATE.size} bytes")
    words = RNG_STATE.unpack(value)
    try:
        random.Random().setstate((3, words, None))
    except (ValueError, TypeError):
        raise refuse("rng_state is not a random source's state") from None
    return tuple(words)


def snapshot_header(data: Any) -> Mapping[str, Any]:
    """The snapshot's document (bytes unpacked), once its format and version are the ones read
    here (3007 otherwise)."""
    raw = unpacked(data) if isinstance(data, bytes | bytearray | memoryview) else data
    _Doc(raw, "snapshot")  # a map, or 3007
    if raw.get("format") != FORMAT:
        raise refuse(f"format must be {FORMAT!r}, got {brief(raw.get('format'))}")
    # `True == 1` in Python: the class check keeps a bool (or a float) from passing as the int.
    if raw.get("version").__class__ is not int or raw.get("version") != VERSION:
        raise refuse(f"version {brief(raw.get('version'))} is not {VERSION}, the one read here")
    return raw


def read_snapshot(data: Any, check_model: ModelCheck) -> SnapshotPlan:
    """Check a snapshot (bytes, or its `to_dict` form) against this engine's models; nothing
    is created (see the module's docstring for what is refused, and with which code)."""
    raw = snapshot_header(data)
    doc = _Doc(raw, "snapshot")
    parts = raw.get("dialog")
    if parts.__class__ is int:  # a store's head read without its parts (`store.parts`)
        raise refuse(
            f"dialog is kept apart in {parts} part(s) of the store, which were not all read "
            "with it (a part is missing, or the head was read alone)"
        )
    graph = _graph(raw.get("graph"), check_model)
    options = doc.sub("options")
    node_state = doc.get("node_state", dict)
    if not all(isinstance(k, str) and isinstance(v, dict) for k, v in node_state.items()):
        raise refuse("node_state must map node names to maps")
    plan = SnapshotPlan(
        agent_id=doc.count("agent_id", 1),
        rng_seed=doc.get("rng_seed", int),
        tags=checked_tags(raw.get("tags"), "snapshot"),
        graph=graph,
        enable_diagnostics=options.get("enable_diagnostics", bool),
        max_steps=options.count("max_steps_per_turn", 1),
        params=_params(doc, graph),
        dialog=dialog_from_messages(doc.get("dialog", list), "snapshot", copied=False),
        call_seq=doc.count("call_seq"),
        node_state=node_state,
        rng_state=_rng(raw.get("rng_state")),
        last_result=_result(doc.sub("last_result") if raw.get("last_result") else None),
        turn=None,
    )
    if raw.get("turn") is not None:
        plan.turn = _turn(doc.sub("turn"), plan, {**graph.nodes, **plan.params})
    plan.input_policy = checked_policy(
        options.data.get("input_policy", InputPolicy.REJECT.value), "snapshot: options"
    )
    if raw.get("queue") is not None:
        plan.queue = _queue(doc)
    if raw.get("lineage") is not None:
        plan.lineage = _lineage(doc)
    saved_at = raw.get("saved_at")
    if isinstance(saved_at, int | float) and not isinstance(saved_at, bool):
        plan.saved_at = float(saved_at)
    return plan


#: The most ancestors a snapshot keeps (a fork of a fork of ... keeps the newest).
MAX_LINEAGE = 32
_LINEAGE_FIELDS = (("agent_id", int), ("slot", str), ("turns", int), ("time", _NUMBER))
_QUEUED_FATES = frozenset({MessageFate.STARTED, MessageFate.INTERRUPTED, MessageFate.MERGED})


def _lineage(doc: _Doc) -> tuple[Mapping[str, Any], ...]:
    items = doc.get("lineage", list)
    if not 1 <= len(items) <= MAX_LINEAGE:
        raise refuse(f"snapshot.lineage, when present, holds 1 … {MAX_LINEAGE} steps")
    docs = [_Doc(item, f"snapshot.lineage[{i}]") for i, item in enumerate(items)]
    return tuple({key: step.get(key, kind) for key, kind in _LINEAGE_FIELDS} for step in docs)


def _queue(doc: _Doc) -> list[WaitingMessage]:
    """The waiting messages (an idle agent may hold some: it stopped between a turn's end and
    the start of the next)."""
    items = doc.get("queue", list)
    if not items:
        raise refuse("snapshot.queue, when present, holds at least one message")
    queue = []
    for index, item in enumerate(items):
        entry = _Doc(item, f"snapshot.queue[{index}]")
        fate = entry.get("fate", str)
        if fate not in _QUEUED_FATES:
            raise refuse(f"snapshot.queue[{index}].fate {brief(fate)} is not a waiting one")
        text, replaced = entry.get("text", str), entry.count("replaced")
        queue.append(WaitingMessage(text, None, MessageFate(fate), replaced))
    return queue
