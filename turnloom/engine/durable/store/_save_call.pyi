"""The C extension behind `redis_writes.WriteConnection`'s calls (its source: `_save_call.c`)."""

from collections.abc import Sequence
from typing import Any

def packed_call(
    first: tuple[bytes, ...], writes: Sequence[Any], split_type: type, /
) -> bytes | None:
    """The SAVE_MANY call of `writes` packed for Redis, `first` its arguments before the table;
    None for a group left to Python."""
