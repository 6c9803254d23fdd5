"""Memory per paused turn, and the time to pause and resume 100 000 turns, via the asyncio API.

100 000 agents (graph Pause "gate" -> CannedResponse "reply") are created, each gets one user
message and pauses at "gate", then every one is resumed to completion. Three configurations:
the defaults (the headline: the pause stall warning is on, so every paused turn is watched for
stalling); stall warnings off (``EngineSettings(pause_stall_warn_ms=0)``), where a paused turn
holds no timer at all; and the defaults with a ``pause_timeout_ms`` on the Pause node (10 min,
never reached here), so every paused turn also holds its own loop timer; that one runs
``--timer-count`` turns (default 50 000, to stay inside the time budget).

Each configuration runs in a fresh child process, twice: once plain with all ``--count`` turns
(times and RSS, so the times carry no tracing overhead; these runs go one at a time) and once
under ``tracemalloc`` (these run side by side, as they report no times) with
``--traced-count`` turns (default 3 000: tracing slows the engine ~10x, and bytes per turn do
not depend on the count) for Python-level bytes and the top allocation sites. The host keeps
only its agent handles, not the returned steps. Memory figures are given three ways:

* per paused turn *including its agent* (each paused turn needs an agent): (paused - before
  agents) / count — the figure the <= 1,200 B target (defaults) is about;
* per agent alone (created, idle, never messaged): (agents - before) / count;
* per paused turn on top of its idle agent: (paused - agents) / count.

Run from the repository root: ``.venv/bin/python -m bench.paused_memory [--count 100000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/paused_memory.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    LOGGED,
    REPO_ROOT,
    live_timers,
    logged_summary,
    pause_then_canned,
    peak_rss_bytes,
    print_table,
    quiet_logging,
    rss_bytes,
)

TIMEOUT_MS = 600_000  # long enough never to fire during the run
KIB = 1024
TARGET_BYTES = 1200  # per paused turn, agent included, with the default settings


# --- child: one configuration in one fresh process ---------------------------------------------


async def _child(count: int, timeout_ms: int, traced: bool, stall: bool) -> dict[str, object]:
    import tracemalloc

    import turnloom as tl

    _cache_sources()

    def measure() -> int:
        gc.collect()
        return tracemalloc.get_traced_memory()[0] if traced else rss_bytes()

    out: dict[str, object] = {}
    settings = tl.EngineSettings() if stall else tl.EngineSettings(pause_stall_warn_ms=0)
    engine = tl.AsyncEngine(tl.MockModel("mock"), settings=settings)
    async with engine:
        graph = pause_then_canned(timeout_ms)
        # Warm every code path once (and drop it) so lazily created module state is not counted.
        warm = await engine.create_agent(graph)
        await warm.send_message("hi")
        await warm.resume()
        await warm.destroy()
        del warm
        loop = asyncio.get_running_loop()
        timers_before = live_timers(loop)

        m0 = measure()
        if traced:
            snap_before = tracemalloc.take_snapshot()
        t0 = time.perf_counter()
        agents = [await engine.create_agent(graph) for _ in range(count)]
        out["create_s"] = time.perf_counter() - t0
        m1 = measure()
        if traced:
            snap_agents = tracemalloc.take_snapshot()

        t0 = time.perf_counter()
        paused = 0
        for agent in agents:
            step = await agent.send_message("hi")
            paused += step.pause is not None and step.pause.node_name == "gate"
        out["pause_s"] = time.perf_counter() - t0
        del step  # the host need not keep the step: measure only what the engine holds
        m2 = measure()
        out["timers"] = live_timers(loop) - timers_before
        assert paused == count, f"{paused} of {count} turns paused"
        if traced:
            snap_paused = tracemalloc.take_snapshot()
            out["top_agent"] = _top(snap_agents.compare_to(snap_before, "lineno"), count)
            out["top_turn"] = _top(snap_paused.compare_to(snap_agents, "lineno"), count)
            del snap_before, snap_agents, snap_paused
            tracemalloc.stop()  # the resume is timed by the plain run

        t0 = time.perf_counter()
        results = [(await agent.resume()).result for agent in agents]
        out["resume_s"] = time.perf_counter() - t0
        done = sum(1 for r in results if r is not None and r.status is tl.TurnStatus.SUCCESS)
        assert done == count, f"{done} of {count} turns completed"
        out["timers_left"] = live_timers(loop) - timers_before
    out.update(
        count=count,
        before=m0,
        agents=m1,
        paused_mem=m2,
        peak_rss=peak_rss_bytes(),
        logged=dict(LOGGED),
    )
    return out


def _cache_sources() -> None:
    """Read the engine's sources now, so the sites shown match the code that ran.

    (The package may be edited while the benchmark runs; linecache keeps what it read first.)
    """
    import linecache

    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and name.split(".")[0] in ("turnloom", "asyncio", "random", "copy", "_weakrefset"):
            linecache.getline(path, 1)


def _top(stats: list, count: int, limit: int = 12) -> list[tuple[str, float, float]]:
    """(site and its source line, bytes per turn, objects per turn) for the largest sites."""
    import linecache

    rows = []
    for stat in sorted(stats, key=lambda s: -s.size_diff)[:limit]:
        frame = stat.traceback[0]
        source = linecache.getline(frame.filename, frame.lineno).strip()[:70]
        path = frame.filename
        for marker in ("site-packages/", "/lib/python3"):
            if marker in path:
                path = path.split(marker, 1)[1]
        path = path.replace(str(REPO_ROOT) + "/", "")
        site = f"{path}:{frame.lineno}".ljust(36) + (f"  {source}" if source else "")
        rows.append((site, stat.size_diff / count, stat.count_diff / count))
    return rows


def _child_main(argv: list[str]) -> None:
    count, timeout_ms = int(argv[0]), int(argv[1])
    traced, stall = argv[2] == "traced", argv[3] == "stall"
    quiet_logging()
    if traced:
        import tracemalloc

        tracemalloc.start(1)
    result = asyncio.run(_child(count, timeout_ms, traced, stall))
    print(json.dumps(result), flush=True)
    sys.stderr.flush()
    os._exit(0)  # skip freeing ~1M objects one by one at exit: it is not what we measure


# --- parent: run the children and print -------------------------------------------------------


def _start_child(count: int, timeout_ms: int, stall: bool, traced: bool) -> subprocess.Popen[str]:
    mode = "traced" if traced else "plain"
    watch = "stall" if stall else "nostall"
    return subprocess.Popen(
        [
            sys.executable,
            *("-m", "bench.paused_memory", "--child"),
            *(str(count), str(timeout_ms), mode, watch),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen[str]) -> dict:
    out, err = proc.communicate()
    if proc.returncode != 0:
        sys.stderr.write(err)
        raise SystemExit(f"child failed ({proc.returncode})")
    return json.loads(out.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    """Run both configurations (plain and traced) and print the figures."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child_main(argv[1:])
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000, help="paused turns (and agents)")
    parser.add_argument(
        "--traced-count",
        type=int,
        default=3_000,
        help="agents in the tracemalloc runs (tracing slows the engine ~10x; "
        "bytes per turn do not depend on the count)",
    )
    parser.add_argument(
        "--timer-count",
        type=int,
        default=50_000,
        help="paused turns in the pause_timeout_ms configuration (0 = skip it); per-turn figures "
        "do not depend on the count, and the full count would double the run time",
    )
    args = parser.parse_args(argv)
    count = args.count
    traced_count = min(args.traced_count, count)
    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f}; "
        f"{count:,} agents, each with one turn paused at a Pause node."
    )
    configs = [
        ("defaults (stall warning on)", 0, count, True),
        ("stall warning off (not default)", 0, count, False),
    ]
    if args.timer_count > 0:
        timer_label = f"defaults + pause_timeout_ms={TIMEOUT_MS}"
        configs.append((timer_label, TIMEOUT_MS, min(args.timer_count, count), True))

    # The traced runs report no times, so they run side by side; the plain (timed) runs then run
    # one at a time with nothing else of ours competing for the CPU.
    traced_procs = [_start_child(min(traced_count, n), t, w, traced=True) for _, t, n, w in configs]
    traced_results = [_result(p) for p in traced_procs]
    plain_results = [_result(_start_child(n, t, w, traced=False)) for _, t, n, w in configs]
    results = [
        (label, plain, traced)
        for (label, *_), plain, traced in zip(configs, plain_results, traced_results, strict=True)
    ]

    def per(r: dict, hi: str, lo: str) -> float:
        return (r[hi] - r[lo]) / r["count"]

    print("\nMemory, bytes per paused turn (each row a separate process):")
    print_table(
        [
            "configuration",
            "measure",
            "turns",
            "turn+agent",
            "agent alone",
            "turn on top",
            "<= 1200?",
        ],
        [
            [
                label,
                name,
                f"{r['count']:,}",
                f"{per(r, 'paused_mem', 'before'):,.0f}",
                f"{per(r, 'agents', 'before'):,.0f}",
                f"{per(r, 'paused_mem', 'agents'):,.0f}",
                "yes" if per(r, "paused_mem", "before") <= TARGET_BYTES else "NO",
            ]
            for label, plain, traced in results
            for name, r in (("tracemalloc", traced), ("RSS delta", plain))
        ],
    )
    print("\nTimes (plain run, no tracing; sequential awaits on one loop):")
    print_table(
        [
            "configuration",
            "turns",
            "create agents s",
            "pause all s",
            "us/pause",
            "resume all s",
            "us/resume",
            "loop timers while paused",
            "timers left",
            "peak RSS MiB",
        ],
        [
            [
                label,
                f"{p['count']:,}",
                f"{p['create_s']:.2f}",
                f"{p['pause_s']:.2f}",
                f"{p['pause_s'] / p['count'] * 1e6:.1f}",
                f"{p['resume_s']:.2f}",
                f"{p['resume_s'] / p['count'] * 1e6:.1f}",
                f"{p['timers']:,}",
                f"{p['timers_left']:,}",
                f"{p['peak_rss'] / 2**20:,.0f}",
            ]
            for label, p, _ in results
        ],
    )
    for label, _, traced in results:
        print(f"\nTop allocation sites, {label} (tracemalloc, bytes and objects per agent/turn):")
        for title, key in (
            ("idle agent", "top_agent"),
            ("paused turn on top of its agent", "top_turn"),
        ):
            print(f"  {title}:")
            for site, size, objects in traced[key]:
                print(f"    {size:8.1f} B  {objects:5.2f} obj  {site}")
    _, default_plain, default_traced = results[0]
    traced_b = per(default_traced, "paused_mem", "before")
    rss_b = per(default_plain, "paused_mem", "before")
    print(
        f"\nper paused turn incl. agent, defaults: {traced_b:,.0f} B tracemalloc, "
        f"{rss_b:,.0f} B RSS; target <= {TARGET_BYTES:,} B: "
        f"{'met' if max(traced_b, rss_b) <= TARGET_BYTES else 'MISSED'}"
    )
    for _, plain, traced in results:
        LOGGED.update(plain["logged"])
        LOGGED.update(traced["logged"])
    print(logged_summary())
    print(f"total wall time {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
