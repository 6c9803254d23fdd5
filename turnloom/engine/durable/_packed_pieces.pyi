"""The C extension behind `pieces.join_packed` (its source: `_packed_pieces.c`)."""

from collections.abc import Callable
from typing import Any

def join_packed(items: tuple[Any, ...], /) -> bytes:
    """Each item packed as msgpack, a `bytes` item copied as it is, back to back."""

def set_fallback(pack: Callable[[Any], bytes], /) -> None:
    """The packer of an item that is not plain values."""
