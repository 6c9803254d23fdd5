"""Wire fuzz: ≥100,000 mutated frames on one session while a well-behaved client plays turns.

The server is `bench.watched_server` (the mock engine ``turnloom serve --mock`` runs, its event
loop watched) in a child process. The fuzzer sends valid requests with fields replaced by
hostile values (deep nesting, huge ints, NaN/inf, wrong types, huge strings, bin/ext), with
unknown or swapped types, and with random bytes flipped, inserted or cut. Every 100 frames a
ping (``ConfigureSession``) must be answered within 10 s on the same connection: a session
closed or silent is a violation. A well-behaved client in a third process runs full turns
(send → pause → resume → reply) all along through ``tl.connect``; any error it sees is a
violation, and its p50/p99/max per turn are reported, with the server loop's longest block.

Run from the repository root: ``.venv/bin/python -m bench.fuzz [--frames 100000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a file
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import msgpack

import turnloom as tl
from bench._common import pause_then_canned, quiet_logging
from bench.watched_server import (
    MAX_BODY,
    PING_TIMEOUT_S,
    WatchedServer,
    deep,
    frame_bytes,
    open_session,
    pack_with,
)
from bench.wire_bench import percentile
from turnloom.protocol.graph_codec import graph_to_wire

PING_EVERY = 100


def hostile_value(rng: random.Random) -> Any:
    """One value nobody should send."""
    pick = rng.randrange(16)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice((True, False))
    if pick == 2:
        return rng.choice((-1, 0, 2**63 - 1, 2**64 - 1, -(2**63), 10**18))
    if pick == 3:
        return rng.choice((math.nan, math.inf, -math.inf, 1e308, -0.0))
    if pick == 4:
        return "x" * rng.choice((0, 1, 100, 70_000, 300_000))
    if pick == 5:
        return b"\x00\xff" * rng.randrange(1, 100)
    if pick == 6:
        return msgpack.ExtType(rng.randrange(0, 127), b"ext")
    if pick == 7:
        return [rng.randrange(10) for _ in range(rng.choice((0, 10, 20_000)))]
    if pick == 8:
        return {str(i): i for i in range(rng.choice((0, 5, 5_000)))}
    if pick == 9:
        return [{"call_id": f"c{rng.randrange(4):08x}", "result": "r"}] * rng.choice((1, 40_000))
    if pick == 10:
        return rng.choice(("", "gate", "say", "nowhere", "\u0000", "\udcff"[:0] + "é" * 10))
    if pick == 11:
        return {"call_id": rng.choice((None, 1, "c00000001")), "result": rng.choice((None, {}))}
    if pick == 12:
        return rng.randrange(-5, 5)
    if pick == 13:
        return [[[[[]]]]]
    if pick == 14:
        return 1.5
    return "\U0001f600" * rng.randrange(1, 1000)


class Corpus:
    """Valid requests for one session, with the agent ids it created."""

    TYPES = (
        "ConfigureSession",
        "CreateAgent",
        "DestroyAgent",
        "SendMessage",
        "ResumeAgent",
        "ChangeAgentParam",
        "GetAgentParam",
        "GetAgentState",
        "Cancel",
    )

    def __init__(self, graph: dict[str, Any]) -> None:
        self.graph = graph
        self.agent_ids = [1]

    def valid(self, rng: random.Random, request_id: int) -> dict[str, Any]:
        kind = rng.choice(self.TYPES)
        agent_id = rng.choice(self.agent_ids)
        base: dict[str, Any] = {"type": kind, "request_id": request_id}
        if kind == "ConfigureSession":
            return {**base, "protocol_version": 1}
        if kind == "CreateAgent":
            return {**base, "graph": self.graph}
        if kind == "SendMessage":
            return {**base, "agent_id": agent_id, "text": "hi"}
        if kind == "ResumeAgent":
            results = [{"call_id": "c00000001", "result": "ok"}] if rng.random() < 0.3 else []
            return {
                **base,
                "agent_id": agent_id,
                "resume_node": rng.choice(("", "say")),
                "tool_results": results,
            }
        if kind == "ChangeAgentParam":
            return {**base, "agent_id": agent_id, "node_name": "say", "params": {"lines": ["a"]}}
        if kind == "GetAgentParam":
            return {**base, "agent_id": agent_id, "node_name": rng.choice(("gate", "say"))}
        return {**base, "agent_id": agent_id}

    def mutated(self, rng: random.Random, request_id: int) -> bytes:
        """One mutated frame body."""
        message = self.valid(rng, request_id)
        roll = rng.random()
        if roll < 0.55:  # a field (existing or new) gets a hostile value
            key = rng.choice([*message, "extra", "params", "graph", "tool_results"])
            if rng.random() < 0.1:
                return pack_with(message, key, deep(rng.choice((100, 900, 1000, 5000))))
            message[key] = hostile_value(rng)
            try:
                return msgpack.packb(message)
            except (ValueError, OverflowError):
                return msgpack.packb({"type": message["type"]})
        if roll < 0.65:  # the type is wrong or swapped
            message["type"] = rng.choice((*self.TYPES, "", "Nope", 7, None, "Ack"))
            return msgpack.packb(message)
        body = bytearray(msgpack.packb(message))  # bytes flipped, inserted or cut
        for _ in range(rng.randrange(1, 4)):
            op = rng.randrange(3)
            at = rng.randrange(len(body) + 1)
            if op == 0 and at < len(body):
                body[at] = rng.randrange(256)
            elif op == 1:
                body[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 8)))
            else:
                del body[at : at + rng.randrange(1, 8)]
        return bytes(body)


async def fuzz(address: tuple[str, int], count: int, seed: int) -> tuple[int, list[str], Counter]:
    """Send `count` mutated frames; return (frames sent, violations, error codes seen)."""
    rng = random.Random(seed)
    graph = graph_to_wire(pause_then_canned())
    corpus = Corpus(graph)
    violations: list[str] = []
    frames, writer = await open_session(address)
    writer.write(frame_bytes(msgpack.packb({"type": "CreateAgent", "graph": graph})))
    codes: Counter[int] = Counter()
    request_id = 10
    for sent in range(1, count + 1):
        request_id += 1
        if frames.created:  # aim at live agents: the fuzz's own DestroyAgent retires some
            corpus.agent_ids = frames.created[-8:]
        writer.write(frame_bytes(corpus.mutated(rng, request_id)[:MAX_BODY]))
        if sent % PING_EVERY:
            continue
        await writer.drain()
        request_id += 1
        ping = {"type": "ConfigureSession", "protocol_version": 1, "request_id": request_id}
        writer.write(frame_bytes(msgpack.packb(ping)))
        reply = await frames.reply_to(request_id, PING_TIMEOUT_S)
        if reply is None or reply.get("type") != "Ack":
            why = "closed" if frames.closed.is_set() else f"answered {reply}"
            violations.append(f"after frame {sent}: ping not acknowledged ({why})")
            codes.update(frames.codes)
            writer.close()
            frames, writer = await open_session(address)
    codes.update(frames.codes)
    writer.close()
    return count, violations, codes


def polite_client(address: tuple[str, int]) -> None:
    """(child process) Full turns through `tl.connect` until stdin closes; print latencies."""
    quiet_logging()
    samples: list[float] = []
    errors = 0
    stop = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    with tl.connect(*address) as engine:
        agent = engine.create_agent(pause_then_canned())
        while not stop.is_set():
            start = time.perf_counter()
            try:
                step = agent.send_message("hi")
                assert step.paused, step
                step = agent.resume()
                assert step.result is not None and step.result.text == "ok", step
            except Exception as error:
                errors += 1
                print(f"error {type(error).__name__}: {error}", file=sys.stderr)
                if isinstance(error, tl.ConnectionDropped):
                    break
                continue
            samples.append(time.perf_counter() - start)
    stop.wait()
    ms = [s * 1000 for s in samples] or [math.nan]
    p50, p99 = percentile(ms, 0.5), percentile(ms, 0.99)
    print(
        f"{len(samples):,} turns, {errors} errors; "
        f"ms per turn p50 {p50:.2f} p99 {p99:.2f} max {max(ms):.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the fuzz; exit 1 on any violation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--polite", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    quiet_logging()
    if args.polite:
        host, port = args.polite.rsplit(":", 1)
        polite_client((host, int(port)))
        return 0

    server = WatchedServer()
    violations: list[str] = []
    try:
        server.lag_ms()
        address = f"{server.address[0]}:{server.address[1]}"
        polite = subprocess.Popen(
            [sys.executable, "-m", "bench.fuzz", "--polite", address],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        began = time.perf_counter()
        sent, found, codes = asyncio.run(fuzz(server.address, args.frames, args.seed))
        seconds = time.perf_counter() - began
        fuzz_lag = server.lag_ms()
        violations += found
        print(f"fuzz: {sent:,} mutated frames in {seconds:.0f} s, {len(found)} violations")
        print("server answers by error code:", dict(sorted(codes.items())))
        print(f"server loop, worst block during the fuzz: {fuzz_lag:.1f} ms")
        out, _ = polite.communicate(input="", timeout=30)  # closing its stdin stops it
        print("well-behaved client alongside:", out.strip() or "(no report)")
        polite_errors = re.search(r"(\d+) errors", out)
        if polite_errors is None or int(polite_errors.group(1)):
            violations.append(f"the well-behaved client was disturbed: {out.strip()!r}")
        if not server.alive():
            violations.append("the server died")
    finally:
        server.close()
    for line in violations[:20]:
        print("VIOLATION:", line)
    print(f"\nviolations: {len(violations)}")
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
