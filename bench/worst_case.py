"""The heaviest single requests we could build within the frame limit, and how long each
blocks the engine's event loop: over the wire (the `bench.watched_server` child) and embedded
(an ``AsyncEngine`` whose loop is watched the same way).

The goal (issue 9): no single request blocks the loop for more than 10 ms. Each request is
sent alone on a fresh session whose agent is paused; the table gives its answer (error codes
seen), the round trip and the server loop's longest block while it was handled.

Run from the repository root: ``.venv/bin/python -m bench.worst_case``.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgpack

import turnloom as tl
from bench._common import pause_then_canned, print_table, quiet_logging
from bench.watched_server import (
    PING_TIMEOUT_S,
    LoopWatch,
    WatchedServer,
    deep,
    frame_bytes,
    open_session,
    pack_with,
)
from turnloom.protocol.graph_codec import graph_to_wire


def heavy_requests() -> list[tuple[str, Callable[[int], bytes]]]:
    """(label, body(agent_id)) of the heaviest requests we found within the frame limit:
    over the size limits (refused before their items are read) and the largest allowed."""
    results = [{"call_id": f"c{i:08x}", "result": ""} for i in range(36_000)]
    same = [{"call_id": "c00000001", "result": ""}] * 36_000
    chain = [
        {"name": f"n{i}", "type": "CannedResponse", "params": {"lines": ["x"]}}
        for i in range(9_000)
    ]
    tools = [
        {"name": f"t{i}", "description": "", "parameters": [{"name": "a", "type": "string"}]}
        for i in range(9_000)
    ]
    tool_graph = {
        "nodes": [{"name": "t", "type": "ToolCall", "params": {"tools": tools}}],
        "start_node": "t",
        "default_model_name": "mock",
    }

    # The largest graphs the limits allow (256 nodes; 128 tools a node; 1024 lines a node).
    many_tools = [
        {
            "name": f"n{i}",
            "type": "ToolCall",
            "params": {"tools": [{"name": f"t{j}"} for j in range(128)]},
        }
        for i in range(256)
    ]
    many_lines = [
        {"name": f"n{i}", "type": "CannedResponse", "params": {"lines": ["x"] * 1024}}
        for i in range(256)
    ]

    def create(nodes: list[Any]) -> Callable[[int], bytes]:
        graph = {"nodes": nodes, "start_node": "n0", "default_model_name": "mock"}
        return lambda a: msgpack.packb({"type": "CreateAgent", "request_id": 1, "graph": graph})

    def resume(items: list[Any]) -> Callable[[int], bytes]:
        return lambda a: msgpack.packb(
            {"type": "ResumeAgent", "request_id": 1, "agent_id": a, "tool_results": items}
        )

    def change(params: dict[str, Any]) -> Callable[[int], bytes]:
        return lambda a: msgpack.packb(
            {
                "type": "ChangeAgentParam",
                "request_id": 1,
                "agent_id": a,
                "node_name": "reply",
                "params": params,
            }
        )

    return [
        ("ResumeAgent, 36,000 distinct tool results", resume(results)),
        ("ResumeAgent, 36,000 copies of one result", resume(same)),
        (
            "ResumeAgent, one 1,000,000-byte result",
            resume([{"call_id": "c1", "result": "x" * 10**6}]),
        ),
        (
            "request_id nested 1,000 deep",
            lambda a: pack_with({"type": "Cancel"}, "request_id", deep(1000)),
        ),
        ("body nested 900,000 deep", lambda a: deep(900_000)),
        (
            "SendMessage, 1,000,000-char text",
            lambda a: msgpack.packb(
                {"type": "SendMessage", "request_id": 1, "agent_id": a, "text": "y" * 10**6}
            ),
        ),
        (
            "CreateAgent, 9,000 chained nodes",
            lambda a: msgpack.packb(
                {
                    "type": "CreateAgent",
                    "request_id": 1,
                    "graph": {"nodes": chain, "start_node": "n0"},
                }
            ),
        ),
        (
            "CreateAgent, a ToolCall with 9,000 tools",
            lambda a: msgpack.packb({"type": "CreateAgent", "request_id": 1, "graph": tool_graph}),
        ),
        ("CreateAgent, 256 ToolCall nodes x 128 tools", create(many_tools)),
        ("CreateAgent, 256 CannedResponse nodes x 1024 lines", create(many_lines)),
        ("ChangeAgentParam, 60,000 lines", change({"lines": ["z" * 10] * 60_000})),
        ("ChangeAgentParam, 1024 lines", change({"lines": ["z" * 10] * 1024})),
        (
            "ChangeAgentParam, value nested 1,000 deep",
            lambda a: pack_with(
                {"type": "ChangeAgentParam", "request_id": 1, "agent_id": a, "node_name": "reply"},
                "params",
                b"\x81\xa5lines" + deep(1000),
            ),
        ),
        (
            "a map of 80,000 unknown fields",
            lambda a: msgpack.packb(
                {
                    "type": "GetAgentState",
                    "request_id": 1,
                    "agent_id": a,
                    **{f"k{i}": i for i in range(80_000)},
                }
            ),
        ),
    ]


async def worst_wire(server: WatchedServer) -> list[list[Any]]:
    """Each heavy request alone on a fresh session; the server loop's worst block for each."""
    rows = []
    graph = graph_to_wire(pause_then_canned())
    for label, build in heavy_requests():
        frames, writer = await open_session(server.address)
        create = {"type": "CreateAgent", "request_id": 2, "graph": graph}
        writer.write(frame_bytes(msgpack.packb(create)))
        created = await frames.reply_to(2, PING_TIMEOUT_S)
        agent_id = created["agent_id"] if created else 0
        if not label.startswith("SendMessage"):  # the others find the agent paused
            start = {"type": "SendMessage", "request_id": 3, "agent_id": agent_id, "text": "hi"}
            writer.write(frame_bytes(msgpack.packb(start)))
            await frames.reply_to(3, PING_TIMEOUT_S)
        await asyncio.sleep(0.05)
        server.lag_ms()  # a new window
        body = build(agent_id)
        began = time.perf_counter()
        writer.write(frame_bytes(body))
        ping = {"type": "GetAgentState", "request_id": 9, "agent_id": agent_id}
        writer.write(frame_bytes(msgpack.packb(ping)))
        answered = await frames.reply_to(9, PING_TIMEOUT_S)
        round_trip = time.perf_counter() - began
        codes = ",".join(str(c) for c in sorted(frames.codes)) or "-"
        rows.append(
            [label, f"{len(body):,}", codes, f"{round_trip * 1000:.1f}", f"{server.lag_ms():.1f}"]
        )
        if answered is None:
            rows[-1][2] += " (NO ANSWER)"
        writer.close()
    return rows


async def worst_embedded() -> list[list[Any]]:
    """The requests that make sense in-process, on an `AsyncEngine` whose loop is watched."""
    rows = []
    watch = LoopWatch()
    watch.start()
    async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
        agent = await engine.create_agent(pause_then_canned())
        await agent.send_message("hi")
        nested: list[Any] = []
        for _ in range(5000):
            nested = [nested]
        cases: list[tuple[str, Callable[[], Any]]] = [
            (
                "resume, 36,000 distinct results",
                lambda: agent.resume("", [(f"c{i:08x}", "") for i in range(36_000)]),
            ),
            (
                "resume, 36,000 copies of one result",
                lambda: agent.resume("", [("c1", "")] * 36_000),
            ),
            ("resume, tool_results a 10 MB str", lambda: agent.resume("", "x" * 10**7)),
            ("resume, resume_node nested 5,000 deep", lambda: agent.resume(nested)),
            (
                "change_params, lines nested 5,000 deep",
                lambda: agent.change_params("reply", {"lines": nested}),
            ),
            (
                "change_params, 60,000 lines",
                lambda: agent.change_params("reply", {"lines": ["z"] * 60_000}),
            ),
            ("get_params, node name nested 5,000 deep", lambda: agent.get_params(nested)),
        ]
        for label, call in cases:
            await asyncio.sleep(0.01)
            watch.take()
            began = time.perf_counter()
            outcome = "ok"
            try:
                await call()
            except tl.TurnloomError as error:
                outcome = str(int(error.code))
            except Exception as error:
                outcome = f"LEAKED {type(error).__name__}"
            took = time.perf_counter() - began
            await asyncio.sleep(0.005)
            rows.append([label, outcome, f"{took * 1000:.1f}", f"{watch.take() * 1000:.1f}"])
            if agent._core.turn.state != "paused":
                await agent.cancel()
                await agent.send_message("hi")
    return rows


def main() -> int:
    """Print both tables."""
    quiet_logging()
    server = WatchedServer()
    try:
        server.lag_ms()
        print("over the wire (each request alone; server loop watched):")
        rows = asyncio.run(worst_wire(server))
        print_table(["request", "bytes", "codes", "round trip ms", "loop block ms"], rows)
    finally:
        server.close()
    print("\nembedded (AsyncEngine; its loop watched):")
    print_table(["call", "answer", "call ms", "loop block ms"], asyncio.run(worst_embedded()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
