"""A durable agent's whole snapshot for a store that takes whole snapshots, with its dialog's
packing kept from one write to the next (the built-in stores keep the dialog apart instead:
`dialog_parts`).

An agent is written whole at every rest, and its dialog is most of the snapshot: at 100 turns,
nine tenths of the bytes and of the time to pack them, paid again at every pause and every
completion. A dialog only grows at its end (a turn's interaction joins it when the turn
completes), so `PackedDialog` packs each interaction once and keeps the bytes; a write packs
the rest of the document (`snapshot_document` over an empty dialog) and puts the kept bytes in
the dialog's place. The result is byte for byte what `take_snapshot` gives (the tests compare
them); a document whose shape is not the expected one is packed whole instead. A short dialog
is packed whole and nothing is kept: it costs little, and agents are many.
"""

from __future__ import annotations

import secrets
from operator import attrgetter

import msgpack

from ..turns.agent import AgentCore
from ..turns.dialog.messages import dialog_to_messages
from ..turns.dialog.projection import Interaction
from .snapshot import AgentSnapshot, snapshot_document, take_snapshot

_PACKER = msgpack.Packer(use_bin_type=True)
_STAND_IN = secrets.token_bytes(16)
_PACKED_STAND_IN = _PACKER.pack(_STAND_IN)
#: From how many turns an agent's dialog is kept packed (below, packing it is cheap).
KEEP_FROM = 8


_USER = attrgetter("user_message")
_MESSAGES = attrgetter("messages")


class PackedDialog:
    """One agent's dialog, packed an interaction at a time and kept between writes."""

    __slots__ = ("_count", "_data", "_items", "_sizes", "_users")

    def __init__(self) -> None:
        #: The interactions packed, and what each was packed from: the same objects with the
        #: same user message and number of messages are taken as unchanged (nothing changes a
        #: kept turn's messages or its pin: a turn's interaction only grows while it runs).
        self._items: list[Interaction] = []
        self._users: list[str] = []
        self._sizes: list[int] = []
        #: Their flat messages packed back to back, and how many messages that is.
        self._data = b""
        self._count = 0

    def packed(self, dialog: list[Interaction]) -> bytes:
        """The dialog's flat messages as one msgpack array (what `dialog_to_messages` packs
        to), from the kept bytes if the dialog only grew since, else packed afresh."""
        kept = len(self._items)
        old = dialog[:kept]
        # Whole-list comparisons run in C (identity first): a few µs for hundreds of turns.
        if not (
            len(dialog) >= kept
            and old == self._items
            and list(map(len, map(_MESSAGES, old))) == self._sizes
            and list(map(_USER, old)) == self._users
        ):
            self.__init__()  # type: ignore[misc]
            kept = 0
        if len(dialog) > kept:
            new = dialog[kept:]
            messages = dialog_to_messages(new, copied=False)
            self._data += b"".join(map(_PACKER.pack, messages))
            self._count += len(messages)
            self._items += new
            self._users += map(_USER, new)
            self._sizes += map(len, map(_MESSAGES, new))
        return _PACKER.pack_array_header(self._count) + self._data


def packed_snapshot(
    agent: AgentCore, kept: PackedDialog | None
) -> tuple[AgentSnapshot, PackedDialog | None]:
    """`take_snapshot(agent)`, its dialog taken from `kept`'s parts if it is long (`KEEP_FROM`
    turns or more); and what to keep for the next one (None for a short dialog)."""
    interactions = agent.dialog
    if len(interactions) < KEEP_FROM:
        return take_snapshot(agent), None
    agent.dialog = []  # the rest of the document, without packing the dialog again
    try:
        document = snapshot_document(agent)
    finally:
        agent.dialog = interactions
    if document.get("dialog") != []:
        return take_snapshot(agent), None
    # Packed in one call with a stand-in where the dialog goes, which is then replaced: the
    # stand-in is this process's secret, so no string in a game's data can be taken for it.
    document["dialog"] = _STAND_IN
    before, found, after = _PACKER.pack(document).partition(_PACKED_STAND_IN)
    if not found or _PACKED_STAND_IN in after:
        return take_snapshot(agent), None
    kept = kept or PackedDialog()
    return AgentSnapshot(b"".join((before, kept.packed(interactions), after))), kept
