"""The wire protocol's cost: embedded vs remote (a server in another process, over loopback).

Figures, all on graph Pause "gate" -> CannedResponse "reply" (no model involved, so the numbers
are the engine + transport, not inference):

* resume -> ack: the time from handing a resume to the engine until it is accepted. Remote: a
  ``ResumeAgent`` frame written on the client's loop until its ``Ack`` is read back (one
  loopback round trip, msgpack both ways, the server's handling). Embedded: the same resume
  accepted by the engine core in-process (no transport at all). ``--acks`` resumes in
  ``--rounds`` rounds that interleave the two; the best round's p50 and p99 are shown, with the
  median round's beside them: on this VM a loopback round trip costs about 40 us more when
  the kernel runs client and server on different CPUs than on one, and where it puts them
  changes from one round to the next. Between two samples the turn completes and a new
  one pauses (not timed); every remote sample is checked to be the resume's Ack.
* full turns per second, sequential: one ``send_message`` (returns at the pause) + one
  ``resume`` (returns at completion) per turn, one turn at a time; through the blocking API
  (``tl.Engine`` vs ``tl.connect``: each call runs the engine's / client's loop itself) and
  through the asyncio API (``tl.AsyncEngine`` vs ``tl.connect_async``, on the caller's loop).
* full turns per second, concurrent: ``--agents`` agents driven at once with asyncio.

The remote server is ``python -m turnloom serve --mock --port 0`` started as a child process,
so client and server do not share a GIL, as in a game talking to a local server.

Run from the repository root: ``.venv/bin/python -m bench.wire_bench [--turns 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/wire_bench.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import turnloom as tl
from bench._common import logged_summary, pause_then_canned, print_table, quiet_logging


def start_server(*options: str) -> tuple[subprocess.Popen[str], tuple[str, int]]:
    """`python -m turnloom serve --mock OPTIONS...` on a free loopback port."""
    command = ["serve", "--mock", "--port", "0", "--log-level=error", *options]
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnloom", *command],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    found = re.search(r"on (\S+):(\d+)", proc.stdout.readline())
    if not found:
        proc.kill()
        raise SystemExit("the server did not start")
    return proc, (found.group(1), int(found.group(2)))


def percentile(samples: list[float], q: float) -> float:
    """The q-quantile (0..1) of samples, nearest rank."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# --- resume -> ack -------------------------------------------------------------------------


async def ack_times_embedded(count: int) -> list[float]:
    """Engine-side acceptance of a resume, in-process."""
    async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
        agent = await engine.create_agent(pause_then_canned())
        core = agent._core  # the point of acceptance: the core's resume returns
        samples = []
        for _ in range(count):
            await agent.send_message("hi")
            done = asyncio.get_running_loop().create_future()
            start = time.perf_counter()
            core.resume("", (), done)
            samples.append(time.perf_counter() - start)
            await done  # the turn completes before the next sample
        return samples


async def ack_times_remote(address: tuple[str, int], count: int) -> list[float]:
    """ResumeAgent written until its Ack is read, on the client's loop."""
    async with await tl.connect_async(*address) as remote:
        agent = await remote.create_agent(pause_then_canned())
        conn = agent._conn  # the raw request, so only the round trip is timed
        samples = []
        for _ in range(count):
            await agent.send_message("hi")
            start = time.perf_counter()
            ack = await conn.request({"type": "ResumeAgent", "agent_id": agent.agent_id})
            samples.append(time.perf_counter() - start)
            assert ack["type"] == "Ack" and ack["agent_id"] == agent.agent_id, ack
            # Asked only now, so no other request is in flight while the resume is timed.
            result = await agent.wait_complete()
            assert result is not None and result.text == "ok", result
        return samples


def ack_rounds(address: tuple[str, int], acks: int, rounds: int) -> dict[str, list[list[float]]]:
    """Each ack measurement's samples, by round (the two interleaved round by round)."""
    per_round = max(acks // rounds, 100)
    out: dict[str, list[list[float]]] = {"embedded": [], "remote": []}
    for _ in range(rounds):
        out["remote"].append(asyncio.run(ack_times_remote(address, per_round)))
        out["embedded"].append(asyncio.run(ack_times_embedded(per_round)))
    return out


def best_and_median(rounds: list[list[float]], q: float) -> tuple[float, float]:
    """The q-quantile of each round: the best round's and the median round's."""
    figures = [percentile(samples, q) for samples in rounds]
    return min(figures), statistics.median(figures)


# --- turns per second ----------------------------------------------------------------------


def blocking_turns(engine: tl.Engine | tl.RemoteEngine, turns: int) -> float:
    """Sequential turns through the blocking API; turns per second."""
    agent = engine.create_agent(pause_then_canned())
    paused = answered = 0
    start = time.perf_counter()
    for _ in range(turns):
        paused += agent.send_message("hi").pause is not None
        answered += agent.resume().result.text == "ok"  # type: ignore[union-attr]
    elapsed = time.perf_counter() - start
    assert paused == answered == turns, (paused, answered)
    return turns / elapsed


async def async_turns(engine: Any, turns: int, agents: int) -> float:
    """Turns through the asyncio API, `agents` at a time; turns per second."""
    handles = [await engine.create_agent(pause_then_canned()) for _ in range(agents)]
    return await play_turns(handles, turns)


async def play_turns(handles: list[Any], turns: int) -> float:
    """`turns` turns spread over the agents `handles` (of `pause_then_canned`), all at once,
    each checked (paused, then answered "ok"); turns per second."""
    agents = len(handles)
    per_agent = turns // agents
    checked = [0, 0]  # turns that paused, turns that answered "ok"

    async def drive(agent: Any) -> None:
        for _ in range(per_agent):
            paused = (await agent.send_message("hi")).pause is not None
            checked[0] += paused  # (read after the await: the coroutines interleave)
            answered = (await agent.resume()).result.text == "ok"
            checked[1] += answered

    start = time.perf_counter()
    await asyncio.gather(*(drive(a) for a in handles))
    elapsed = time.perf_counter() - start
    assert checked == [per_agent * agents] * 2, checked
    return per_agent * agents / elapsed


async def with_async_engine(
    address: tuple[str, int] | None, body: Callable[[Any], Awaitable[float]]
) -> float:
    """Run `body(engine)` on an embedded AsyncEngine, or a remote one when `address` is set."""
    if address is None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            return await body(engine)
    async with await tl.connect_async(*address) as remote:
        return await body(remote)


def main() -> None:
    """Run every measurement and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000, help="turns per throughput figure")
    parser.add_argument("--acks", type=int, default=3000, help="resume -> ack samples")
    parser.add_argument("--rounds", type=int, default=5, help="rounds the acks are split in")
    parser.add_argument("--agents", type=int, default=64, help="agents in the concurrent run")
    args = parser.parse_args()
    quiet_logging()
    proc, address = start_server()
    try:
        acks = ack_rounds(address, args.acks, args.rounds)
        with tl.Engine(tl.MockModel("mock")) as engine:
            emb_blocking = blocking_turns(engine, args.turns)
        with tl.connect(*address) as remote:
            rem_blocking = blocking_turns(remote, args.turns)
        emb_async = asyncio.run(with_async_engine(None, lambda e: async_turns(e, args.turns, 1)))
        rem_async = asyncio.run(with_async_engine(address, lambda e: async_turns(e, args.turns, 1)))
        emb_many = asyncio.run(
            with_async_engine(None, lambda e: async_turns(e, args.turns, args.agents))
        )
        rem_many = asyncio.run(
            with_async_engine(address, lambda e: async_turns(e, args.turns, args.agents))
        )
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)

    def us(seconds: float) -> str:
        return f"{seconds * 1e6:,.0f} us"

    def ratio(embedded: float, remote: float) -> str:
        return f"{embedded / remote:.1f}x"

    print(f"turnloom wire benchmark (python {sys.version.split()[0]}, loopback, mock model)")
    print(f"server: python -m turnloom serve --mock, a child process, at {address[0]}:{address[1]}")
    print()
    rows = []
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        figures = {key: best_and_median(rounds, q) for key, rounds in acks.items()}
        rows.append(
            [name]
            + [f"{us(best)} / {us(median)}" for best, median in figures.values()]
            + [f"{figures['remote'][0] / figures['embedded'][0]:.0f}x"]
        )
    print_table(
        ["resume -> ack (best / median round)", "embedded", "remote", "remote / embedded"], rows
    )
    print()
    print_table(
        ["full turns/s (pause + resume)", "embedded", "remote", "embedded / remote"],
        [
            [
                "blocking API, sequential",
                f"{emb_blocking:,.0f}",
                f"{rem_blocking:,.0f}",
                ratio(emb_blocking, rem_blocking),
            ],
            [
                "asyncio API, sequential",
                f"{emb_async:,.0f}",
                f"{rem_async:,.0f}",
                ratio(emb_async, rem_async),
            ],
            [
                f"asyncio API, {args.agents} agents at once",
                f"{emb_many:,.0f}",
                f"{rem_many:,.0f}",
                ratio(emb_many, rem_many),
            ],
        ],
    )
    print()
    print(
        f"{args.acks} resume samples in {args.rounds} rounds, "
        f"{args.turns} turns per throughput figure"
    )
    print(logged_summary())


if __name__ == "__main__":
    main()
