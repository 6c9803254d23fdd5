"""How the built-in stores keep a snapshot: its head, and its dialog apart in a few parts.

A dialog only grows (a completed turn's interaction joins its end) and is most of a long
snapshot's bytes, so writing the whole snapshot at every pause and every completion writes the
same dialog again and again. `SQLiteStore` and `RedisStore` keep each agent as:

* its **head**: the snapshot document whose last entry is `"dialog": N` (the number of parts)
  instead of the messages; itself a msgpack document, refused by `restore` if read alone.
  Written by a durable agent, the head leaves out the entries that stay as they are while the
  agent lives (format, ids, tags, graph: `snapshot._constant`, about a third of a head's
  bytes), which the store keeps apart, once per agent, as its **constant** entries: a head is
  then its map's header, then the entries after those (a head that starts with "format" is
  whole, as a store of the previous layout holds them);
* its **parts**: N msgpack arrays of flat messages, in order; together, the dialog. The last
  may be the **tail**, the latest turns, rewritten at each completion until it is sealed
  (`dialog_parts`); a store may keep it with the head.

A write (`SplitWrite`) replaces the head and, from some index on, the parts: a pause writes
only the head, a completion the head and the tail (and now and then a sealed part, so an agent
has about log2(turns / 16) parts); the constant entries only when the store may not hold them
yet (the agent's first write there, a write after one that failed, another graph or tags).
The head, its constant entries and its parts are written together, atomically per agent (one
transaction, one script), so a crash leaves every agent at its last complete write.
`assemble` puts the snapshot back together, byte for byte the one `take_snapshot` gives. A
whole snapshot (`Store.save`, or a stored agent written before this layout) is a head with no
parts, and a head with every entry is taken as it is, whatever constant entries are stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgpack

_PACKER = msgpack.Packer(use_bin_type=True)
#: The document's last key; its value is the dialog, or in a head the number of parts.
_DIALOG_KEY = _PACKER.pack("dialog")
#: A whole document's first key (`snapshot._constant`'s first entry).
_FORMAT_KEY = _PACKER.pack("format")


class SplitWrite:
    """One agent's write as a store that keeps the dialog apart takes it.

    `head`: the document with `"dialog": len(parts after the write)` as its last entry (a whole
    snapshot for a head with no parts), its constant entries left out or not (`cut_head`).
    `base`: None if the stored parts stay as they are; else the stored parts from index `base`
    on are replaced by `parts` (0: all of them). `tail`: whether the last of `parts` is the
    dialog's tail, written again at the next completion (a store may keep it with the head);
    the others are sealed, written once. `constant`: the agent's constant entries to store
    (replacing those stored), or None to keep the stored ones. A plain class: one is made at
    every rest of every durable agent."""

    __slots__ = ("base", "constant", "head", "parts", "tail")

    def __init__(
        self,
        head: bytes,
        base: int | None = 0,
        parts: tuple[bytes, ...] = (),
        tail: bool = False,
        constant: bytes | None = None,
    ) -> None:
        self.head = head
        self.base = base
        self.parts = parts
        self.tail = tail and bool(parts)
        self.constant = constant

    def __repr__(self) -> str:
        return (
            f"SplitWrite({len(self.head)} bytes, base={self.base}, parts={len(self.parts)}, "
            f"tail={self.tail}, constant={None if self.constant is None else len(self.constant)})"
        )


def as_split(document: bytes | SplitWrite) -> SplitWrite:
    """A whole snapshot as a write of a head with no parts; a `SplitWrite` as it is."""
    return document if isinstance(document, SplitWrite) else SplitWrite(document)


def parts_marker(count: int) -> bytes:
    """How a head with `count` parts ends: the key "dialog", then the count."""
    return _DIALOG_KEY + _PACKER.pack(count)


def _array(part: bytes) -> tuple[int, int]:
    """(messages, offset of the first) of a part, a msgpack array."""
    first = part[0]
    if 0x90 <= first <= 0x9F:
        return first & 0x0F, 1
    if first == 0xDC:
        return int.from_bytes(part[1:3], "big"), 3
    if first == 0xDD:
        return int.from_bytes(part[1:5], "big"), 5
    raise ValueError("a dialog part is not a msgpack array")


def _header_size(head: bytes) -> int:
    """The size of a head's map header (0 if it is not a map)."""
    first = head[0] if head else 0
    if 0x80 <= first <= 0x8F:
        return 1
    return 3 if first == 0xDE else 5 if first == 0xDF else 0


def cut_head(head: bytes) -> bool:
    """Whether `head` leaves its constant entries out (its first entry is not "format")."""
    size = _header_size(head)
    return bool(size) and not head.startswith(_FORMAT_KEY, size)


def assemble(head: bytes, parts: Sequence[bytes], constant: bytes = b"") -> bytes:
    """The whole snapshot of a stored agent: its head with its `constant` entries put back
    after the map's header (when the head left them out) and the dialog put back from its
    parts.

    With no parts the head is a whole snapshot already. A head that does not end with its
    parts' count (a part lost, or a foreign value) is returned as it is, and so is a head
    that left its constant entries out when none are given: `restore` refuses either by name
    (its dialog is a count, its map is short of entries)."""
    if constant and cut_head(head):
        size = _header_size(head)
        head = b"".join((head[:size], constant, head[size:]))
    if not parts:
        return bytes(head)
    marker = parts_marker(len(parts))
    if not head.endswith(marker):
        return bytes(head)
    try:
        arrays = [_array(part) for part in parts]
    except (ValueError, IndexError):
        return bytes(head)
    total = sum(count for count, _ in arrays)
    pieces = [head[: len(head) - len(marker)], _DIALOG_KEY, _PACKER.pack_array_header(total)]
    pieces += [part[offset:] for part, (_, offset) in zip(parts, arrays, strict=True)]
    return b"".join(pieces)
