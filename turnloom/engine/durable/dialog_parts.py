"""A durable agent's writes for a store that keeps its dialog apart (`store.parts`): the head of
the snapshot at every rest, and the dialog's parts only when turns joined it.

A dialog only grows at its end (a completed turn's interaction is appended), so its stored
parts are:

* **sealed** parts of whole multiples of `TAIL_TURNS` interactions, never written again except
  when merged binary-counter style (a sealed part never follows a smaller one: about
  log2(turns / TAIL_TURNS) of them, each turn in about as many merges in all);
* then the **tail**: the fewer than `TAIL_TURNS` interactions after them, written again (with
  the head) at each completion until it fills up and is sealed. A store keeps it where the
  head is (`SQLiteStore`: in the agent's row, so a completion touches one row, not two).

`StoredDialog` is what the store holds, as far as writes are known to be in; it keeps the
packed bytes of every part, so a merge or a longer tail packs nothing again. A write that
failed makes the next one write the dialog whole. The head leaves out the agent's constant
entries (`store.parts`), which go to the store with the first write, and again only after a
write that failed or once they changed. Whatever the parts, the snapshot put back
together is byte for byte what `take_snapshot` gives (the tests compare them).
"""

from __future__ import annotations

from typing import Any

import msgpack

from ..turns.agent import AgentCore
from ..turns.dialog.messages import dialog_to_messages
from ..turns.dialog.projection import Interaction
from .head import HeadPacker
from .pieces import join_packed
from .store.parts import SplitWrite

_PACKER = msgpack.Packer(use_bin_type=True)

#: Interactions in a sealed part (a multiple of it); the tail holds fewer.
TAIL_TURNS = 16

#: A user message packed up to its text: ``{"role": "user", "content": ...}``.
_USER_MESSAGE = _PACKER.pack({"role": "user", "content": ""})[:-1]

#: A sealed part: (interactions, messages, its messages packed back to back).
Sealed = tuple[int, int, bytes]


class StoredDialog:
    """What a store that keeps the dialog apart holds of one agent's dialog after a write:
    the dialog list it was taken from, how many interactions, the last of them (and its
    number of messages), its sealed parts and its tail (how many interactions, how many
    messages, and those packed back to back, so that a turn joining it packs only itself); and
    the agent's constant entries it holds (`HeadPacker.constant`, compared by identity)."""

    __slots__ = (
        "constant",
        "count",
        "dialog",
        "last",
        "last_size",
        "parts",
        "sealed",
        "tail_body",
        "tail_size",
        "tail_turns",
    )

    def __init__(
        self,
        dialog: list[Interaction],
        sealed: tuple[Sealed, ...],
        tail_turns: int,
        tail_size: int,
        tail_body: bytes,
        constant: bytes,
    ) -> None:
        self.constant = constant
        self.dialog = dialog
        self.count = len(dialog)
        self.last = dialog[-1]
        self.last_size = len(self.last.messages)
        self.sealed = sealed
        self.tail_turns = tail_turns
        self.tail_size = tail_size
        self.tail_body = tail_body
        #: How many parts the store holds: the sealed ones, and the tail if there is one.
        self.parts = len(sealed) + (1 if tail_turns else 0)


def split_snapshot(
    agent: AgentCore, stored: StoredDialog | None, head: HeadPacker
) -> tuple[SplitWrite, StoredDialog | None]:
    """The agent's write for a store that keeps the dialog apart, given what the store holds
    (`stored`; None: unknown, the dialog is written whole, and the constant entries) and the
    agent's `head` packer; and what the store holds once the write is in. An agent with no
    dialog is written as a whole snapshot (no parts, every entry in the head)."""
    dialog = agent.dialog
    if not dialog:
        return SplitWrite(head.pack(agent, [])), None
    # Whether `dialog` is the stored one, grown at its end or not at all (checked inline: this
    # runs at every rest of every durable agent). The agent's dialog only ever grows (a
    # completed turn's interaction is appended, and nothing changes a kept turn); a new list (a
    # restore) or a shorter one is not the stored one.
    if (
        stored is not None
        and dialog is stored.dialog
        and len(dialog) >= stored.count
        and dialog[stored.count - 1] is stored.last
        and len(stored.last.messages) == stored.last_size
    ):
        joined = len(dialog) - stored.count
        turns, size, body = stored.tail_turns, stored.tail_size, stored.tail_body
        if not joined:  # nothing joined since: the head alone
            cut = head.pack(agent, stored.parts, True)
            if head.constant is stored.constant:
                return SplitWrite(cut, None), stored
            constant = head.constant  # another graph or tags: written again
            after = StoredDialog(dialog, stored.sealed, turns, size, body, constant)
            return SplitWrite(cut, None, constant=constant), after
        if joined == 1 and turns < TAIL_TURNS - 1:
            # The common completion: one turn joins a tail that stays a tail, the one part
            # written (what the general case below does, in fewer steps).
            messages, packed = _interaction(dialog[-1])
            size, body = size + messages, body + packed
            kept = stored.sealed
            part = _PACKER.pack_array_header(size) + body
            cut = head.pack(agent, len(kept) + 1, True)
            constant = head.constant
            after = StoredDialog(dialog, kept, turns + 1, size, body, constant)
            changed = None if constant is stored.constant else constant
            return SplitWrite(cut, len(kept), (part,), True, changed), after
        sealed = list(stored.sealed)
        joining = list(map(_interaction, dialog[stored.count :]))
        base = len(sealed)  # the parts before it stay as they are
        held = stored.constant
    else:  # the whole dialog, every part written: its sealed part packed in one go
        whole = len(dialog) - len(dialog) % TAIL_TURNS
        sealed = [_sealed(dialog[:whole])] if whole else []
        joining = list(map(_interaction, dialog[whole:]))
        turns, size, body = 0, 0, b""
        base = 0
        held = None
    if turns + len(joining) >= TAIL_TURNS:  # the tail is full: sealed, and merged
        # The stored tail (fewer than TAIL_TURNS) and the first of the turns joining it.
        whole = turns + len(joining) - (turns + len(joining)) % TAIL_TURNS
        into, joining = joining[: whole - turns], joining[whole - turns :]
        sealing = (
            whole,
            size + sum(messages for messages, _ in into),
            body + b"".join(packed for _, packed in into),
        )
        turns, size, body = 0, 0, b""
        at = len(sealed)
        while at and sealed[at - 1][0] <= sealing[0]:
            at -= 1
            earlier = sealed[at]
            sealing = (
                earlier[0] + sealing[0],
                earlier[1] + sealing[1],
                earlier[2] + sealing[2],
            )
        del sealed[at:]
        sealed.append(sealing)
        base = min(base, at)
    turns += len(joining)
    size += sum(messages for messages, _ in joining)
    body += b"".join(packed for _, packed in joining)
    parts = [_PACKER.pack_array_header(count) + packed for _, count, packed in sealed[base:]]
    if turns:
        parts.append(_PACKER.pack_array_header(size) + body)
    cut = head.pack(agent, len(sealed) + (1 if turns else 0), True)
    constant = head.constant
    after = StoredDialog(dialog, tuple(sealed), turns, size, body, constant)
    changed = None if constant is held else constant
    return SplitWrite(cut, base, tuple(parts), bool(turns), changed), after


def _interaction(interaction: Interaction) -> tuple[int, bytes]:
    """One interaction's messages: how many, and packed back to back."""
    if interaction.pinned:
        messages = dialog_to_messages((interaction,), copied=False)
        return len(messages), _packed_body(messages)
    # `dialog_to_messages` of one unpinned interaction, inline (at every completion of every
    # durable agent): its user message, then its own.
    messages = interaction.messages
    packed = join_packed((_USER_MESSAGE, interaction.user_message, *messages))
    return 1 + len(messages), packed


def _sealed(interactions: list[Interaction]) -> tuple[int, int, bytes]:
    """Interactions as one sealed part, packed in one call."""
    messages = dialog_to_messages(interactions, copied=False)
    return len(interactions), len(messages), _packed_body(messages)


def _packed_body(messages: list[Any]) -> bytes:
    """`messages` packed back to back: packed as an array, its header cut off (1 byte below
    16 items, else 3, or 5 from 65,536)."""
    count = len(messages)
    return _PACKER.pack(messages)[1 if count < 16 else 3 if count < 0x10000 else 5 :]
