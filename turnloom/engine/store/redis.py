"""The shared store: Redis, for several processes over one set of agents (needs the `redis`
client, `pip install 'turnloom[redis]'`).

Layout: one hash, `{prefix}:agents`, field = the agent id in decimal, value = its snapshot.
A save is one `HSET` and a delete one `HDEL`, each atomic in Redis, so every agent is always
at its last complete write; loading walks the hash with `HSCAN` in batches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import redis

from .base import Store

_SCAN_BATCH = 2000


class RedisStore(Store):
    """Snapshots in a Redis hash (`{prefix}:agents`)."""

    def __init__(self, client: Any, *, prefix: str = "turnloom") -> None:
        self._client = client
        self.key = f"{prefix}:agents"

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "turnloom") -> RedisStore:
        """A store on the Redis server at `url` (`redis://host:port/db`)."""
        return cls(redis.Redis.from_url(url), prefix=prefix)

    def save(self, agent_id: int, document: bytes) -> None:
        """One HSET: atomic."""
        self._client.hset(self.key, str(agent_id), document)

    def delete(self, agent_id: int) -> None:
        """One HDEL."""
        self._client.hdel(self.key, str(agent_id))

    def load_all(self) -> Iterator[tuple[int, bytes]]:
        """Every field of the hash, by HSCAN."""
        for field, document in self._client.hscan_iter(self.key, count=_SCAN_BATCH):
            yield int(field), document

    def close(self) -> None:
        """Close the client's connections."""
        self._client.close()
