"""The asyncio TCP server: one `EngineCore` shared by sessions, one session per connection.

It binds to loopback unless told otherwise. With `ssl` it speaks TLS only; with
`auth_key` a session must present the key before anything else (see `auth`); per-session
quotas come from `ServerLimits` (see `quotas`). Shutdown is graceful: requests are answered
2001, every session's open turns are cancelled (their completions still go out), then the
sockets close.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from functools import partial
from ssl import SSLContext

from ..engine.core import EngineCore
from ..engine.support.logs import get_logger
from ..engine.turns.agent import AgentCore
from ..host.aio import AsyncEngine
from ..protocol.errors import ErrorCode, TurnloomError
from ..protocol.frames import DEFAULT_HOST, DEFAULT_PORT
from .auth import AuthKey
from .limits import ServerLimits, is_loopback
from .quotas import SessionMeter, SessionQuota, metered
from .session import Session, send_unsent

log = get_logger("turnloom.server")


class Server:
    """Serves an engine's agents over the wire: `async with Server(engine) as server:`."""

    def __init__(
        self,
        engine: AsyncEngine | None = None,
        *,
        limits: ServerLimits | None = None,
        ssl: SSLContext | None = None,
        auth_key: AuthKey | str | None = None,
    ) -> None:
        """`ssl`: a server-side context (`tls.server_context`) to speak only TLS; `auth_key`:
        the key every session must present in ConfigureSession (2004 otherwise)."""
        self.engine = engine if engine is not None else AsyncEngine()
        self.limits = limits or ServerLimits()
        if ssl is not None and not isinstance(ssl, SSLContext):
            raise TypeError(f"ssl must be an ssl.SSLContext, got {type(ssl).__name__}")
        self.ssl = ssl
        self.auth = AuthKey(auth_key) if isinstance(auth_key, str) else auth_key
        if self.auth is not None and not isinstance(self.auth, AuthKey):
            raise TypeError(f"auth_key must be a str or an AuthKey, got {type(auth_key).__name__}")
        self.sessions: dict[int, Session] = {}
        #: Sessions with frames waiting for their iteration's write (see `SessionHost`).
        self.unsent: dict[Session, None] = {}
        self.shutting_down = False
        self._session_ids = itertools.count(1)
        self._server: asyncio.Server | None = None
        self._empty = asyncio.Event()
        self._empty.set()

    async def start(self, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
        """Bind and start accepting (port 0 picks a free port; see `address`)."""
        await self.engine.__aenter__()  # binds the engine to this loop
        self.engine_core.on_lease_lost = self._lease_lost
        # Pauses and completions told once stored go to their clients at once.
        self.engine_core.after_rests_told = partial(send_unsent, self)
        if not is_loopback(host):
            log.warning(
                "server.not_loopback",
                host=host,
                tls=self.ssl is not None,
                auth=self.auth is not None,
                hint="reachable from other machines"
                + ("" if self.ssl else "; traffic is not encrypted")
                + ("" if self.auth else "; anyone who reaches the port can use the engine"),
            )
        if metered(self.limits):
            self.engine_core.meter = SessionMeter(self.quota_of)
        self._server = await asyncio.get_running_loop().create_server(
            lambda: Session(self, next(self._session_ids)),
            host,
            port,
            ssl=self.ssl,
            ssl_handshake_timeout=self.limits.tls_handshake_timeout_s if self.ssl else None,
        )
        log.info(
            "server.listening",
            host=self.address[0],
            port=self.address[1],
            tls=self.ssl is not None,
            auth=self.auth is not None,
        )

    @property
    def engine_core(self) -> EngineCore:
        """The engine core whose agents the sessions create."""
        return self.engine.core

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) the server listens on."""
        assert self._server is not None, "the server is not started"
        host, port = self._server.sockets[0].getsockname()[:2]
        return host, port

    async def __aenter__(self) -> Server:
        if self._server is None:
            await self.start(DEFAULT_HOST, 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def serve_forever(self) -> None:
        """Run until cancelled (then shut down gracefully)."""
        assert self._server is not None, "the server is not started"
        try:
            await self._server.serve_forever()
        except asyncio.CancelledError:
            await self.close()
            raise

    def quota_of(self, agent_id: int) -> SessionQuota | None:
        """The quota of the session that owns `agent_id` (None for an agent of no session)."""
        for session in self.sessions.values():
            if agent_id in session.agents:
                return session.quota
        return None

    def admit(self, session: Session) -> TurnloomError | None:
        """Register a new session, or the reason it is refused."""
        if self.shutting_down:
            return TurnloomError(ErrorCode.ServerShuttingDown, "the server is shutting down")
        if len(self.sessions) >= self.limits.max_sessions:
            log.warning("server.sessions_full", limit=self.limits.max_sessions)
            return TurnloomError(
                ErrorCode.SessionLimitExceeded,
                f"the server already has {len(self.sessions)} sessions, its limit",
            )
        self.sessions[session.session_id] = session
        self._empty.clear()
        return None

    def _lease_lost(self, core: AgentCore) -> None:
        """Another worker holds `core`'s agent now (this one's lease lapsed): the session that
        had it here is told AgentDetached, as when another session attaches it."""
        for session in self.sessions.values():
            if session.agents.get(core.agent_id) is core:
                session.lose(core.agent_id, "held by another worker now")

    def forget(self, session: Session) -> None:
        """Drop a closed session."""
        self.sessions.pop(session.session_id, None)
        if not self.sessions:
            self._empty.set()

    async def close(self, grace_s: float = 0.1) -> None:
        """Shut down: answer requests 2001, cancel every session's turns, close the sockets.

        Clients get `grace_s` to read what was sent and hang up themselves.
        """
        if self.shutting_down:
            return
        self.shutting_down = True
        log.info("server.shutting_down", sessions=len(self.sessions))
        if self._server is not None:
            self._server.close()
        for session in list(self.sessions.values()):
            session.begin_shutdown()
        await self._wait_empty(grace_s)
        for session in list(self.sessions.values()):
            session.close()
        await self._wait_empty(self.limits.close_timeout_s)
        if self._server is not None:
            await self._server.wait_closed()
        if isinstance(self.engine_core.meter, SessionMeter):
            self.engine_core.meter = None
        log.info("server.closed")

    async def _wait_empty(self, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._empty.wait(), timeout)
