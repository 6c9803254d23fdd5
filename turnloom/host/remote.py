"""The blocking face of a remote session (`RemoteEngine`) and the two ways to open one:
`connect` (blocking, like `Engine`) and `connect_async` (asyncio, like `AsyncEngine`).

Both take `ssl` (an `ssl.SSLContext`, or True for the system's trust store) to speak TLS, and
`auth_key` for a server that requires one (2004 Unauthorized otherwise). The key is only ever
sent, in ConfigureSession; it is never logged, kept or shown in an error.
"""

from __future__ import annotations

from collections.abc import Awaitable
from ssl import SSLContext
from typing import Any

from ..engine.durable.store.slots import SlotInfo
from ..engine.graph.builder import GraphDescription
from ..protocol.frames import DEFAULT_HOST, DEFAULT_PORT
from ..states import InputPolicy
from .client import AsyncRemoteEngine, RemoteAsyncAgent
from .connection import Connection, check_auth_key, client_context
from .loop_thread import LoopThread, wait_limit
from .sync import Agent, EngineFace


async def _open(
    host: str,
    port: int,
    timeout: float | None,
    ssl: SSLContext | bool | None,
    auth_key: str | None,
) -> AsyncRemoteEngine:
    context = client_context(ssl)

    def reopen() -> Awaitable[tuple[Connection, dict[str, Any]]]:
        return Connection.open(host, port, timeout, ssl=context, auth_key=auth_key)

    conn, ready = await reopen()
    return AsyncRemoteEngine(conn, ready, reopen)


class RemoteEngine(EngineFace):
    """A blocking session with a turnloom server: the `Engine` API, agents on the server.

    The connection runs on the client's loop (see `LoopThread`), where callbacks run too: on
    its thread, or on the calling thread during a blocking call.
    """

    _engine: AsyncRemoteEngine

    def __init__(
        self,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        timeout: float = 10.0,
        ssl: SSLContext | bool | None = None,
        auth_key: str | None = None,
    ) -> None:
        # Refused before a thread is started.
        limit = wait_limit(timeout, "connect")
        client_context(ssl)
        check_auth_key(auth_key)
        self._runner = LoopThread("turnloom-client")
        try:
            self._engine = self._runner.block(_open(host, port, limit, ssl, auth_key), "connect")
        except BaseException:
            self._runner.stop()
            raise

    def __enter__(self) -> RemoteEngine:
        return self

    @property
    def session_id(self) -> int:
        """The server's id of this session."""
        return self._engine.session_id

    def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
        durable: bool = False,
        input_policy: InputPolicy | str = InputPolicy.REJECT,
    ) -> Agent:
        """Create an agent on the server (3003/3007/3008 on a bad graph). `durable` (a server
        with a store): it outlives this session; keep `agent.resume_token` to attach it again.
        `input_policy`: what a message does while a turn is open."""
        agent = self._runner.block(
            self._engine.create_agent(
                graph,
                enable_diagnostics=enable_diagnostics,
                max_steps_per_turn=max_steps_per_turn,
                durable=durable,
                input_policy=input_policy,
            ),
            "create_agent",
        )
        return Agent(agent, self._runner)

    def attach_agent(
        self, agent_id: int, resume_token: str, *, timeout: float | None = None
    ) -> Agent:
        """Take over a durable agent from any earlier session (3001 if the id or the token is
        wrong); `agent.wait()` gives the step it stands at."""
        agent = self._runner.block(
            self._engine.attach_agent(agent_id, resume_token), "attach_agent", timeout
        )
        return Agent(agent, self._runner)

    def load(self, slot: str, *, replace: int | None = None) -> Agent:
        """An agent of this session from the server store's save `slot`, or in place of this
        session's agent `replace` (docs/reference/durability.md#save-slots)."""
        return Agent(
            self._runner.block(self._engine.load(slot, replace=replace), "load"), self._runner
        )

    def fork(self, source: Agent | str) -> Agent:
        """A new agent of this session going on from one of its agents, or from a slot."""
        origin = source if isinstance(source, str) else source._agent
        assert isinstance(origin, str | RemoteAsyncAgent)
        return Agent(self._runner.block(self._engine.fork(origin), "fork"), self._runner)

    def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """The server store's save slots (of one agent, or all), newest first."""
        return self._runner.block(self._engine.slots(agent_id), "slots")

    def delete_slot(self, slot: str) -> bool:
        """Remove a save slot; False if there was none."""
        return self._runner.block(self._engine.delete_slot(slot), "delete_slot")

    def reconnect(self, *, timeout: float | None = None) -> list[int]:
        """After a dropped connection or a server restart: a new session with the same server,
        every durable agent of this engine attached to it (its `Agent` object, callbacks and
        registered tools carry on); the ids attached. Non-durable agents ended with the old
        session."""
        return self._runner.block(self._engine.reconnect(), "reconnect", timeout)


def connect(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    timeout: float = 10.0,
    ssl: SSLContext | bool | None = None,
    auth_key: str | None = None,
) -> RemoteEngine:
    """Connect to a turnloom server; use the result exactly like `turnloom.Engine`.

    `ssl`: an `ssl.SSLContext` (your CA, your client certificate for mutual TLS) or True (the
    system's trust store) to speak TLS; `auth_key`: the server's key, if it requires one."""
    return RemoteEngine(host, port, timeout=timeout, ssl=ssl, auth_key=auth_key)


async def connect_async(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    timeout: float = 10.0,
    ssl: SSLContext | bool | None = None,
    auth_key: str | None = None,
) -> AsyncRemoteEngine:
    """Connect on the running loop; use the result exactly like `turnloom.AsyncEngine`
    (`ssl` and `auth_key` as for `connect`)."""
    limit = wait_limit(timeout, "connect")
    client_context(ssl)
    check_auth_key(auth_key)
    return await _open(host, port, limit, ssl, auth_key)
