"""A durable agent's snapshot head, packed again at every rest without packing again what did
not change (`HeadPacker`): the part of a snapshot a store that keeps the dialog apart
(`store.parts`) writes at each pause and completion (`dialog_parts.split_snapshot`).

Byte for byte `snapshot.pack(snapshot.head_document(...))`: the entries and their order are
`snapshot`'s (`_constant`, `_settled`, `_latest`); this module only packs them in pieces.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgpack

from ..graph.builder import CompiledGraph
from ..turns.results import TurnResult
from .pieces import join_packed
from .snapshot import (
    _constant,
    _latest,
    _paused_turn,
    _settled,
    now_and_offset,
    pause_deadline,
)

if TYPE_CHECKING:
    from ..turns.agent import AgentCore
    from ..turns.turn import Turn

_PACKER = msgpack.Packer(use_bin_type=True)


class HeadPacker:
    """Packs one agent's `head_document` again and again, what did not change since the last
    time not packed again.

    A map's packed form is its header then its entries back to back, so the document is the
    header of the whole count, then three runs of entries: the constant ones (`_constant`:
    packed again only for another graph or other tags), the settled ones (`_settled`: packed
    again when one of them may have changed: options, call counter, last result, or an agent
    whose params, node state or random source are in use, which are checked no further), and
    the latest ones (`_latest`), packed every time (a paused turn's from pieces, most of which
    stay as they were from one pause to the next: `_turn`). An agent whose params, node state and
    random source are not in use (most) has its settled entries put together from pieces
    packed once (its options) and the two that change (the call counter, the last result).
    Byte for byte `pack(head_document(...))`."""

    __slots__ = (
        "_clock",
        "_count",
        "_graph",
        "_header",
        "_key",
        "_options",
        "_options_key",
        "_paused",
        "_paused_key",
        "_result",
        "_settled",
        "_tags",
        "constant",
        "deadline",
    )

    def __init__(self) -> None:
        self._graph: CompiledGraph | None = None
        self._tags: dict[str, str] = {}
        #: The constant entries of the last head packed (`snapshot._constant`, without their
        #: map's header): the same bytes object for as long as they stay the same.
        self.constant = b""
        self._count = 0
        self._key: tuple[Any, ...] | None = None
        self._result: TurnResult | None = None
        self._settled = b""
        self._options_key: tuple[Any, ...] | None = None
        self._options = b""
        #: The packed "clock" entry, packed with the options.
        self._clock = b""
        #: The map's header of a head with the three usual latest entries.
        self._header = b""
        #: The paused turn's entries that seldom change from one pause to the next (`_turn`),
        #: packed, and what they were packed from.
        self._paused_key: tuple[Any, ...] | None = None
        self._paused = b""
        #: The deadline of the paused turn in the head packed last, in absolute time (None:
        #: not paused, or no timeout): what a shared store indexes (`snapshot.pause_deadline`).
        self.deadline: float | None = None

    def pack(self, agent: AgentCore, dialog: Any, cut: bool = False) -> bytes:
        """The packed `head_document(agent, dialog)`; `cut`: without its constant entries
        (`constant`), for a store that keeps them apart (`store.parts`): the map's header
        still counts them."""
        graph = agent.graph
        if graph is not self._graph or agent.tags != self._tags:
            entries = _constant(agent)
            # The entries without their map's header (1 byte: fewer than 16 of them).
            self.constant = _PACKER.pack(entries)[1:]
            self._count = len(entries) + _SETTLED
            self._header = _PACKER.pack_map_header(self._count + 3)
            self._graph, self._tags = graph, entries["tags"]
        result = agent.last_result
        key = (agent.call_seq, agent.enable_diagnostics, agent.max_steps, agent.input_policy)
        # Params changed in place, node state and a random source are not compared: an agent
        # that has any is packed anew every time. The last result is compared by identity.
        plain = agent.params is graph.nodes and not agent.node_state and agent.peek_rng() is None
        if key != self._key or result is not self._result or not plain:
            if plain:
                self._settled = self._plain_settled(agent, key, result)
                self._key, self._result = key, result
            else:
                self._settled = _PACKER.pack(_settled(agent))[1:]
                self._key = self._result = None
        constant = b"" if cut else self.constant
        if agent.lineage or agent.queue:
            latest = _latest(agent, dialog)
            turn = latest["turn"]
            self.deadline = None if turn is None else turn["pause"]["deadline"]
            assert len(latest) < 16  # a fixmap: its header is its first byte
            header = _PACKER.pack_map_header(self._count + len(latest))
            return b"".join((header, constant, self._settled, _PACKER.pack(latest)[1:]))
        # Every pause's and completion's write, as a rule: `_latest`'s three entries (when,
        # the paused turn, the dialog) from packed pieces.
        now, offset = now_and_offset(agent.runtime)  # one reading: "saved_at" and the pause
        turn = agent.turn
        if turn.pause is None:
            at, paused, self.deadline = _AT_REST, b"", None
        else:
            at, paused = _TURN, self._turn(turn, offset)
        return join_packed(
            (
                self._header,
                constant,
                self._settled,
                _SAVED_AT,
                now + offset,
                at,
                paused,
                _DIALOG,
                dialog,
            )
        )

    def _turn(self, turn: Turn, offset: float) -> bytes:
        """The paused turn (`snapshot._paused_turn`) packed, and `deadline` set. Of a turn with
        no reply parts, diagnostics or pending calls (a Pause node's, as a rule) from pieces:
        its entries from "steps" to the pause's "debug_index" are the same from one pause to
        the next as a rule (a new turn's first pause at the same node), and packed again only
        when one of them changed; the others (the turn's id, its message, its messages, when
        the pause began and its deadline) are packed every time."""
        pause = turn.pause
        assert pause is not None
        info = pause.info
        if turn.reply_parts or turn.debug_nodes is not None or info.pending_calls:
            document = _paused_turn(turn, offset)
            self.deadline = document["pause"]["deadline"]
            return _PACKER.pack(document)
        timeout_ms = info.timeout_ms
        # Plain values only (no list that may change in place): compared, not copied.
        key = (
            turn.steps,
            turn.tokens,
            turn.pause_count,
            turn.pause_seq,
            turn.paused_duration,
            info.node_name,
            info.pending_exit,
            info.pending_target,
            timeout_ms,
            info.awaits_results,
            pause.timeout_target,
            pause.debug_index,
        )
        if key != self._paused_key:
            self._paused = _unchanging_paused(key)
            self._paused_key = key
        started = pause.started_at
        deadline = self.deadline = pause_deadline(turn, offset)
        interaction = turn.interaction
        return join_packed(
            (
                _PAUSED_HEADER,
                _TURN_ID,
                turn.turn_id,
                _USER_MESSAGE,
                interaction.user_message,
                _MESSAGES,
                interaction.messages,
                self._paused,
                _PAUSED_AT,
                started + offset,
                _DEADLINE,
                deadline,
            )
        )

    def _plain_settled(self, agent: AgentCore, key: tuple[Any, ...], result: Any) -> bytes:
        """`_settled` packed for an agent whose params, node state and random source are not in
        use: its options (and empty params) as packed the last time they were the same."""
        options_key = key[1:]
        if options_key != self._options_key:
            entries = _settled(agent)
            self._options = _PACKER.pack({"options": entries["options"], "params": {}})[1:]
            # The agent's clock is its engine's, for as long as it lives.
            self._clock = _CLOCK_ENTRIES[entries["clock"]]
            self._options_key = options_key
        return join_packed(
            (
                self._options,
                _CALL_SEQ,
                agent.call_seq,
                _UNUSED_STATE,
                _LAST_RESULT,
                None if result is None else result.as_fields(),
                self._clock,
            )
        )


#: The packed pieces of a plain agent's settled entries (`HeadPacker._plain_settled`).
_CALL_SEQ = _PACKER.pack("call_seq")
_UNUSED_STATE = _PACKER.pack({"node_state": {}, "rng_state": None})[1:]
_LAST_RESULT = _PACKER.pack("last_result")
_NONE = _PACKER.pack(None)
_CLOCK_ENTRIES = {kind: _PACKER.pack({"clock": kind})[1:] for kind in ("virtual", "wall")}
_SAVED_AT = _PACKER.pack("saved_at")
_TURN = _PACKER.pack("turn")
_AT_REST = _TURN + _NONE  # "turn": null, an idle agent's
_DIALOG = _PACKER.pack("dialog")


def _unchanging_paused(key: tuple[Any, ...]) -> bytes:
    """The entries of a paused turn (`snapshot._paused_turn`) from "steps" to the pause's
    "debug_index", packed back to back, from `HeadPacker._turn`'s key (no reply parts,
    diagnostics or pending calls)."""
    steps, tokens, count, seq, duration, node, route, target, timeout_ms, awaits, to, index = key
    entries = {
        "steps": steps,
        "tokens": tokens,
        "reply_parts": [],
        "debug_nodes": None,
        "pause_count": count,
        "pause_seq": seq,
        "paused_duration_s": duration,
    }
    pause = {
        "node_name": node,
        "pending_exit": route,
        "pending_target": target,
        "timeout_ms": timeout_ms,
        "awaits_results": awaits,
        "pending_calls": [],
        "timeout_target": to,
        "debug_index": index,
    }
    return b"".join(
        (
            _PACKER.pack(entries)[1:],
            _PAUSE,
            _PACKER.pack_map_header(len(pause) + 2),  # and "paused_at", "deadline"
            _PACKER.pack(pause)[1:],
        )
    )


#: A paused turn's map header (`snapshot._paused_turn`: eleven entries), and the keys of its
#: entries packed every time.
_PAUSED_HEADER = _PACKER.pack_map_header(11)
_PAUSE = _PACKER.pack("pause")
_TURN_ID = _PACKER.pack("turn_id")
_USER_MESSAGE = _PACKER.pack("user_message")
_MESSAGES = _PACKER.pack("messages")
_PAUSED_AT = _PACKER.pack("paused_at")
_DEADLINE = _PACKER.pack("deadline")

#: How many entries `_settled` has.
_SETTLED = 7
