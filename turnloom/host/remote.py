"""The blocking face of a remote session (`RemoteEngine`) and the two ways to open one:
`connect` (blocking, like `Engine`) and `connect_async` (asyncio, like `AsyncEngine`)."""

from __future__ import annotations

from ..protocol.frames import DEFAULT_HOST, DEFAULT_PORT
from .client import AsyncRemoteEngine
from .loop_thread import LoopThread, wait_limit
from .sync import EngineFace


class RemoteEngine(EngineFace):
    """A blocking session with a turnloom server: the `Engine` API, agents on the server.

    The connection runs on a background loop thread, where callbacks run too.
    """

    _engine: AsyncRemoteEngine

    def __init__(
        self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, timeout: float = 10.0
    ) -> None:
        wait_limit(timeout, "connect")  # refused before a thread is started
        self._runner = LoopThread("turnloom-client")
        try:
            self._engine = self._runner.block(
                AsyncRemoteEngine.connect(host, port, timeout=timeout), "connect"
            )
        except BaseException:
            self._runner.stop()
            raise

    def __enter__(self) -> RemoteEngine:
        return self

    @property
    def session_id(self) -> int:
        """The server's id of this session."""
        return self._engine.session_id


def connect(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, timeout: float = 10.0
) -> RemoteEngine:
    """Connect to a turnloom server; use the result exactly like `turnloom.Engine`."""
    return RemoteEngine(host, port, timeout=timeout)


async def connect_async(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, timeout: float = 10.0
) -> AsyncRemoteEngine:
    """Connect on the running loop; use the result exactly like `turnloom.AsyncEngine`."""
    return await AsyncRemoteEngine.connect(host, port, timeout=timeout)
