"""A server on its own loop thread, for tests, benchmarks and apps that host one in-process."""

from __future__ import annotations

from collections.abc import Callable
from ssl import SSLContext
from typing import TypeVar

from ..host.aio import AsyncEngine
from ..host.loop_thread import LoopThread
from ..protocol.frames import DEFAULT_HOST
from .auth import AuthKey
from .tcp import Server, ServerLimits

T = TypeVar("T")


class BackgroundServer:
    """`with BackgroundServer(lambda: AsyncEngine(...)) as bg: tl.connect(*bg.address)`."""

    def __init__(
        self,
        make_engine: Callable[[], AsyncEngine] = AsyncEngine,
        *,
        host: str = DEFAULT_HOST,
        port: int = 0,
        limits: ServerLimits | None = None,
        ssl: SSLContext | None = None,
        auth_key: AuthKey | str | None = None,
    ) -> None:
        """`limits`, `ssl` and `auth_key` as for `Server`."""
        self._runner = LoopThread("turnloom-server")

        async def start() -> Server:
            server = Server(make_engine(), limits=limits, ssl=ssl, auth_key=auth_key)
            await server.start(host, port)
            return server

        try:
            self.server = self._runner.block(start(), "BackgroundServer")
        except BaseException:
            self._runner.stop()
            raise

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) to connect to."""
        return self.server.address

    def call(self, fn: Callable[[], T], timeout: float = 10.0) -> T:
        """Run `fn()` on the server's loop and return its result (to inspect server state)."""

        async def run() -> T:
            return fn()

        return self._runner.block(run(), "call", timeout)

    def close(self, grace_s: float = 0.1) -> None:
        """Shut the server down gracefully and stop its thread."""
        if self._runner.loop.is_closed():
            return
        self._runner.block(self.server.close(grace_s), "close")
        self._runner.stop()

    def __enter__(self) -> BackgroundServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
