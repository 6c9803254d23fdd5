"""The heaviest single requests we could build within the frame limit, and how long each
blocks the engine's event loop: over the wire (the `bench.watched_server` child) and embedded
(an ``AsyncEngine`` whose loop is watched the same way).

The goal: no single request blocks the loop for more than 10 ms. Each request is
sent alone on a fresh session whose agent is paused (on the cases about a big ToolCall node, an
agent paused before one), RUNS times; the table gives its answer (error codes seen), the round
trip and the server loop's longest block while it was handled (the median of the runs: the
2-core VM adds scheduling noise to any one of them).

Run from the repository root: ``.venv/bin/python -m bench.worst_case``.
"""

from __future__ import annotations

import asyncio
import statistics
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
from turnloom.engine.turns.dialog.projection import Interaction
from turnloom.protocol.graph_codec import graph_from_wire, graph_to_wire, params_from_wire

#: Runs of each case; the median is reported.
RUNS = 3
#: Just under the frame limit.
MIB = (1 << 20) - 16


def array32(count: int, item: bytes) -> bytes:
    """A msgpack array of `count` copies of an encoded item."""
    return b"\xdd" + count.to_bytes(4, "big") + item * count


def big_tools() -> list[dict[str, Any]]:
    """The largest tool list one node may have: 128 tools of 64 parameters (~180 KB)."""
    return [
        {
            "name": f"t{i}",
            "description": "",
            "parameters": [{"name": f"p{k}", "type": "string"} for k in range(64)],
        }
        for i in range(128)
    ]


def tool_graph() -> dict[str, Any]:
    """Pause "gate" -> ToolCall "tools" with `big_tools`, as wire data."""
    return {
        "nodes": [
            {"name": "gate", "type": "Pause", "params": {"default_exit": "tools"}},
            {"name": "tools", "type": "ToolCall", "params": {"tools": big_tools()}},
        ],
        "start_node": "gate",
        "default_model_name": "mock",
    }


def heavy_requests() -> list[tuple[str, Callable[[int], bytes]]]:
    """(label, body(agent_id)) of the heaviest requests we found within the frame limit:
    over the size limits (refused before their items are read), the largest allowed, and
    pathological bodies. Labels starting "ToolCall node" run against `tool_graph`'s agent."""
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
    widest = [
        {"name": f"n{i}", "type": "ToolCall", "params": {"tools": big_tools()}} for i in range(5)
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

    tools_change = {
        "type": "ChangeAgentParam",
        "request_id": 1,
        "node_name": "tools",
    }
    return [
        ("1 MiB: a million empty maps", lambda a: array32(MIB - 5, b"\x80")),
        ("1 MiB: a million empty arrays", lambda a: array32(MIB - 5, b"\x90")),
        ("1 MiB: 350,000 ext values", lambda a: array32((MIB - 5) // 3, b"\xd4\x01\x00")),
        (
            "1 MiB: a million empty arrays, then a bad byte",
            lambda a: b"\x92" + array32(MIB - 7, b"\x90") + b"\xc1",
        ),
        ("1 MiB: a million empty arrays, cut short", lambda a: array32(MIB - 20, b"\x90")[:-5]),
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
        ("CreateAgent, 5 ToolCall nodes x 128 tools x 64 params", create(widest)),
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
            "ToolCall node: ChangeAgentParam, its 128 x 64 tools again",
            lambda a: msgpack.packb(
                {
                    **tools_change,
                    "agent_id": a,
                    "node_type": "ToolCall",
                    "params": {"tools": big_tools(), "system_prompt": "be brief"},
                }
            ),
        ),
        (
            "ToolCall node: ChangeAgentParam, system_prompt only",
            lambda a: msgpack.packb(
                {**tools_change, "agent_id": a, "params": {"system_prompt": "short"}}
            ),
        ),
        (
            "ToolCall node: GetAgentParam",
            lambda a: msgpack.packb(
                {"type": "GetAgentParam", "request_id": 1, "agent_id": a, "node_name": "tools"}
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
    for label, build in heavy_requests():
        trips, blocks, codes, body = [], [], "-", b""
        for _ in range(RUNS):
            graph = (
                tool_graph() if label.startswith("ToolCall") else graph_to_wire(pause_then_canned())
            )
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
            trips.append(time.perf_counter() - began)
            blocks.append(server.lag_ms())
            codes = ",".join(str(c) for c in sorted(frames.codes)) or "-"
            if answered is None:
                codes += " (NO ANSWER)"
            writer.close()
        rows.append(
            [
                label,
                f"{len(body):,}",
                codes,
                f"{statistics.median(trips) * 1000:.1f}",
                f"{statistics.median(blocks):.1f}",
                f"{max(blocks):.1f}",
            ]
        )
    return rows


async def worst_embedded() -> list[list[Any]]:
    """The requests that make sense in-process, on an `AsyncEngine` whose loop is watched.
    Their arguments are built before the clock starts: that cost is the host's own."""
    rows = []
    watch = LoopWatch()
    watch.start()
    async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
        agent = await engine.create_agent(pause_then_canned())
        await agent.send_message("hi")
        tooled = await engine.create_agent(graph_from_wire(tool_graph()))
        await tooled.send_message("hi")
        nested: list[Any] = []
        for _ in range(5000):
            nested = [nested]
        results = [(f"c{i:08x}", "") for i in range(36_000)]
        same = [("c1", "")] * 36_000
        text = "x" * 10**7
        lines = ["z"] * 60_000

        def graph(nodes: list[Any]) -> Callable[[], Any]:
            wire = {"nodes": nodes, "start_node": "n0", "default_model_name": "mock"}
            return lambda: graph_from_wire(wire)  # a fresh description: none compiled yet

        many_tools = graph(
            [
                {
                    "name": f"n{i}",
                    "type": "ToolCall",
                    "params": {"tools": [{"name": f"t{j}"} for j in range(128)]},
                }
                for i in range(256)
            ]
        )
        many_lines = graph(
            [
                {"name": f"n{i}", "type": "CannedResponse", "params": {"lines": ["x"] * 1024}}
                for i in range(256)
            ]
        )
        widest = graph(
            [
                {"name": f"n{i}", "type": "ToolCall", "params": {"tools": big_tools()}}
                for i in range(5)
            ]
        )
        talkers = []  # agents with a 50,000-turn dialog, to destroy
        for _ in range(RUNS):
            talker = await engine.create_agent(pause_then_canned())
            talker._core.dialog.extend(
                Interaction("hi", [{"role": "assistant", "content": "ok"}]) for _ in range(50_000)
            )
            talkers.append(talker)
        same_tools = params_from_wire(
            "tools", "ToolCall", {"tools": big_tools(), "system_prompt": "be brief"}
        )
        cases: list[tuple[str, Callable[[], Any], Callable[[], Any]]] = [
            ("resume, 36,000 distinct results", tuple, lambda _: agent.resume("", results)),
            ("resume, 36,000 copies of one result", tuple, lambda _: agent.resume("", same)),
            ("resume, tool_results a 10 MB str", tuple, lambda _: agent.resume("", text)),
            ("resume, resume_node nested 5,000 deep", tuple, lambda _: agent.resume(nested)),
            (
                "change_params, lines nested 5,000 deep",
                tuple,
                lambda _: agent.change_params("reply", {"lines": nested}),
            ),
            (
                "change_params, 60,000 lines",
                tuple,
                lambda _: agent.change_params("reply", {"lines": lines}),
            ),
            ("get_params, node name nested 5,000 deep", tuple, lambda _: agent.get_params(nested)),
            ("create_agent, 256 ToolCall nodes x 128 tools", many_tools, engine.create_agent),
            (
                "create_agent, 256 CannedResponse nodes x 1024 lines",
                many_lines,
                engine.create_agent,
            ),
            ("create_agent, 5 ToolCall nodes x 128 tools x 64 params", widest, engine.create_agent),
            (
                "change_params, a 128 x 64 tools node, whole",
                tuple,
                lambda _: tooled.change_params("tools", same_tools),
            ),
            (
                "change_params, that node's system_prompt only",
                tuple,
                lambda _: tooled.change_params("tools", {"system_prompt": "short"}),
            ),
            ("get_params, that node", tuple, lambda _: tooled.get_params("tools")),
            ("destroy, an agent with a 50,000-turn dialog", talkers.pop, lambda a: a.destroy()),
        ]
        for label, prepare, call in cases:
            times, blocks, outcome = [], [], "ok"
            for _ in range(RUNS):
                argument = prepare()
                await asyncio.sleep(0.01)
                watch.take()
                began = time.perf_counter()
                try:
                    await call(argument)
                except tl.TurnloomError as error:
                    outcome = str(int(error.code))
                except Exception as error:
                    outcome = f"LEAKED {type(error).__name__}"
                times.append(time.perf_counter() - began)
                del argument
                await asyncio.sleep(0.005)
                blocks.append(watch.take() * 1000)
                for one in (agent, tooled):
                    if one._core.turn.state != "paused":
                        await one.cancel()
                        await one.send_message("hi")
            rows.append(
                [
                    label,
                    outcome,
                    f"{statistics.median(times) * 1000:.1f}",
                    f"{statistics.median(blocks):.1f}",
                    f"{max(blocks):.1f}",
                ]
            )
    return rows


def main() -> int:
    """Print both tables."""
    quiet_logging()
    server = WatchedServer()
    try:
        server.lag_ms()
        print("over the wire (each request alone; server loop watched):")
        rows = asyncio.run(worst_wire(server))
        print_table(
            ["request", "bytes", "codes", "round trip ms", "loop block ms", "worst run"], rows
        )
    finally:
        server.close()
    print("\nembedded (AsyncEngine; its loop watched):")
    rows = asyncio.run(worst_embedded())
    print_table(["call", "answer", "call ms", "loop block ms", "worst run"], rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
