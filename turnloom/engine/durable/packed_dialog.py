"""A durable agent's writes without packing its dialog again at every rest.

An agent is written at every rest, and its dialog is most of the snapshot: at 100 turns,
nine tenths of the bytes and of the time to pack them, paid again at every pause and every
completion. A dialog only grows at its end (a turn's interaction joins it when the turn
completes), so:

* for the built-in stores, which keep the dialog apart (`store.parts`), `split_snapshot`
  packs the head of the document and, only when turns joined the dialog since the last write
  the store took, one part holding them (merged with the last parts, binary-counter style:
  a part never follows a smaller one, so an agent has about log2(turns) parts and each turn is
  packed about log2(turns) times in all). `StoredDialog` is what the store holds, as far as
  writes are known to be in: a write that failed makes the next one write the dialog whole.
* for any other store, which takes whole snapshots, `PackedDialog` packs each interaction
  once and keeps the bytes; a write packs the rest of the document and puts the kept bytes in
  the dialog's place. A short dialog is packed whole and nothing is kept: it costs little,
  and agents are many.

Either way the snapshot is byte for byte what `take_snapshot` gives (the tests compare them).
"""

from __future__ import annotations

import secrets
from operator import attrgetter

import msgpack

from ..turns.agent import AgentCore
from ..turns.dialog.messages import dialog_to_messages
from ..turns.dialog.projection import Interaction
from .snapshot import AgentSnapshot, HeadPacker, snapshot_document, take_snapshot
from .store.parts import SplitWrite

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


class StoredDialog:
    """What a store that keeps the dialog apart holds of one agent's dialog after a write:
    the dialog list it was taken from, how many interactions, the last of them (and its
    number of messages), and each stored part as (interactions, messages, its messages packed
    back to back), in order. The bytes are kept so that merging parts packs nothing again."""

    __slots__ = ("count", "dialog", "last", "last_size", "parts")

    def __init__(self, dialog: list[Interaction], parts: tuple[tuple[int, int, bytes], ...]):
        self.dialog = dialog
        self.count = len(dialog)
        self.last = dialog[-1]
        self.last_size = len(self.last.messages)
        self.parts = parts

    def starts(self, dialog: list[Interaction]) -> bool:
        """Whether `dialog` is the stored one, grown at its end or not at all. The agent's
        dialog only ever grows (a completed turn's interaction is appended, and nothing changes
        a kept turn); a new list (a restore) or a shorter one is not the stored one."""
        count = self.count
        return (
            dialog is self.dialog
            and len(dialog) >= count
            and dialog[count - 1] is self.last
            and len(self.last.messages) == self.last_size
        )


def split_snapshot(
    agent: AgentCore, stored: StoredDialog | None, head: HeadPacker
) -> tuple[SplitWrite, StoredDialog | None]:
    """The agent's write for a store that keeps the dialog apart, given what the store holds
    (`stored`; None: unknown, the dialog is written whole) and the agent's `head` packer; and
    what the store holds once the write is in. An agent with no dialog is written as a whole
    snapshot (no parts)."""
    dialog = agent.dialog
    if not dialog:
        return SplitWrite(head.pack(agent, [])), None
    # `stored.starts(dialog)`, inline: this runs at every rest of every durable agent.
    if (
        stored is not None
        and dialog is stored.dialog
        and len(dialog) >= stored.count
        and dialog[stored.count - 1] is stored.last
        and len(stored.last.messages) == stored.last_size
    ):
        if len(dialog) == stored.count:  # nothing joined since: the head alone
            return SplitWrite(head.pack(agent, len(stored.parts)), None), stored
        parts = list(stored.parts)
        new = dialog[stored.count :]
    else:
        parts, new = [], dialog
    messages = dialog_to_messages(new, copied=False)
    count = len(messages)
    # Packed as one array, its header then cut: one call, whatever the count.
    body = _PACKER.pack(messages)[len(_PACKER.pack_array_header(count)) :]
    size = len(new)
    # Binary-counter merges: the new part takes in the parts before it that are not larger.
    base = len(parts)
    while base and parts[base - 1][0] <= size:
        base -= 1
        size, count, body = (
            size + parts[base][0],
            count + parts[base][1],
            parts[base][2] + body,
        )
    del parts[base:]
    parts.append((size, count, body))
    part = _PACKER.pack_array_header(count) + body
    document = SplitWrite(head.pack(agent, len(parts)), base, (part,))
    return document, StoredDialog(dialog, tuple(parts))
