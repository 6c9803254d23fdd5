"""Robustness of the server (docs/protocol.md#1-transport-and-framing): fuzzed and mutated
frames, clients vanishing mid-turn, and many clients pausing and resuming at once."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections import Counter
from typing import Any

import msgpack
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnloom as tl
from tests.wire import RawSession, frame, pause_graph_wire, raw_frame
from turnloom.host.aio import AsyncEngine
from turnloom.protocol.messages import EVENTS, REQUESTS
from turnloom.server import BackgroundServer, ServerLimits

Code = tl.ErrorCode
MAX_FRAME = 4096  # a small limit keeps oversize frames cheap to send
ANY = "any reply"

# --- fuzzed streams ------------------------------------------------------------------------

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
request_ids = st.one_of(st.integers(0, 2**63 - 1), st.integers(-5, -1), st.text(max_size=3))
field_values = st.one_of(
    values,
    st.integers(0, 50),
    st.just(pause_graph_wire()),
    st.just([{"call_id": "c00000000", "result": "x"}]),
)
requests = st.fixed_dictionaries(
    {"type": st.sampled_from([*sorted(REQUESTS), "Teleport", ""])},
    optional={
        "request_id": request_ids,
        "protocol_version": st.sampled_from([1, 2, "1"]),
        "agent_id": field_values,
        "graph": field_values,
        "text": field_values,
        "resume_node": field_values,
        "tool_results": field_values,
        "node_name": field_values,
        "node_type": field_values,
        "params": field_values,
    },
)


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    """A request frame with some body bytes flipped, dropped or inserted (prefix kept right)."""
    body = bytearray(msgpack.packb(draw(requests), use_bin_type=True))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "drop", "insert"]))
        at = draw(st.integers(0, max(len(body) - 1, 0)))
        if op == "flip" and body:
            body[at] ^= draw(st.integers(1, 255))
        elif op == "drop" and body:
            del body[at]
        else:
            body.insert(at, draw(st.integers(0, 255)))
    return raw_frame(bytes(body))


framed = st.one_of(
    requests.map(frame),
    mutated(),
    values.map(frame),
    st.binary(max_size=64).map(raw_frame),
)
#: What may end a stream: nothing, an oversize frame (skipped, possibly past the end), or
#: unframed garbage. Either of the last two desynchronises what follows, so they come last.
tails = st.one_of(
    st.just(b""),
    st.tuples(st.integers(MAX_FRAME + 1, 2**32 - 1), st.binary(max_size=64)).map(
        lambda t: struct.pack("<I", t[0]) + t[1]
    ),
    st.binary(min_size=1, max_size=16),
)
streams = st.tuples(st.lists(framed, min_size=1, max_size=8), tails).map(
    lambda t: b"".join(t[0]) + t[1]
)


def expected_replies(stream: bytes) -> list[Any]:
    """An independent reading of the framing rules: the reply each complete frame must get, in
    order."""
    out: list[Any] = []
    pos = 0
    while len(stream) - pos >= 4:
        (length,) = struct.unpack_from("<I", stream, pos)
        if length > MAX_FRAME:
            out.append(Code.FrameTooLarge)
            pos += 4 + length
            continue
        if pos + 4 + length > len(stream):
            break
        body = stream[pos + 4 : pos + 4 + length]
        pos += 4 + length
        try:
            message = msgpack.unpackb(body, raw=False)
        except Exception:
            out.append(Code.MalformedMessage)
            continue
        rid = message.get("request_id") if isinstance(message, dict) else None
        rid_ok = rid is None or (type(rid) is int and 0 <= rid < 2**63)
        typed = isinstance(message, dict) and isinstance(message.get("type"), str)
        if not (rid_ok and typed and message["type"]):
            out.append(Code.MalformedMessage)
        elif message["type"] not in REQUESTS:
            out.append((Code.UnknownMessageType, rid))
        else:
            out.append((ANY, rid))
    return out


def replies_to(address: tuple[str, int], stream: bytes) -> list[dict[str, Any]]:
    """Send `stream` on a fresh session, hang up the writing side, read every reply."""
    raw = RawSession(address)
    raw.send_bytes(stream)
    raw.sock.shutdown(socket.SHUT_WR)
    frames = raw.recv_all()
    raw.close()
    return [f for f in frames if f["type"] not in EVENTS]


def check(expected: list[Any], got: list[dict[str, Any]]) -> None:
    assert len(got) == len(expected), (expected, got)
    for want, reply in zip(expected, got, strict=True):
        if isinstance(want, Code):
            assert reply["type"] == "ErrorResponse" and reply["code"] == want, (want, reply)
            continue
        code, rid = want
        assert reply["request_id"] == rid, (want, reply)
        if code is not ANY:
            assert reply["type"] == "ErrorResponse" and reply["code"] == code, (want, reply)


def test_fuzzed_and_mutated_frames_get_their_codes_and_touch_no_other_session(
    clock: tl.VirtualClock, mock_model: tl.MockModel
) -> None:
    limits = ServerLimits(max_frame_bytes=MAX_FRAME)
    with BackgroundServer(lambda: AsyncEngine(mock_model, clock=clock), limits=limits) as bg:
        bystander = RawSession(bg.address)
        bystander.configure()
        agent = bystander.request({"type": "CreateAgent", "graph": pause_graph_wire()})["agent_id"]
        bystander.request({"type": "SendMessage", "agent_id": agent, "text": "hi"})
        bystander.until(lambda f: f.get("event") == "paused")

        @settings(
            max_examples=150,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(streams)
        def one_session(stream: bytes) -> None:
            check(expected_replies(stream), replies_to(bg.address, stream))

        one_session()
        # The server is up, and the paused bystander saw nothing and is still paused.
        try:
            stray = bystander.recv(timeout=0.2)
        except TimeoutError:
            stray = None
        assert stray is None
        assert bg.call(lambda: set(bg.server.engine.core.agents)) == {agent}
        bystander.request({"type": "ResumeAgent", "agent_id": agent})
        done = bystander.until(lambda f: f["type"] == "TurnComplete")
        assert done[-1]["status"] == "success"


# --- clients that vanish -------------------------------------------------------------------


class HangingModel(tl.MockModel):
    """Generates until cancelled, like a model stuck on a long prompt."""

    async def generate(self, request, on_delta=None):  # type: ignore[no-untyped-def]
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled_generations += 1
            raise
        raise AssertionError("unreachable")


def server_tasks(bg: BackgroundServer) -> int:
    """Tasks on the server's loop, not counting the one that asks."""
    return bg.call(lambda: len(asyncio.all_tasks())) - 1


def test_a_client_that_disconnects_mid_turn_leaves_no_turn_timer_or_task(
    clock: tl.VirtualClock,
) -> None:
    models = [tl.MockModel("mock"), hang := HangingModel("hang")]
    with BackgroundServer(lambda: AsyncEngine(models, clock=clock)) as bg:
        idle_tasks = server_tasks(bg)
        raw = RawSession(bg.address)
        raw.configure()
        paused = raw.request({"type": "CreateAgent", "graph": pause_graph_wire(60_000)})["agent_id"]
        running_graph = {
            "nodes": [{"name": "g", "type": "Generate", "params": {}}],
            "start_node": "g",
            "default_model_name": "hang",
        }
        running = raw.request({"type": "CreateAgent", "graph": running_graph})["agent_id"]
        raw.request({"type": "SendMessage", "agent_id": paused, "text": "wait"})
        raw.until(lambda f: f.get("event") == "paused")
        raw.request({"type": "SendMessage", "agent_id": running, "text": "think"})
        assert clock.pending() == 2  # the pause's deadline and its stall warning
        assert server_tasks(bg) == idle_tasks + 1  # the running turn
        # Vanish without a word: a reset, not a polite close.
        raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.close()
        for _ in range(200):
            if not bg.call(lambda: bg.server.sessions):
                break
            threading.Event().wait(0.01)
        assert bg.call(lambda: bg.server.sessions) == {}
        assert bg.call(lambda: bg.server.engine.core.agents) == {}
        # The pause's deadline is gone; the stall warning's timer stays until its moment.
        assert clock.pending() == 1
        clock.advance(tl.EngineSettings().pause_stall_warn_ms / 1000)
        assert clock.pending() == 0
        assert server_tasks(bg) == idle_tasks
        assert hang.cancelled_generations == 1


def test_closing_the_client_ends_its_turns_with_callbacks(server: BackgroundServer) -> None:
    results: list[tl.TurnResult] = []
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(
            tl.GraphDescription().add_node("gate", tl.PauseParams()).set_start_node("gate")
        )
        agent.set_on_turn_complete(results.append)
        assert agent.send_message("hi").paused
    assert [r.status for r in results] == [tl.TurnStatus.CANCELLED]
    assert server.call(lambda: server.server.engine.core.agents) == {}


# --- many clients at once ------------------------------------------------------------------

CLIENTS, AGENTS, TURNS = 6, 6, 5


def two_pause_graph() -> tl.GraphDescription:
    return (
        tl.GraphDescription()
        .add_node("p1", tl.PauseParams(default_exit="p2"))
        .add_node("p2", tl.PauseParams(default_exit="say"))
        .add_node("say", tl.CannedResponseParams(lines=["done"]))
        .set_start_node("p1")
    )


def test_many_clients_and_agents_pause_and_resume_concurrently_each_turn_completing_once(
    server: BackgroundServer,
) -> None:
    completions: Counter[tuple[int, int]] = Counter()
    statuses: Counter[tl.TurnStatus] = Counter()
    lock = threading.Lock()
    finished = threading.Semaphore(0)
    remotes = [tl.connect(*server.address) for _ in range(CLIENTS)]
    try:
        callback_driven, thread_driven = [], []
        for remote in remotes:
            for i in range(AGENTS):
                agent = remote.create_agent(two_pause_graph())

                def complete(result: tl.TurnResult, agent: tl.Agent = agent) -> None:
                    with lock:
                        completions[(agent.agent_id, result.turn_id)] += 1
                        statuses[result.status] += 1

                agent.set_on_turn_complete(complete)
                (callback_driven if i % 2 else thread_driven).append(agent)

        def drive_by_callbacks(agent: tl.Agent) -> None:
            left = [TURNS]

            def on_complete(result: tl.TurnResult) -> None:
                with lock:
                    completions[(agent.agent_id, result.turn_id)] += 1
                    statuses[result.status] += 1
                left[0] -= 1
                if left[0]:
                    agent.send_message_async("again")
                else:
                    finished.release()

            agent.set_on_paused(lambda node, exit_: agent.resume_async())
            agent.set_on_turn_complete(on_complete)
            agent.send_message_async("go")

        def drive_by_blocking_calls(agent: tl.Agent) -> None:
            for _ in range(TURNS):
                step = agent.send_message("go", timeout=10)
                while step.paused:
                    step = agent.resume(timeout=10)
            finished.release()

        threads = [
            threading.Thread(target=drive_by_blocking_calls, args=(a,)) for a in thread_driven
        ]
        for agent in callback_driven:
            drive_by_callbacks(agent)
        for thread in threads:
            thread.start()
        for _ in range(CLIENTS * AGENTS):
            assert finished.acquire(timeout=20)
        for thread in threads:
            thread.join(10)
        threading.Event().wait(0.1)  # anything late would show up now
        assert len(completions) == CLIENTS * AGENTS * TURNS
        assert set(completions.values()) == {1}
        assert statuses == {tl.TurnStatus.SUCCESS: CLIENTS * AGENTS * TURNS}
    finally:
        for remote in remotes:
            remote.close()
    assert server.call(lambda: server.server.engine.core.agents) == {}
