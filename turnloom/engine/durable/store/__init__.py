"""Stores for durable agents: where an engine writes each agent's snapshot
(docs/reference/durability.md#stores).

`Store` is the interface; `SQLiteStore` (one file, the embedded default) and `RedisStore`
(shared by several processes; needs the `redis` extra) implement it. `open_store` turns what a
host passes as `store=` into one. A store knows nothing of agents: it keeps bytes.
"""

from __future__ import annotations

import os

from .base import Store
from .sqlite import SQLiteStore

__all__ = ["SHARED_SCHEMES", "SQLiteStore", "Store", "open_store"]

#: The URL schemes `open_store` opens as a shared `RedisStore`.
SHARED_SCHEMES = ("redis://", "rediss://", "unix://")


def open_store(spec: str | os.PathLike[str] | Store) -> Store:
    """A `Store` as given, a `RedisStore` for a `redis://` / `rediss://` / `unix://` URL, else
    a `SQLiteStore` on that path (":memory:" for one that lives as long as the engine)."""
    if isinstance(spec, Store):
        return spec
    if isinstance(spec, str) and spec.startswith(SHARED_SCHEMES):
        from .redis import RedisStore  # the optional `redis` client: imported only when asked

        return RedisStore.from_url(spec)
    if not isinstance(spec, str | os.PathLike):
        raise TypeError(
            f"store must be a path, a redis:// URL or a Store, got {type(spec).__name__}"
        )
    return SQLiteStore(spec)
