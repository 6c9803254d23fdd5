"""Turn throughput: one full turn (one pause, one resume) on the mock backend, side by side.

Variants, all sequential (one turn at a time, like a host driving one agent after another):

* turnloom, public asyncio API: ``AsyncEngine(MockModel("mock"))``, graph Pause "gate" ->
  CannedResponse "reply"; per turn ``await agent.send_message("hi")`` (returns at the pause)
  then ``await agent.resume()`` (returns at completion). 100 agents are created up front and
  reused round-robin. Also with a Generate node on the mock model, and with a fresh agent per
  turn (create_agent + turn + destroy, all timed).
* (a) the bare state machine: the same five events (start, pause, resume, proceed, finish)
  on a ``transitions.Machine`` built per turn from turnloom's own table, and, for reference,
  fired through turnloom's one shared Machine (``turnloom.states.fire``). Nothing else.
* (b) LangGraph: StateGraph gate (``interrupt``) -> reply, ``InMemorySaver``; per turn a new
  thread_id, ``invoke`` runs to the interrupt, ``invoke(Command(resume=...))`` completes.
  Measured with ``invoke`` and ``ainvoke``; the faster one is the baseline of the ratios.

Each variant is warmed up, then timed in ``--repeat`` rounds (default 5) that interleave the
variants, so background load on a shared machine hits every variant alike; the best round is
shown, with the median beside it. Per-run setup (engine, agents, compiled graph) is untimed,
except in the "fresh agent per turn" variant where creating the agent is part of the turn.

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
        t0 = time.perf_counter()
        for i in range(turns):
            agent = agents[i % AGENTS]
            await agent.send_message("hi")
            await agent.resume()
        seconds = time.perf_counter() - t0
        if profiler is not None:
            profiler.disable()
        last = agents[(turns - 1) % AGENTS].last_result
        assert last is not None and last.status is tl.TurnStatus.SUCCESS and last.text, last
    return seconds


async def _turnloom_fresh(turns: int) -> float:
    """Time `turns` sequential turns, each on a fresh agent (create_agent + turn + destroy)."""
    import turnloom as tl

    async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
        graph = pause_then_canned()
        gc.collect()
        t0 = time.perf_counter()
        for _ in range(turns):
            agent = await engine.create_agent(graph)
            await agent.send_message("hi")
            step = await agent.resume()
            await agent.destroy()
        seconds = time.perf_counter() - t0
        assert step.result is not None and step.result.text == "ok", step
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


# --- (b) LangGraph -----------------------------------------------------------------------------


def _langgraph_app():  # -> a compiled graph with a fresh InMemorySaver
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class TurnState(TypedDict, total=False):
        message: str
        decision: str
        reply: str

    def gate(state: TurnState) -> dict[str, str]:
        return {"decision": interrupt({"node": "gate", "pending_exit": "default"})}

    def reply(state: TurnState) -> dict[str, str]:
        return {"reply": "ok"}

    builder = StateGraph(TurnState)
    builder.add_node("gate", gate)
    builder.add_node("reply", reply)
    builder.add_edge(START, "gate")
    builder.add_edge("gate", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=InMemorySaver())


def _langgraph_sync(turns: int) -> float:
    from langgraph.types import Command

    app = _langgraph_app()  # a fresh saver per run: it keeps every thread's checkpoints
    gc.collect()
    t0 = time.perf_counter()
    for thread in range(turns):
        config = {"configurable": {"thread_id": str(thread)}}
        paused = app.invoke({"message": "hi"}, config)
        done = app.invoke(Command(resume="go"), config)
    seconds = time.perf_counter() - t0
    assert "__interrupt__" in paused and done["reply"] == "ok", (paused, done)
    return seconds


async def _langgraph_async(turns: int) -> float:
    from langgraph.types import Command

    app = _langgraph_app()
    gc.collect()
    t0 = time.perf_counter()
    for thread in range(turns):
        config = {"configurable": {"thread_id": str(thread)}}
        paused = await app.ainvoke({"message": "hi"}, config)
        done = await app.ainvoke(Command(resume="go"), config)
    seconds = time.perf_counter() - t0
    assert "__interrupt__" in paused and done["reply"] == "ok", (paused, done)
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
    return [
        Variant(
            "turnloom",
            f"turnloom AsyncEngine, Pause->CannedResponse ({AGENTS} agents reused)",
            n(6_000),
            n(1_000),
            lambda t: asyncio.run(_turnloom_reused(pause_then_canned, t)),
        ),
        Variant(
            "turnloom_gen",
            f"turnloom AsyncEngine, Pause->Generate(mock) ({AGENTS} agents reused)",
            n(3_000),
            n(500),
            lambda t: asyncio.run(_turnloom_reused(pause_then_generate, t)),
        ),
        Variant(
            "turnloom_fresh",
            "turnloom AsyncEngine, Pause->CannedResponse (fresh agent per turn)",
            n(3_000),
            n(500),
            lambda t: asyncio.run(_turnloom_fresh(t)),
        ),
        Variant(
            "machine",
            "(a) transitions.Machine built per turn, 5 events",
            n(3_000),
            n(500),
            _machine_per_turn,
        ),
        Variant(
            "shared",
            "(a') turnloom's shared Machine (states.fire), 5 events",
            n(20_000),
            n(2_000),
            _shared_machine,
        ),
        Variant(
            "lg_sync",
            "(b) LangGraph invoke, InMemorySaver, new thread/turn",
            n(300),
            n(50),
            _langgraph_sync,
        ),
        Variant(
            "lg_async",
            "(b) LangGraph ainvoke, InMemorySaver, new thread/turn",
            n(300),
            n(50),
            lambda t: asyncio.run(_langgraph_async(t)),
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
    lg = max(figures["lg_sync"], figures["lg_async"], key=lambda f: f.per_s)
    lg_api = "invoke" if lg is figures["lg_sync"] else "ainvoke"
    print()
    print_table(
        ["variant", "turns", "seconds", "turns/s", "us/turn", "median us/turn", "x LangGraph"],
        [
            [
                f.name,
                f.turns,
                f"{f.seconds:.3f}",
                f"{f.per_s:,.0f}",
                f"{f.us:.1f}",
                f"{v.median_us():.1f}",
                f"{f.per_s / lg.per_s:.1f}",
            ]
            for v, f in ((v, figures[v.key]) for v in variants)
        ],
    )
    tl, gen = figures["turnloom"], figures["turnloom_gen"]
    machine, shared = figures["machine"], figures["shared"]
    ratio = tl.per_s / lg.per_s
    print()
    print(f"LangGraph baseline = the faster of invoke/ainvoke: {lg_api} ({lg.per_s:,.0f} turns/s)")
    print(
        f"ratio turnloom/LangGraph (CannedResponse) : {ratio:.1f}x   "
        f"(target >= 20x: {'met' if ratio >= 20 else 'MISSED'})"
    )
    print(f"ratio turnloom/LangGraph (Generate, mock) : {gen.per_s / lg.per_s:.1f}x")
    print(
        f"ratio turnloom/Machine-per-turn           : {tl.per_s / machine.per_s:.2f}x   "
        "(a whole turnloom turn vs. only building a Machine and firing 5 events)"
    )
    print(
        f"per-turn Machine construction             : {machine.us - shared.us:.1f} us/turn "
        f"(= {machine.us:.1f} per-turn Machine - {shared.us:.1f} shared Machine)"
    )
    print(
        f"share of a turnloom turn in its 5 events  : ~{shared.us / tl.us:.0%} "
        f"({shared.us:.1f} of {tl.us:.1f} us, measured apart)"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    wall = time.perf_counter() - started
    print(f"\ntotal wall time {wall:.1f} s, load average {load:.2f} at end")
    print(logged_summary())
    if args.profile:
        _profile(n(10_000))


if __name__ == "__main__":
    main()
