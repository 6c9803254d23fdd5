"""A remote engine's durable agents taken to a new session (R-R5): after a dropped connection
or a server restart, `reconnect` opens a new session with the same server and attaches every
durable agent the engine holds, so the host's agent objects, callbacks and registered tools
carry on as they were. Non-durable agents ended with the old session (R-W2)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from ..protocol.errors import TurnloomError
from .connection import Connection, EventSink

#: Opens a new session with the same server: its connection and its SessionReady frame.
Reopen = Callable[[], Awaitable[tuple[Connection, Mapping[str, Any]]]]


class _DurableFace(EventSink, Protocol):
    """What is moved of a remote agent (`client.RemoteAsyncAgent`)."""

    _conn: Connection
    _destroyed: bool
    resume_token: str | None


#: The kind of agent object a remote engine holds.
Face = TypeVar("Face", bound=_DurableFace)


class _RemoteEngine(Protocol[Face]):
    """What `reconnect` changes of a remote engine (`client.AsyncRemoteEngine`)."""

    _conn: Connection
    reopen: Reopen
    durable: dict[int, Face]
    session_id: int
    protocol_version: int

    async def attach_agent(self, agent_id: int, resume_token: str) -> Any:
        """Attach a durable agent to the engine's session."""
        ...


async def reconnect(engine: _RemoteEngine[Face]) -> list[int]:
    """A new session with the same server (the old one closed first if still open), and every
    durable agent of `engine` attached to it, agent objects and callbacks unchanged; the ids
    of those attached (one destroyed or taken over meanwhile is dropped, its waiters failed)."""
    old = engine._conn
    if old.error is None:  # still open: end that session first (its durable agents stay)
        await old.close()
    conn, ready = await engine.reopen()
    engine._conn = conn
    engine.session_id = ready["session_id"]
    engine.protocol_version = ready["protocol_version"]
    attached = []
    for agent_id, agent in list(engine.durable.items()):
        token = agent.resume_token
        if agent._destroyed or token is None:
            del engine.durable[agent_id]
            continue
        agent._conn = conn
        conn.sinks[agent_id] = agent  # the attach answers into this same object
        try:
            await engine.attach_agent(agent_id, token)
        except TurnloomError as error:  # destroyed, or taken over by another session
            conn.sinks.pop(agent_id, None)
            del engine.durable[agent_id]
            agent.fail(error)
            continue
        attached.append(agent_id)
    return attached
