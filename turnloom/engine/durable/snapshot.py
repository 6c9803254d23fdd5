"""Agent snapshots: one agent as a versioned, self-describing msgpack document
(docs/reference/durability.md#snapshots).

A snapshot holds everything an agent's future depends on: its graph, the params changed since
it was created, its options, the dialog, the call-id counter, per-node state (CannedResponse's
cycle), its random source once used, its last result, and a paused turn when it stands at a
pause. It is taken only where the agent stands still (idle or paused): a running turn is in the
middle of a node, which no document can hold.

The document (version 1), as `AgentSnapshot.to_dict()` shows it:

    format        "turnloom.agent"
    version       1
    agent_id      the id it had (restores keep it when it is free)
    rng_seed      what its random source was seeded with (its first id)
    tags          the host's labels for it, {str: str} (`agent_tags`)
    graph         the graph as `graph_data.graph_to_data` writes it. In the bytes form it is
                  itself a msgpack document (a `bin`): identical graphs are identical bytes, so
                  restoring many agents of one graph decodes and checks it once.
    graph_version the graph's version string ('' when the game gave none)
    graph_fingerprint  16 hex digits of the graph's structure (`graph.versions`)
    options       {"enable_diagnostics": bool, "max_steps_per_turn": int}, and
                  "input_policy" when it is not "reject"
    lineage       only for an agent loaded from a save slot or forked: where it came from,
                  oldest first, [{agent_id, slot, turns, time}]
    queue         only when messages wait (`enqueue` input policy): [{text, fate, replaced}]
    params        {node: fields} for the nodes whose params differ from the graph's
    call_seq      how many call ids it has handed out (the next is `c%08x` of this)
    node_state    {node: {key: value}}
    rng_state     null, or its random source's state once used (the 625 words of MT19937)
    last_result   null, or its last turn's result (the fields of `TurnResult`)
    clock         "virtual" or "wall": what the absolute times below are measured in
    saved_at      the absolute time it was taken
    turn          null, or the paused turn: turn_id, user_message, messages, steps, tokens,
                  reply_parts, debug_nodes, pause_count, pause_seq, paused_duration_s, and
                  pause: node_name, pending_exit, pending_target, timeout_ms, awaits_results,
                  pending_calls, timeout_target, debug_index, paused_at, deadline
    dialog        flat chat messages (`turns.dialog.messages`); the last entry, so a store
                  can keep it apart and put it back (`store.parts`)

**Absolute times.** An engine's clock is monotonic, meaningless in another process; a snapshot
keeps times (`paused_at`, `deadline`, `saved_at`) as absolute seconds instead. On the wall
clock (`LoopClock`, or any clock but a `VirtualClock`) that is Unix time, `time.time()`: the
clock's reading plus the offset between the two, measured when the snapshot is taken and again
when it is restored, so a deadline keeps its place in real time across a restart and one that
passed while nothing ran fires at once. On a `VirtualClock` the virtual time *is* the absolute
time (a test restores into `VirtualClock(start=later)` to let time pass); restore a virtual
snapshot on a virtual clock.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgpack

from ...states import InputPolicy
from ..graph.builder import CompiledGraph
from ..graph.data import graph_to_data
from ..graph.fields import params_to_mapping
from ..graph.versions import graph_fingerprint
from ..support.clock import Clock, VirtualClock
from ..turns.dialog.messages import dialog_to_messages
from ..turns.results import ToolCallEvent
from ..turns.turn import Turn

if TYPE_CHECKING:
    from ..turns.agent import AgentCore
    from ..turns.runtime import Runtime

#: The document's `format` and the one `version` this engine reads and writes.
FORMAT = "turnloom.agent"
VERSION = 1
#: The words of a `random.Random` state (MT19937's 624 plus its index).
RNG_WORDS = 625
RNG_STATE = struct.Struct(f"<{RNG_WORDS}I")

_PACKER = msgpack.Packer(use_bin_type=True)
_GRAPH_BLOBS: dict[int, tuple[CompiledGraph, bytes]] = {}
_GRAPH_BLOBS_MAX = 1024


class AgentSnapshot(bytes):
    """A snapshot's msgpack bytes (store them, send them, `engine.restore` them), which can also
    show themselves as plain data."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        """The document as plain data, its graph decoded too."""
        doc = dict(msgpack.unpackb(self, raw=False))
        doc["graph"] = msgpack.unpackb(doc["graph"], raw=False)
        return doc

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> AgentSnapshot:
        """The bytes of a document in the `to_dict` form (unchecked: `restore` checks it)."""
        doc = dict(doc)
        if isinstance(doc.get("graph"), Mapping):
            doc["graph"] = pack(doc["graph"])
        return cls(pack(doc))


def pack(value: Any) -> bytes:
    """`value` as msgpack (str as str, bytes as bin)."""
    packed: bytes = msgpack.packb(value, use_bin_type=True)
    return packed


def clock_kind(clock: Clock) -> str:
    """What a clock's absolute times are: "virtual" time or "wall" (Unix) time."""
    return "virtual" if isinstance(clock, VirtualClock) else "wall"


def absolute_offset(clock: Clock) -> float:
    """What to add to `clock.now()` to get absolute time (see the module's docstring)."""
    return 0.0 if isinstance(clock, VirtualClock) else time.time() - clock.now()


def now_and_offset(runtime: Runtime) -> tuple[float, float]:
    """The engine clock's time and its `absolute_offset`, from one reading of the clock (a
    snapshot's `saved_at` and its paused turn's times agree to the last digit). Read as the
    turn logs read it (`runtime.log_time`: on a loop clock, `time.monotonic` itself, where
    `clock.now()` is two Python calls), at every write of every durable agent."""
    now = runtime.log_time()
    return now, 0.0 if isinstance(runtime.clock, VirtualClock) else time.time() - now


def pause_deadline(turn: Turn, offset: float) -> float | None:
    """When `turn`'s pause times out, in absolute time (`offset` from `absolute_offset`), or
    None if it is not paused or waits forever."""
    pause = turn.pause
    if pause is None or not pause.info.timeout_ms:
        return None
    return pause.started_at + pause.info.timeout_ms / 1000 + offset


def graph_blob(graph: CompiledGraph) -> bytes:
    """The graph's document, packed once per compiled graph (agents share compiled graphs)."""
    cached = _GRAPH_BLOBS.get(id(graph))
    if cached is not None and cached[0] is graph:
        return cached[1]
    blob = pack(graph_to_data(graph))
    if len(_GRAPH_BLOBS) >= _GRAPH_BLOBS_MAX:
        _GRAPH_BLOBS.clear()
    _GRAPH_BLOBS[id(graph)] = (graph, blob)
    return blob


def _changed_params(agent: AgentCore) -> dict[str, Any]:
    if agent.params is agent.graph.nodes:  # copy on write: never changed
        return {}
    base = agent.graph.nodes
    return {
        name: params_to_mapping(params)
        for name, params in agent.params.items()
        if params != base[name]
    }


def _rng_state(agent: AgentCore) -> bytes | None:
    rng = agent.peek_rng()
    if rng is None:
        return None
    version, words, gauss = rng.getstate()
    # `gauss_next` is only set by `gauss()`, which the engine never calls.
    assert version == 3 and gauss is None
    return RNG_STATE.pack(*words)


def _call(call: ToolCallEvent) -> dict[str, Any]:
    fields = {
        "call_id": call.call_id,
        "tool_name": call.tool_name,
        "arguments_json": call.arguments_json,
        "node_name": call.node_name,
        "disposition": call.disposition,
        "arguments": call.arguments,
    }
    if call.unread_arguments:  # only when there are some: most calls have none
        fields["unread_arguments"] = list(call.unread_arguments)
    return fields


def _paused_turn(turn: Turn, offset: float) -> dict[str, Any]:
    pause = turn.pause
    assert pause is not None
    info = pause.info
    timeout_ms = info.timeout_ms
    # `pause_deadline`, inline: this runs at every pause of every durable agent.
    deadline = pause.started_at + timeout_ms / 1000 + offset if timeout_ms else None
    calls = info.pending_calls
    return {
        "turn_id": turn.turn_id,
        "user_message": turn.interaction.user_message,
        "messages": turn.interaction.messages,
        "steps": turn.steps,
        "tokens": turn.tokens,
        "reply_parts": turn.reply_parts or [],
        "debug_nodes": turn.debug_nodes,
        "pause_count": turn.pause_count,
        "pause_seq": turn.pause_seq,
        "paused_duration_s": turn.paused_duration,
        "pause": {
            "node_name": info.node_name,
            "pending_exit": info.pending_exit,
            "pending_target": info.pending_target,
            "timeout_ms": info.timeout_ms,
            "awaits_results": info.awaits_results,
            "pending_calls": list(map(_call, calls)) if calls else [],
            "timeout_target": pause.timeout_target,
            "debug_index": pause.debug_index,
            "paused_at": pause.started_at + offset,
            "deadline": deadline,
        },
    }


def snapshot_document(agent: AgentCore) -> dict[str, Any]:
    """The agent's document (its graph as packed bytes). Only for an agent that stands still:
    idle, or paused (the caller checks)."""
    return head_document(agent, dialog_to_messages(agent.dialog, copied=False))


def head_document(agent: AgentCore, dialog: Any) -> dict[str, Any]:
    """The agent's document with `dialog` as the value of its last entry, "dialog": the flat
    messages (`snapshot_document`), or the number of parts a store keeps them in apart
    (`store.parts`)."""
    return {**_constant(agent), **_changing(agent, dialog)}


def _constant(agent: AgentCore) -> dict[str, Any]:
    """The entries that stay as they are while the agent lives (its graph and tags may be
    replaced, never changed in place)."""
    graph = agent.graph
    return {
        "format": FORMAT,
        "version": VERSION,
        "agent_id": agent.agent_id,
        "rng_seed": agent.rng_seed,
        "tags": dict(agent.tags),
        "graph": graph_blob(graph),
        "graph_version": graph.version,
        "graph_fingerprint": graph_fingerprint(graph),
    }


def _settled(agent: AgentCore) -> dict[str, Any]:
    """The entries after the constant ones that change only now and then (`head.HeadPacker`)."""
    options: dict[str, Any] = {
        "enable_diagnostics": agent.enable_diagnostics,
        "max_steps_per_turn": agent.max_steps,
    }
    if agent.input_policy is not InputPolicy.REJECT:  # only then: most agents keep the default
        options["input_policy"] = agent.input_policy.value
    result = agent.last_result
    return {
        "options": options,
        "params": _changed_params(agent),
        "call_seq": agent.call_seq,
        "node_state": agent.node_state or {},
        "rng_state": _rng_state(agent),
        "last_result": None if result is None else result.as_fields(),
        "clock": clock_kind(agent.runtime.clock),
    }


def _latest(agent: AgentCore, dialog: Any) -> dict[str, Any]:
    """The last entries, new at every write: when, the paused turn, the queue, the dialog."""
    now, offset = now_and_offset(agent.runtime)
    turn = agent.turn
    document: dict[str, Any] = {
        "saved_at": now + offset,
        "turn": _paused_turn(turn, offset) if turn.pause is not None else None,
    }
    if agent.lineage:
        document["lineage"] = [dict(step) for step in agent.lineage]
    if agent.queue:
        document["queue"] = [
            {"text": m.text, "fate": m.fate.value, "replaced": m.replaced} for m in agent.queue
        ]
    # Last: a store that keeps the dialog apart puts it back after the rest (`store.parts`).
    document["dialog"] = dialog
    return document


def _changing(agent: AgentCore, dialog: Any) -> dict[str, Any]:
    return {**_settled(agent), **_latest(agent, dialog)}


def take_snapshot(agent: AgentCore) -> AgentSnapshot:
    """The agent's snapshot as bytes (idle or paused; the caller checks)."""
    return AgentSnapshot(pack(snapshot_document(agent)))
