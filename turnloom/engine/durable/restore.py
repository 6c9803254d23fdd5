"""Reading a snapshot back: check the whole document, then rebuild the agent
(docs/reference/durability.md#refused-snapshots).

`read_snapshot` checks everything and builds nothing the engine holds, so a refused snapshot
changes nothing; `apply_snapshot` then fills a new agent and cannot fail. What is refused:

* bytes that are not a msgpack map (truncated, garbage), a `format` that is not
  "turnloom.agent", a `version` this engine does not read, a field of the wrong type, and a
  document that contradicts itself or its graph (a pause at a node that does not pause, a call
  id the counter never handed out or handed to two pending calls, a call of a tool the node
  does not declare, changed params that touch a structural field, a fingerprint or version
  that is not its graph's): **3007** InvalidParamValue, the message starting "snapshot:" and
  naming the field;
* ids, counters and times past what the engine itself could reach or store (an agent id past
  `LARGEST_AGENT_ID`, a call counter past the ids' 8 hex digits, a NaN or infinite time, a
  deadline past its pause's timeout), and, in the `to_dict` form, values msgpack cannot hold:
  3007 too (`restore_checks`, which also checks the pause and its calls against the turn's
  messages, the dialog's call ids and each node's state);
* a graph that does not compile, or that names a model this engine does not have: the codes a
  `create_agent` of that graph gets (**3003** GraphCompilationFailed, 3007, 3008).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgpack

from ...states import InputPolicy, Rejection
from ..graph.builder import (
    CompiledGraph,
    GraphDescription,
    ModelCheck,
    answers_twice,
    compile_graph,
)
from ..graph.data import graph_from_data
from ..graph.fields import params_from_mapping
from ..graph.params import NodeParams, check_mutation
from ..graph.versions import graph_fingerprint
from ..support.guards import brief
from ..turns.agent_tags import checked_tags
from ..turns.dialog.messages import dialog_from_messages
from ..turns.dialog.projection import Interaction
from ..turns.input_queue import WaitingMessage, checked_policy
from ..turns.results import MessageFate, PauseInfo, TurnResult, TurnStatus
from .restore_checks import (
    CALL_IDS,
    CLOCKS,
    MAX_STEPS_PER_TURN,
    Doc,
    checked_node_state,
    dialog_call_ids,
    pause_info,
    pause_times,
    refuse,
    storable,
    turn_messages,
)
from .snapshot import FORMAT, RNG_STATE, VERSION, pack
from .store.base import LARGEST_AGENT_ID

#: Graphs by their packed document: restoring many agents of one graph decodes and checks it
#: once (and fingerprints it once: `graph_fingerprint` keeps the compiled graph's).
_GRAPHS: dict[bytes, GraphDescription] = {}
_GRAPHS_MAX = 256


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


def check_graph_names(raw: Mapping[str, Any], graph: CompiledGraph | GraphDescription) -> None:
    """The version and fingerprint the snapshot records (when it does) are its graph's, `graph`:
    a record that names another graph was edited, or put together from two documents."""
    recorded = raw.get("graph_fingerprint")
    if recorded is not None and recorded != (fingerprint := graph_fingerprint(graph)):
        raise refuse(
            f"graph_fingerprint {brief(recorded)} is not the fingerprint of the snapshot's "
            f"graph, {fingerprint}"
        )
    version = raw.get("graph_version")
    if version is not None and version != graph.version:
        raise refuse(
            f"graph_version {brief(version)} is not the version of the snapshot's graph, "
            f"{graph.version!r}"
        )


def _params(doc: Doc, graph: CompiledGraph) -> dict[str, NodeParams]:
    changed = doc.get("params", dict)
    params: dict[str, NodeParams] = {}
    for name, values in changed.items():
        base = graph.nodes.get(name) if isinstance(name, str) else None
        if base is None:
            raise refuse(f"params names node {brief(name)}, which is not in the graph")
        if not isinstance(values, Mapping):
            raise refuse(f"params[{brief(name)}] must be a map")
        try:
            proposed = params_from_mapping(type(base), values, base=base)
            check_mutation(name, base, proposed)
        except Rejection as exc:  # 3006 for a structural field, 3007 off range: the snapshot's
            raise refuse(f"params[{brief(name)}]: {exc.message}") from None
        params[name] = proposed
    merged = {**graph.nodes, **params}
    for name, proposed in params.items():
        if (twice := answers_twice(merged, name, proposed)) is not None:
            raise refuse(f"params[{brief(name)}]: {twice}")
    return params


def _result(doc: Doc | None) -> TurnResult | None:
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
        paused_duration_s=doc.duration("paused_duration_s"),
        pause_count=doc.count("pause_count"),
        debug_info=doc.get("debug_info", dict, nullable=True),
    )


def _turn(doc: Doc, plan: SnapshotPlan, params: dict[str, NodeParams]) -> PausedTurnPlan:
    pause = doc.sub("pause")
    node = pause.get("node_name", str)
    if node not in params:
        raise refuse(f"the turn is paused at node {brief(node)}, which is not in the graph")
    info = pause_info(pause, params[node], node, plan.call_seq)
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
    messages = doc.get("messages", list)
    interactions = dialog_from_messages([user, *messages], "snapshot: turn", copied=False)
    turn_messages(messages, info, plan.call_seq)  # one interaction: no user message in them
    paused_at, deadline = pause_times(pause, info.timeout_ms)
    reply_parts = doc.get("reply_parts", list)
    if not all(isinstance(part, str) for part in reply_parts):
        raise refuse("turn.reply_parts must be strings")
    pause_seq = doc.count("pause_seq", 1)
    counters = (
        doc.count("steps", 1, plan.max_steps),  # a turn stops at its max_steps_per_turn
        doc.count("tokens"),
        doc.count("pause_count", 1),
        pause_seq,
        doc.duration("paused_duration_s"),
    )
    return PausedTurnPlan(
        turn_id=doc.count("turn_id", 1),
        interaction=interactions[0],
        counters=counters,
        reply_parts=reply_parts,
        debug_nodes=debug_nodes,
        info=info,
        timeout_target=timeout_target,
        debug_index=debug_index,
        paused_at=paused_at,
        deadline=deadline,
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
    if isinstance(data, bytes | bytearray | memoryview):
        raw = unpacked(data)
        Doc(raw, "snapshot")  # a map, or 3007
    else:
        raw = data
        Doc(raw, "snapshot")
        storable(raw)  # the to_dict form may hold what no snapshot's bytes can
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
    doc = Doc(raw, "snapshot")
    parts = raw.get("dialog")
    if parts.__class__ is int:  # a store's head read without its parts (`store.parts`)
        raise refuse(
            f"dialog is kept apart in {parts} part(s) of the store, which were not all read "
            "with it (a part is missing, or the head was read alone)"
        )
    graph = _graph(raw.get("graph"), check_model)
    check_graph_names(raw, graph)
    options = doc.sub("options")
    messages = doc.get("dialog", list)
    plan = SnapshotPlan(
        agent_id=doc.count("agent_id", 1, LARGEST_AGENT_ID),
        # Its first id (`AgentCore.rng`), kept when a restore gives it another: an id's range.
        rng_seed=doc.count("rng_seed", 0, LARGEST_AGENT_ID),
        tags=checked_tags(raw.get("tags"), "snapshot"),
        graph=graph,
        enable_diagnostics=options.get("enable_diagnostics", bool),
        max_steps=options.count("max_steps_per_turn", 1, MAX_STEPS_PER_TURN),
        params=_params(doc, graph),
        dialog=dialog_from_messages(messages, "snapshot", copied=False),
        # Below the last id of 8 hex digits: the next id handed out must be read back too.
        call_seq=doc.count("call_seq", 0, CALL_IDS - 1),
        node_state={},
        rng_state=_rng(raw.get("rng_state")),
        # Present is a map (a result), absent or null is none: not any falsy value.
        last_result=_result(doc.sub("last_result") if raw.get("last_result") is not None else None),
        turn=None,
    )
    dialog_call_ids(messages, plan.call_seq)
    nodes = {**graph.nodes, **plan.params}
    plan.node_state = checked_node_state(raw.get("node_state"), nodes)
    if raw.get("turn") is not None:
        plan.turn = _turn(doc.sub("turn"), plan, nodes)
    plan.input_policy = checked_policy(
        options.data.get("input_policy", InputPolicy.REJECT.value), "snapshot: options"
    )
    if raw.get("queue") is not None:
        plan.queue = _queue(doc)
    if raw.get("lineage") is not None:
        plan.lineage = _lineage(doc)
    if raw.get("clock") is not None and raw.get("clock") not in CLOCKS:
        raise refuse(f"clock must be one of {', '.join(CLOCKS)}, got {brief(raw.get('clock'))}")
    if raw.get("saved_at") is not None:
        plan.saved_at = doc.moment("saved_at")
    return plan


#: The most ancestors a snapshot keeps (a fork of a fork of ... keeps the newest).
MAX_LINEAGE = 32
_QUEUED_FATES = frozenset({MessageFate.STARTED, MessageFate.INTERRUPTED, MessageFate.MERGED})


def _lineage(doc: Doc) -> tuple[Mapping[str, Any], ...]:
    items = doc.get("lineage", list)
    if not 1 <= len(items) <= MAX_LINEAGE:
        raise refuse(f"snapshot.lineage, when present, holds 1 … {MAX_LINEAGE} steps")
    docs = [Doc(item, f"snapshot.lineage[{i}]") for i, item in enumerate(items)]
    return tuple(
        {
            "agent_id": step.count("agent_id", 1, LARGEST_AGENT_ID),
            "slot": step.get("slot", str),
            "turns": step.count("turns"),
            "time": step.moment("time"),
        }
        for step in docs
    )


def _queue(doc: Doc) -> list[WaitingMessage]:
    """The waiting messages (an idle agent may hold some: it stopped between a turn's end and
    the start of the next)."""
    items = doc.get("queue", list)
    if not items:
        raise refuse("snapshot.queue, when present, holds at least one message")
    queue = []
    for index, item in enumerate(items):
        entry = Doc(item, f"snapshot.queue[{index}]")
        fate = entry.get("fate", str)
        if fate not in _QUEUED_FATES:
            raise refuse(f"snapshot.queue[{index}].fate {brief(fate)} is not a waiting one")
        text, replaced = entry.get("text", str), entry.count("replaced")
        queue.append(WaitingMessage(text, None, MessageFate(fate), replaced))
    return queue
