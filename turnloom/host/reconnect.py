"""A remote engine's durable agents taken to a new session (see Reconnect in
docs/reference/durability.md#reconnect): after a dropped connection or a server restart,
`reconnect` opens a new session with the same server and attaches every
durable agent the engine holds, so the host's agent objects, callbacks and registered tools
carry on as they were. Non-durable agents ended with the old session.

Behind a load balancer, the new session may be on another worker sharing the store: an
agent the old worker still holds (it has not seen the connection drop yet, or it died and its
lease has not run out) is 3004 there for a while, so those attaches are tried again, with
backoff, for up to `BUSY_WAIT_S`."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from ..engine.durable.store.base import LEASE_S
from ..protocol.errors import ErrorCode, TurnloomError
from .connection import Connection, EventSink

#: How long an attach is tried again while another worker holds the agent (3004): past a dead
#: worker's lease, at its default length.
BUSY_WAIT_S = 2 * LEASE_S

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
            await _attach(engine, agent_id, token)
        except TurnloomError as error:  # destroyed, or taken over by another session
            conn.sinks.pop(agent_id, None)
            del engine.durable[agent_id]
            agent.fail(error)
            continue
        attached.append(agent_id)
    return attached


async def _attach(engine: _RemoteEngine[Face], agent_id: int, token: str) -> None:
    """Attach, trying again while another worker holds the agent (see the module's doc)."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + BUSY_WAIT_S
    attempt = 0
    while True:
        try:
            await engine.attach_agent(agent_id, token)
            return
        except TurnloomError as error:
            if error.code != ErrorCode.AgentBusy or loop.time() >= give_up:
                raise
        # Up to 20 ms, 40 ms … 500 ms, with full jitter (many agents retry at once).
        await asyncio.sleep(random.uniform(0, min(0.5, 0.02 * 2**attempt)))
        attempt += 1
