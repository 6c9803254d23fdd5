"""Several workers over one Redis store (docs/scaling.md): what the store costs a worker, what a
second worker adds, what one turn costs Redis, and how long an agent takes to move.

    python -m bench.workers [--turns 6000] [--agents 64] [--moves 300] [--rounds 5]

Every configuration runs real `python -m turnloom serve --mock` processes and the same load:
`--agents` agents driven at once through the asyncio client (one connection per worker, the
agents spread evenly), each turn a user message that pauses at "gate", a resume, and the
reply "ok" (every turn checked: paused, then answered "ok"). Configurations:

* 1 worker, no store (`durable=False` agents): the baseline;
* 1 worker, `--store FILE.db` (SQLite, one process only);
* 1 worker, `--store redis://`;
* 2 workers, `--store redis://`, half the agents on each.

A durable agent's pauses and completions are written in groups (every agent that came to rest
in one loop iteration, one SQLite transaction or one Redis script call; only what changed: the
snapshot's head, and the dialog's tail at a completion) before the client hears of them,
written on the worker's loop (a Redis call's reply read on the loop's next pass; by a thread
of the store's own only while most groups wait on the disk or the network:
`write_queue.OFF_LOOP_WAIT_S`). The configurations take turns,
`--rounds` times: this machine's load changes from minute to minute, and taking turns spreads
that over every configuration alike. Each configuration's best run gives the table; the
ratios against the no-store rate are also taken round by round (each store run against the
no-store run of its own round, seconds apart), and the median of those is the figure checked
against the 0.7x the store aims for: a single quiet minute can make one no-store run the best
by far, and the rounds' own ratios do not depend on it.

With Redis, the server's own counters (`INFO`: commands processed, CPU) give the commands and
Redis CPU per turn, and from that the turns per second one Redis core could carry for this
workload. The workers' CPU per turn (all their threads, from /proc) and the client's (this
process) show where a store's cost lands: on a machine whose cores the client and the workers
already fill, a worker's extra CPU per turn is what its turn rate loses.

Moves: an agent paused on worker A whose session closes, then `AttachAgent` on
worker B (the claim, the read, the restore): p50 / p99 of the attach round trip.

All processes share this machine's cores (2 on the project's VM): the 2-worker row shows what
the protocol costs, not what two machines would give.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/workers.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import turnloom as tl
from bench._common import pause_then_canned, print_table, redis_server
from bench.wire_bench import play_turns, start_server

#: The share of the no-store turn rate a worker with a store aims for.
TARGET = 0.7


@contextmanager
def started(count: int, *options: str) -> Iterator[tuple[list[tuple[str, int]], list[int]]]:
    """`count` servers with `options`; their addresses and process ids."""
    procs = []
    try:
        for _ in range(count):
            procs.append(start_server(*options))
        yield [address for _, address in procs], [proc.pid for proc, _ in procs]
    finally:
        for proc, _ in procs:
            proc.terminate()
            proc.wait(10)


async def drive(addresses: list[tuple[str, int]], agents: int, turns: int, durable: bool) -> float:
    """`turns` turns over `agents` agents spread on `addresses`; turns per second."""
    remotes = [await tl.connect_async(*address) for address in addresses]
    try:
        handles = [
            await remotes[i % len(remotes)].create_agent(pause_then_canned(), durable=durable)
            for i in range(agents)
        ]
        return await play_turns(handles, turns)
    finally:
        for remote in remotes:
            await remote.aclose()


async def moves(a: tuple[str, int], b: tuple[str, int], count: int) -> list[float]:
    """Seconds per AttachAgent on `b` of an agent paused on `a` whose session closed."""
    async with await tl.connect_async(*a) as first:
        tokens = []
        for _ in range(count):
            agent = await first.create_agent(pause_then_canned(), durable=True)
            assert (await agent.send_message("hi")).pause is not None
            tokens.append((agent.agent_id, agent.resume_token))
    samples = []
    async with await tl.connect_async(*b) as second:
        for agent_id, token in tokens:
            for _ in range(100):  # A may still be letting go of the first ones
                try:
                    start = time.perf_counter()
                    moved = await second.attach_agent(agent_id, token)
                    samples.append(time.perf_counter() - start)
                    break
                except tl.TurnloomError as error:
                    if error.code != tl.ErrorCode.AgentBusy:
                        raise
                    await asyncio.sleep(0.01)
            else:
                raise AssertionError(f"agent {agent_id} never let go")
            assert (await moved.resume()).result.text == "ok"
    return samples


def cpu_seconds(pids: list[int]) -> float:
    """CPU time (user + system, all threads) the processes `pids` have used so far."""
    ticks = 0
    for pid in pids:
        # /proc/PID/stat: fields 14 and 15 (utime, stime), after the parenthesised name.
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def redis_counters(url: str) -> tuple[int, float]:
    """(commands processed, CPU seconds used) of the Redis server at `url`."""
    import redis

    client = redis.Redis.from_url(url)
    stats, cpu = client.info("stats"), client.info("cpu")
    client.close()
    return stats["total_commands_processed"], cpu["used_cpu_sys"] + cpu["used_cpu_user"]


def empty_redis(url: str) -> None:
    """Delete every key of the Redis database at `url`."""
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=6000)
    parser.add_argument("--agents", type=int, default=64)
    parser.add_argument("--moves", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5, help="runs of each configuration")
    args = parser.parse_args(argv)
    server = redis_server()
    if server is None:
        raise SystemExit("redis-server is not installed (apt-get install redis-server)")
    redis_proc, url = server
    rows = []
    try:
        with tempfile.TemporaryDirectory() as work, ExitStack():
            configs: list[tuple[str, int, tuple[str, ...], bool]] = [
                ("1 worker, no store", 1, (), False),
                ("1 worker, SQLite store", 1, ("--store", "FILE"), True),
                ("1 worker, Redis store", 1, ("--store", url), True),
                ("2 workers, Redis store", 2, ("--store", url), True),
            ]
            # Best run of each configuration: (turns/s, Redis commands, Redis CPU seconds,
            # the workers' CPU seconds, the client's).
            best: dict[str, tuple[float, float, float, float, float]] = {}
            # Each run's turns/s, round by round.
            runs: dict[str, list[float]] = {label: [] for label, *_ in configs}
            loads = [os.getloadavg()[0]]
            for round_ in range(args.rounds):
                for label, count, options, durable in configs:
                    # Every run starts on an empty store: a fresh file, an empty Redis.
                    db = str(Path(work) / f"game{round_}.db")
                    options = tuple(db if o == "FILE" else o for o in options)
                    empty_redis(url)
                    with started(count, *options) as (addresses, pids):
                        before = redis_counters(url)
                        workers, client = cpu_seconds(pids), time.process_time()
                        rate = asyncio.run(drive(addresses, args.agents, args.turns, durable))
                        workers = cpu_seconds(pids) - workers
                        client = time.process_time() - client
                        after = redis_counters(url)
                    runs[label].append(rate)
                    if label not in best or rate > best[label][0]:
                        redis_used = (after[0] - before[0], after[1] - before[1])
                        best[label] = (rate, *redis_used, workers, client)
                loads.append(os.getloadavg()[0])
            baseline = best[configs[0][0]][0]
            # Each store run against the no-store run of its own round.
            rounds_ratios = {
                label: [
                    rate / plain
                    for rate, plain in zip(runs[label], runs[configs[0][0]], strict=True)
                ]
                for label in runs
            }
            paired = {label: statistics.median(ratios) for label, ratios in rounds_ratios.items()}
            turns = args.turns // args.agents * args.agents
            for label, _, options, _ in configs:
                rate, commands_used, cpu_used, workers_cpu, client_cpu = best[label]
                commands = commands_used / turns
                cpu_us = cpu_used / turns * 1e6
                uses_redis = url in options
                rows.append(
                    [
                        label,
                        f"{rate:,.0f}",
                        f"{rate / baseline:.2f}x",
                        f"{paired[label]:.2f}x",
                        f"{commands:.1f}" if uses_redis else "-",
                        f"{cpu_us:.0f} µs" if uses_redis else "-",
                        f"{1e6 / cpu_us:,.0f}" if uses_redis and cpu_us > 0 else "-",
                        f"{workers_cpu / turns * 1e6:.0f} µs",
                        f"{client_cpu / turns * 1e6:.0f} µs",
                    ]
                )
            with started(2, "--store", url) as ((a, b), _):
                samples = asyncio.run(moves(a, b, args.moves))
    finally:
        redis_proc.terminate()
        redis_proc.wait(10)
    print(
        f"{args.agents} agents at once, {args.turns} turns (pause -> resume -> 'ok'), "
        "asyncio client, each configuration a fresh set of `serve --mock` processes, "
        f"best of {args.rounds} interleaved runs; load average {min(loads):.1f}-{max(loads):.1f}"
    )
    print_table(
        [
            "configuration",
            "turns/s",
            "vs no store",
            "per round (median)",
            "Redis commands/turn",
            "Redis CPU/turn",
            "turns/s per Redis core",
            "workers' CPU/turn",
            "client's CPU/turn",
        ],
        rows,
    )
    for label in ("1 worker, SQLite store", "1 worker, Redis store"):
        ratio = paired[label]
        verdict = "reached" if ratio >= TARGET else "NOT reached"
        spread = rounds_ratios[label]
        # Three decimals: a median of 0.6995 is not reached, and should not print as 0.70.
        print(
            f"{label}: {ratio:.3f}x the no-store turn rate, median of the rounds' own ratios "
            f"(rounds {min(spread):.2f}-{max(spread):.2f}x; {best[label][0] / baseline:.2f}x "
            f"best run against best run; target {TARGET:.1f}x: {verdict})"
        )
    ms = sorted(s * 1000 for s in samples)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    print(
        f"\nAttachAgent on worker B of an agent paused on A (session closed), {len(ms)} moves: "
        f"p50 {statistics.median(ms):.2f} ms, p99 {p99:.2f} ms (each then resumed: 'ok')"
    )


if __name__ == "__main__":
    main()
