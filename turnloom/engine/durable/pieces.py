"""Packed pieces joined in one call (`join_packed`), what a durable agent's snapshot head is
put together with at every rest (`head`, `dialog_parts`).

Each item of the tuple is packed as msgpack (str as str, bytes inside a value as bin) unless it
is `bytes`, which is a piece packed before and copied as it is: byte for byte what
``b"".join(item if type(item) is bytes else msgpack.packb(item, use_bin_type=True) ...)`` gives.
The package's C extension does it in one call (a snapshot head is a dozen such items, and a
msgpack call, a slice and a join for each was most of its cost); without the extension built
(`accelerated` False) the same is done in Python, and the tests compare the two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgpack

_PACKER = msgpack.Packer(use_bin_type=True)


def _joined_in_python(items: tuple[Any, ...]) -> bytes:
    """`join_packed` without the C extension."""
    pack = _PACKER.pack
    return b"".join([item if item.__class__ is bytes else pack(item) for item in items])


join_packed: Callable[[tuple[Any, ...]], bytes]
try:
    from ._packed_pieces import join_packed, set_fallback
except ImportError:  # the extension is not built: the same, in Python
    join_packed = _joined_in_python
    #: Whether `join_packed` is the C extension's.
    accelerated = False
else:
    # What the extension hands an item that is not plain values (a subclass, an int past 64
    # bits, a lone surrogate): its bytes, or its error, are msgpack's own.
    set_fallback(_PACKER.pack)
    accelerated = True
