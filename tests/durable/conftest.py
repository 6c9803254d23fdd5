"""Fixtures of the durability tests: a real Redis server, and store specs for every store kind.

The Redis server is the system's `redis-server` (Debian's package), started once per test
session on a free loopback port with persistence off, and stopped at the end; nothing is
mocked. Without the binary the Redis tests are skipped with the command that installs it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"
STORE_KINDS = ("sqlite", "redis")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """`redis://127.0.0.1:PORT/0` of a redis-server this session started (and stops)."""
    if not Path(REDIS_SERVER).exists():
        pytest.skip("redis-server is not installed: apt-get install redis-server")
    redis = pytest.importorskip("redis")
    port = _free_port()
    process = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                if client.ping():
                    break
            except redis.ConnectionError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.02)
        yield url
    finally:
        client.close()
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(params=STORE_KINDS)
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], object]]:
    """A function returning what `store=` takes for one fresh store, SQLite or Redis; every
    call reopens the same store (as a restarted process would)."""
    if request.param == "sqlite":
        path = str(tmp_path / "game.db")
        yield lambda: path
        return
    import redis

    from turnloom.engine.durable.store.redis import RedisStore

    url = request.getfixturevalue("redis_url")
    prefix = f"test-{request.node.name}"
    yield lambda: RedisStore(redis.Redis.from_url(url), prefix=prefix)
    client = redis.Redis.from_url(url)
    for key in client.scan_iter(f"{prefix}:*"):  # heads, tails, parts, owners...
        client.delete(key)
    client.close()
