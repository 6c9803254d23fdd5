"""Turn throughput: one full turn (user message -> pause -> host resumes -> reply), side by side.

Variants, all sequential (one turn at a time, like a host driving one agent after another),
all with default settings (the pause stall warning timer on) unless the name says otherwise:

* turnloom's two public faces on the mock backend, graph Pause "gate" -> CannedResponse "reply":
  ``AsyncEngine`` (``await agent.send_message("hi")`` returns at the pause, ``await
  agent.resume()`` at completion) and the blocking ``Engine`` (the same calls, blocking). 100
  agents are created up front and reused round-robin. Also Pause -> Generate on the mock model,
  and a fresh agent per turn (create_agent + turn + destroy, all timed).
* The floors (bench/peers.py): a bare asyncio task parked on a future, and the same driven
  from the caller's thread through a loop thread (two hand-offs per turn).
* The peers (bench/peers.py): Apache Burr ``run``/``arun`` with ``halt_before``/``halt_after``,
  in memory; LangGraph ``interrupt()`` with ``InMemorySaver``, ``invoke``/``ainvoke``, with its
  default durability and with ``durability="exit"``.
* The bare state machine: the same five events (start, pause, resume, proceed, finish) on a
  ``transitions.Machine`` built per turn from turnloom's table, and fired through turnloom's
  one shared Machine (``turnloom.states.fire``). Nothing else.

Every variant checks its work: each timed turn must have paused and answered "ok". Each is
warmed up, then timed in ``--repeat`` rounds (default 5) that interleave the variants, so
background load hits every variant alike; the best round is shown, with the median beside it.
Each face is compared with its matching peers (asyncio with asyncio, blocking with blocking),
with the fastest variant of each peer overall, and with its floor.

Run from the repository root: ``.venv/bin/python -m bench.turns [--scale 0.2] [--profile]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/turns.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import peers
from bench._common import (
    logged_summary,
    pause_then_canned,
    pause_then_generate,
    print_table,
    quiet_logging,
)

AGENTS = 100


@dataclass
class Figure:
    """One timed variant."""

    name: str
    turns: int
    seconds: float

    @property
    def per_s(self) -> float:
        return self.turns / self.seconds

    @property
    def us(self) -> float:
        return self.seconds / self.turns * 1e6


# --- turnloom ----------------------------------------------------------------------------------


async def _turnloom_reused(
    graph_factory: Callable[[], object], turns: int, profiler: Any = None
) -> float:
    """Time `turns` sequential turns over AGENTS agents created (untimed) for this run."""
    import turnloom as tl

    model = tl.MockModel("mock")
    async with tl.AsyncEngine(model) as engine:
        agents = [await engine.create_agent(graph_factory()) for _ in range(AGENTS)]
        step = await agents[0].send_message("hi")
        assert step.paused and step.pause.node_name == "gate", step
        step = await agents[0].resume()
        assert step.result is not None and step.result.status is tl.TurnStatus.SUCCESS, step
        model.requests.clear()
        gc.collect()
        if profiler is not None:
            profiler.enable()
        paused = answered = 0
        t0 = time.perf_counter()
        for i in range(turns):
            agent = agents[i % AGENTS]
            paused += (await agent.send_message("hi")).pause is not None
            answered += bool((await agent.resume()).result.text)  # type: ignore[union-attr]
        seconds = time.perf_counter() - t0
        if profiler is not None:
            profiler.disable()
        assert paused == answered == turns, (paused, answered)
    return seconds


def _turnloom_blocking(turns: int) -> float:
    """The blocking face: the same turns as `_turnloom_reused`, each call blocking."""
    import turnloom as tl

    with tl.Engine(tl.MockModel("mock")) as engine:
        agents = [engine.create_agent(pause_then_canned()) for _ in range(AGENTS)]
        gc.collect()
        paused = answered = 0
        t0 = time.perf_counter()
        for i in range(turns):
            agent = agents[i % AGENTS]
            paused += agent.send_message("hi").pause is not None
            answered += agent.resume().result.text == "ok"  # type: ignore[union-attr]
        seconds = time.perf_counter() - t0
        assert paused == answered == turns, (paused, answered)
    return seconds


async def _turnloom_fresh(turns: int) -> float:
    """Time `turns` sequential turns, each on a fresh agent (create_agent + turn + destroy)."""
    import turnloom as tl

    async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
        graph = pause_then_canned()
        gc.collect()
        paused = answered = 0
        t0 = time.perf_counter()
        for _ in range(turns):
            agent = await engine.create_agent(graph)
            paused += (await agent.send_message("hi")).pause is not None
            answered += (await agent.resume()).result.text == "ok"  # type: ignore[union-attr]
            await agent.destroy()
        seconds = time.perf_counter() - t0
        assert paused == answered == turns, (paused, answered)
    return seconds


# --- (a) the bare machine ----------------------------------------------------------------------


class _TurnObj:
    """A plain turn object: the machine adds `state` (and, per-turn Machine, trigger methods)."""

    has_timeout_exit = False


def _machine_per_turn(turns: int) -> float:
    from transitions import Machine

    from turnloom.states.machine import STATE_NAMES, transition_specs

    specs = transition_specs()  # the table itself is built once; only the Machine is per turn
    gc.collect()
    t0 = time.perf_counter()
    for _ in range(turns):
        turn = _TurnObj()
        Machine(
            model=turn,
            states=STATE_NAMES,
            transitions=specs,
            initial="idle",
            auto_transitions=False,
        )
        turn.start()
        turn.pause()
        turn.resume()
        turn.proceed()
        turn.finish()
    seconds = time.perf_counter() - t0
    assert turn.state == "done", turn.state
    return seconds


def _shared_machine(turns: int) -> float:
    from turnloom.states import Trigger, TurnState, fire

    gc.collect()
    t0 = time.perf_counter()
    for _ in range(turns):
        turn = _TurnObj()
        turn.state = TurnState.IDLE
        fire(turn, Trigger.START)
        fire(turn, Trigger.PAUSE)
        fire(turn, Trigger.RESUME)
        fire(turn, Trigger.PROCEED)
        fire(turn, Trigger.FINISH)
    seconds = time.perf_counter() - t0
    assert turn.state == "done", turn.state
    return seconds


# --- driver ------------------------------------------------------------------------------------


@dataclass
class Variant:
    """A variant to time: `run(turns)` sets up (untimed), runs `turns` turns, returns seconds."""

    key: str
    name: str
    turns: int
    warmup: int
    run: Callable[[int], float]
    seconds: list[float] = field(default_factory=list)

    def best(self) -> Figure:
        return Figure(self.name, self.turns, min(self.seconds))

    def median_us(self) -> float:
        return statistics.median(self.seconds) / self.turns * 1e6


def _variants(n: Callable[[int], int]) -> list[Variant]:
    reused = f"({AGENTS} agents reused)"
    return [
        Variant(
            "tl_async",
            f"turnloom AsyncEngine, Pause->CannedResponse {reused}",
            n(6_000),
            n(1_000),
            lambda t: asyncio.run(_turnloom_reused(pause_then_canned, t)),
        ),
        Variant(
            "tl_block",
            f"turnloom Engine (blocking), Pause->CannedResponse {reused}",
            n(3_000),
            n(500),
            _turnloom_blocking,
        ),
        Variant(
            "tl_gen",
            f"turnloom AsyncEngine, Pause->Generate(mock) {reused}",
            n(3_000),
            n(500),
            lambda t: asyncio.run(_turnloom_reused(pause_then_generate, t)),
        ),
        Variant(
            "tl_fresh",
            "turnloom AsyncEngine, Pause->CannedResponse (fresh agent per turn)",
            n(3_000),
            n(500),
            lambda t: asyncio.run(_turnloom_fresh(t)),
        ),
        Variant(
            "floor_async",
            "floor: bare asyncio task parked on a future",
            n(20_000),
            n(2_000),
            lambda t: asyncio.run(peers.asyncio_floor(t)),
        ),
        Variant(
            "floor_block",
            "floor: the same through a loop thread (2 hand-offs)",
            n(3_000),
            n(500),
            peers.blocking_floor,
        ),
        Variant("burr_run", "Apache Burr run (blocking)", n(3_000), n(500), peers.burr_run),
        Variant(
            "burr_arun",
            "Apache Burr arun (asyncio)",
            n(3_000),
            n(500),
            lambda t: asyncio.run(peers.burr_arun(t)),
        ),
        Variant("lg_sync", "LangGraph invoke", n(300), n(50), peers.langgraph_invoke),
        Variant(
            "lg_sync_exit",
            'LangGraph invoke, durability="exit"',
            n(300),
            n(50),
            lambda t: peers.langgraph_invoke(t, "exit"),
        ),
        Variant(
            "lg_async",
            "LangGraph ainvoke",
            n(300),
            n(50),
            lambda t: asyncio.run(peers.langgraph_ainvoke(t)),
        ),
        Variant(
            "lg_async_exit",
            'LangGraph ainvoke, durability="exit"',
            n(300),
            n(50),
            lambda t: asyncio.run(peers.langgraph_ainvoke(t, "exit")),
        ),
        Variant(
            "machine",
            "transitions.Machine built per turn, 5 events (no turn)",
            n(3_000),
            n(500),
            _machine_per_turn,
        ),
        Variant(
            "shared",
            "turnloom's shared Machine (states.fire), 5 events (no turn)",
            n(20_000),
            n(2_000),
            _shared_machine,
        ),
    ]


def _profile(turns: int) -> None:
    import cProfile
    import pstats

    asyncio.run(_turnloom_reused(pause_then_canned, max(turns // 10, 100)))  # warm up
    profiler = cProfile.Profile()
    asyncio.run(_turnloom_reused(pause_then_canned, turns, profiler))
    stats = pstats.Stats(profiler)
    print(
        f"\ncProfile of the turnloom (CannedResponse) variant, the timed loop of {turns} turns "
        "(setup excluded):"
    )
    for key in ("cumulative", "tottime"):
        print(f"\n--- top 15 by {key} ---")
        stats.sort_stats(key).print_stats(15)


def _fastest(figures: dict[str, Figure], *keys: str) -> Figure:
    return min((figures[k] for k in keys), key=lambda f: f.us)


def _print_ratios(figures: dict[str, Figure]) -> None:
    """Each face against its floor, its matching peers and each peer's fastest variant."""
    lg_all = ("lg_sync", "lg_sync_exit", "lg_async", "lg_async_exit")
    faces = {
        "asyncio face (AsyncEngine)": (
            figures["tl_async"],
            figures["floor_async"],
            figures["burr_arun"],
            _fastest(figures, "lg_async", "lg_async_exit"),
        ),
        "blocking face (Engine)": (
            figures["tl_block"],
            figures["floor_block"],
            figures["burr_run"],
            _fastest(figures, "lg_sync", "lg_sync_exit"),
        ),
    }
    burr_best = _fastest(figures, "burr_run", "burr_arun")
    lg_best = _fastest(figures, *lg_all)
    print()
    for face, (ours, floor, burr, lg) in faces.items():
        print(f"{face}: {ours.us:.1f} us/turn")
        print(f"  vs its floor                 : {ours.us / floor.us:.2f}x the floor's time")
        print(f"  vs {burr.name:<26}: {burr.us / ours.us:.2f}x as fast")
        print(f"  vs fastest Burr ({burr_best.name}): {burr_best.us / ours.us:.2f}x as fast")
        print(f"  vs {lg.name:<26}: {lg.us / ours.us:.1f}x as fast")
        print(f"  vs fastest LangGraph ({lg_best.name}): {lg_best.us / ours.us:.1f}x as fast")
    shared, tl = figures["shared"], figures["tl_async"]
    print(
        f"the 5 machine events of a turn, fired apart: {shared.us:.1f} us "
        f"(~{shared.us / tl.us:.0%} of an AsyncEngine turn)"
    )


def main(argv: list[str] | None = None) -> None:
    """Run every variant and print the table and the ratios."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every turn count")
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="timed rounds; each round runs every variant once (best kept)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="also cProfile the turnloom CannedResponse variant"
    )
    args = parser.parse_args(argv)
    quiet_logging()

    def n(count: int) -> int:
        return max(int(count * args.scale), 10)

    started = time.perf_counter()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f} at "
        "start. One turn = 1 pause + 1 resume, turns run one after another."
    )
    print(
        f"Each variant: one warm-up run, then {args.repeat} timed rounds interleaved with the "
        "other variants (so background load hits all alike); the best round is shown."
    )
    variants = _variants(n)
    for v in variants:
        v.run(v.warmup)
    for _ in range(args.repeat):
        for v in variants:
            v.seconds.append(v.run(v.turns))
    figures = {v.key: v.best() for v in variants}
    tl = figures["tl_async"]
    print()
    print_table(
        ["variant", "turns", "turns/s", "us/turn", "median us/turn", "x AsyncEngine"],
        [
            [
                f.name,
                f.turns,
                f"{f.per_s:,.0f}",
                f"{f.us:.1f}",
                f"{v.median_us():.1f}",
                f"{f.us / tl.us:.2f}",
            ]
            for v, f in ((v, figures[v.key]) for v in variants)
        ],
    )
    _print_ratios(figures)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    wall = time.perf_counter() - started
    print(f"\ntotal wall time {wall:.1f} s, load average {load:.2f} at end")
    print(logged_summary())
    if args.profile:
        _profile(n(10_000))


if __name__ == "__main__":
    main()
