"""A large frame is taken over several loop iterations (`server.intake`) without
changing what it is answered, or the order of the answers.

Each test runs a server and a raw client on one asyncio loop, so it can watch that loop."""

from __future__ import annotations

import asyncio
import gc
import itertools
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import msgpack
import pytest

import turnloom as tl
from tests.helpers import blocked_prepare
from tests.wire import pause_graph_wire
from turnloom.engine.core import EngineCore
from turnloom.protocol.frames import FrameError, decode_body
from turnloom.protocol.slices import BodyDecode
from turnloom.server import Server, ServerLimits
from turnloom.server.intake import LARGE_BODY_BYTES

#: Ignored by the server (not a field of any request): makes any request a large frame.
PAD = {"padding": "p" * (2 * LARGE_BODY_BYTES)}


def body(message: dict[str, Any]) -> bytes:
    return msgpack.packb(message, use_bin_type=True)


def framed(raw: bytes) -> bytes:
    return struct.pack("<I", len(raw)) + raw


def big_graph(nodes: int = 60) -> dict[str, Any]:
    """A valid graph whose CreateAgent is a large frame (~50 KB)."""
    return {
        "nodes": [
            {"name": f"n{i}", "type": "CannedResponse", "params": {"lines": ["l" * 20] * 40}}
            for i in range(nodes)
        ],
        "start_node": "n0",
        "default_model_name": "mock",
    }


class Client:
    """A raw connection: frames out, frames in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def recv(self) -> dict[str, Any]:
        (length,) = struct.unpack("<I", await self.reader.readexactly(4))
        frame: dict[str, Any] = msgpack.unpackb(await self.reader.readexactly(length))
        return frame

    async def replies(self, count: int) -> list[dict[str, Any]]:
        """The next `count` replies (events skipped)."""
        out = []
        while len(out) < count:
            frame = await asyncio.wait_for(self.recv(), 10)
            if "request_id" in frame and frame["type"] != "NodeEvent":
                out.append(frame)
        return out

    async def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self.writer.write(framed(body(message)))
        return (await self.replies(1))[0]


Scenario = Callable[[Server, Callable[[], Awaitable[Client]]], Awaitable[None]]


def run(scenario: Scenario, **server_options: Any) -> None:
    """Run `scenario` against a fresh server on this loop; a client factory opens configured
    connections."""

    async def main() -> None:
        server = Server(tl.AsyncEngine(tl.MockModel("mock")), **server_options)
        await server.start("127.0.0.1", 0)
        clients: list[Client] = []

        async def connect() -> Client:
            client = Client(*await asyncio.open_connection(*server.address))
            clients.append(client)
            await client.recv()  # SessionReady
            ack = await client.request(
                {"type": "ConfigureSession", "request_id": 0, "protocol_version": 1}
            )
            assert ack["type"] == "Ack"
            return client

        try:
            await scenario(server, connect)
        finally:
            for client in clients:
                client.writer.close()
            await server.close()

    asyncio.run(main())


def ticker() -> tuple[list[int], Callable[[], None]]:
    """A callback that counts loop iterations until stopped."""
    count = [0]
    running = [True]
    loop = asyncio.get_running_loop()

    def tick() -> None:
        count[0] += 1
        if running[0]:
            loop.call_soon(tick)

    loop.call_soon(tick)
    return count, lambda: running.__setitem__(0, False)


def test_a_large_frame_is_decoded_a_slice_per_loop_iteration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[int] = []
    step = BodyDecode.step

    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        count, stop = ticker()

        def counted(self: BodyDecode) -> Any:
            seen.append(count[0])
            return step(self)

        monkeypatch.setattr(BodyDecode, "step", counted)
        reply = await client.request({"type": "CreateAgent", "request_id": 1, "graph": big_graph()})
        stop()
        assert reply["type"] == "CreateAgentResponse"

    run(scenario)
    assert len(seen) > 10
    # Other callbacks ran between every two slices.
    assert all(later > earlier for earlier, later in itertools.pairwise(seen))
    assert gc.isenabled()


def test_replies_keep_request_order_behind_a_large_create_agent() -> None:
    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        # One write: the large frame and the small ones behind it arrive in one chunk.
        client.writer.write(
            b"".join(
                framed(body(m))
                for m in (
                    {"type": "CreateAgent", "request_id": 1, "graph": big_graph()},
                    {"type": "GetAgentState", "request_id": 2, "agent_id": 1},
                    {"type": "CreateAgent", "request_id": 3, "graph": pause_graph_wire()},
                    {"type": "CreateAgent", "request_id": 4, "graph": big_graph(), **PAD},
                    {"type": "DestroyAgent", "request_id": 5, "agent_id": 1},
                    {"type": "ListModels", "request_id": 6},
                )
            )
        )
        replies = await client.replies(6)
        assert [r["request_id"] for r in replies] == [1, 2, 3, 4, 5, 6]
        assert [r["type"] for r in replies] == [
            "CreateAgentResponse",
            "AgentStateResponse",  # the agent existed when its request was answered
            "CreateAgentResponse",
            "CreateAgentResponse",
            "Ack",
            "ModelListResponse",
        ]
        assert [r["agent_id"] for r in replies[:4] if "agent_id" in r] == [1, 1, 2, 3]

    run(scenario)


async def until(condition: Callable[[], bool]) -> None:
    for _ in range(1000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("never happened")


def test_frames_read_while_a_graph_compiles_wait_their_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, release = blocked_prepare(monkeypatch)

    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        other = await connect()
        client.writer.write(
            framed(body({"type": "CreateAgent", "request_id": 1, "graph": big_graph()}))
        )
        await until(started.is_set)
        client.writer.write(framed(body({"type": "GetAgentState", "request_id": 2, "agent_id": 1})))
        # Another session is answered meanwhile.
        assert (await other.request({"type": "ListModels", "request_id": 9}))["models"]
        release.set()
        replies = await client.replies(2)
        assert [(r["request_id"], r["type"]) for r in replies] == [
            (1, "CreateAgentResponse"),
            (2, "AgentStateResponse"),
        ]

    run(scenario)


def test_a_session_closed_while_its_graph_compiles_creates_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started, release = blocked_prepare(monkeypatch)
    committed: list[Any] = []
    monkeypatch.setattr(EngineCore, "create_prepared", lambda *args, **kw: committed.append(args))

    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        client.writer.write(
            framed(body({"type": "CreateAgent", "request_id": 1, "graph": big_graph()}))
        )
        client.writer.write(
            framed(body({"type": "CreateAgent", "request_id": 2, "graph": pause_graph_wire()}))
        )
        await until(started.is_set)
        client.writer.close()
        await until(lambda: not server.sessions)
        release.set()
        await asyncio.sleep(0.05)
        assert server.engine_core.agents == {}
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert tasks == []

    run(scenario)
    assert committed == []
    assert gc.isenabled()


#: Small graphs (a frame of each is answered at once; PAD makes it a large one).
SMALL = big_graph(2)
GENERATE = {"name": "g", "type": "Generate", "params": {}}
LARGE_CREATES = {
    "an unknown model": {
        "graph": {**SMALL, "nodes": [GENERATE], "start_node": "g", "default_model_name": "no"}
    },
    "no model at all": {
        "graph": {"nodes": [GENERATE], "start_node": "g", "default_model_name": ""}
    },
    "a node without params": {"graph": {**SMALL, "nodes": [{"name": "a"}] * 300}},
    "two nodes of one name": {"graph": {**SMALL, "nodes": SMALL["nodes"] * 2}},
    "no start node": {"graph": {**SMALL, "start_node": "zz"}},
    "max_steps_per_turn 0": {"graph": SMALL, "max_steps_per_turn": 0},
    "max_steps_per_turn over the limit": {"graph": SMALL, "max_steps_per_turn": 10**6},
    "durable without a store": {"graph": SMALL, "durable": True},
    "a graph that is a list": {"graph": [1] * 100},
    "lines nested deep": {
        "graph": {
            **SMALL,
            "nodes": [{"name": "a", "type": "CannedResponse", "params": {"lines": "NEST"}}],
            "start_node": "a",
        }
    },
}


def nest(message: dict[str, Any]) -> bytes:
    """`message` packed, with "NEST" replaced by a list nested 900 deep (msgpack's own limit
    is 1024; Python's recursion limit goes first)."""
    return body(message).replace(b"\xa4NEST", b"\x91" * 900 + b"\xc0")


@pytest.mark.parametrize("case", sorted(LARGE_CREATES))
def test_a_refused_large_create_agent_gets_the_refusal_a_small_frame_gets(case: str) -> None:
    fields = LARGE_CREATES[case]

    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        inline = nest({"type": "CreateAgent", "request_id": 1, **fields})
        staged = nest({"type": "CreateAgent", "request_id": 1, **fields, **PAD})
        assert len(staged) > LARGE_BODY_BYTES
        answers = []
        for raw in (inline, staged):
            client.writer.write(framed(raw))
            answers.append((await client.replies(1))[0])
        assert answers[0]["type"] == "ErrorResponse", answers[0]
        assert answers[0] == answers[1]
        assert server.engine_core.agents == {}

    run(scenario, limits=ServerLimits(max_steps_per_turn=1000))


CHANGES = {
    "a whole params object": {"node_type": "CannedResponse", "params": {"lines": ["new"] * 50}},
    "some fields": {"params": {"lines": ["new"] * 50}},
    "an unknown node type": {"node_type": "Nope", "params": {}},
    "a node of another type": {"node_type": "Pause", "params": {}},
    "an unknown node": {"node_name": "zz", "params": {"lines": ["x"]}},
    "an unknown field": {"params": {"lines": ["x"], "colour": 1}},
    "a bad value": {"params": {"lines": [1] * 50}},
    "a value nested deep": {"params": {"lines": "NEST"}},
    "params that are a list": {"params": [1] * 50},
}


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_a_large_change_agent_param_is_answered_as_a_small_one(case: str) -> None:
    fields = CHANGES[case]

    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        outcomes = []
        for pad in ({}, PAD):
            created = await client.request(
                {"type": "CreateAgent", "request_id": 1, "graph": pause_graph_wire()}
            )
            agent_id = created["agent_id"]
            change = {"type": "ChangeAgentParam", "request_id": 2, "agent_id": agent_id}
            client.writer.write(framed(nest({**change, "node_name": "say", **fields, **pad})))
            reply = (await client.replies(1))[0]
            reply.pop("agent_id", None)
            if "message" in reply:
                reply["message"] = reply["message"].replace(f"agent {agent_id}", "agent N")
            params = await client.request(
                {"type": "GetAgentParam", "request_id": 3, "agent_id": agent_id, "node_name": "say"}
            )
            outcomes.append((reply, params["params"]))
        assert outcomes[0] == outcomes[1]

    run(scenario)


def test_a_large_body_refused_for_its_framing_gets_the_same_5001() -> None:
    raw = body({"type": "GetAgentState", "request_id": 4, "agent_id": 1, **PAD})[:-2]

    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        client.writer.write(framed(raw))
        reply = await client.recv()
        with pytest.raises(FrameError) as expected:
            decode_body(raw)
        assert reply["code"] == 5001 and reply["message"] == expected.value.message
        # The session goes on.
        assert (await client.request({"type": "ListModels", "request_id": 5}))["models"]

    run(scenario)
