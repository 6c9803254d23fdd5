"""Durable agents: pause + resume turns written through a store, against LangGraph with its
SQLite checkpointer; bytes stored per paused agent; restoring 100,000 paused agents (see
docs/reference/durability.md).

    python -m bench.durable [--quick] [--restore N]

The turn is the one of `bench.turns`: a user message runs to a pause before node "reply", the
host resumes, "reply" answers "ok". Each variant checks its own work.

* turnloom + store: the blocking face, `tl.Engine(store=...)`; every pause and every
  completion is one atomic write of the agent's snapshot, done before the call returns (what
  LangGraph calls durability "sync"). Measured with a fresh agent per turn (so a create write
  too: three writes a turn) and with 100 agents reused in turn (two writes a turn). The SQLite
  store's default (WAL, synchronous=NORMAL) survives a process crash; "FULL" also fsyncs each
  write, surviving a power cut, as LangGraph's SqliteSaver (WAL, SQLite's default FULL) does.
* LangGraph + SqliteSaver (langgraph-checkpoint-sqlite): gate (`interrupt()`) -> reply, a
  new thread per turn, durability "sync" (checkpoint written before `invoke` returns: the same
  promise) and its default ("async").
* LangGraph's Redis saver (langgraph-checkpoint-redis) needs Redis Stack's search and JSON
  modules, which Debian's redis-server lacks; it is reported as not measured if missing.

Restore: N paused agents (each a different user message and a short dialog) are written to a
SQLite file; the time is `tl.Engine(store=file)` until every agent is back, timers armed.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import peers
from bench._common import logged_summary, pause_then_canned, quiet_logging, redis_server

POOL = 100


def _model() -> Any:
    import turnloom as tl

    return tl.MockModel("mock")


def turnloom_turns(turns: int, store: Any, *, fresh: bool) -> float:
    """`turns` pause + resume turns on an engine with `store`; seconds."""
    import turnloom as tl

    graph = pause_then_canned()
    with tl.Engine(_model(), store=store) as engine:
        pool = [] if fresh else [engine.create_agent(graph) for _ in range(POOL)]
        gc.collect()
        paused = 0
        t0 = time.perf_counter()
        for index in range(turns):
            agent = engine.create_agent(graph) if fresh else pool[index % POOL]
            paused += agent.send_message("hi").paused
            result = agent.resume().final
        seconds = time.perf_counter() - t0
    assert paused == turns and result.text == "ok", (paused, result)
    return seconds


def langgraph_sqlite(turns: int, path: str, durability: str | None) -> float:
    """LangGraph + SqliteSaver on `path`; a new thread per turn; seconds."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(path) as saver:
        return peers.langgraph_invoke(turns, durability, saver)


def stored_bytes(store_path: str) -> tuple[int, float]:
    """Bytes of one paused agent's snapshot after one full turn (short dialog), and the SQLite
    file's size per agent for 1,000 such agents."""
    import turnloom as tl

    graph = pause_then_canned()
    with tl.Engine(_model(), store=store_path) as engine:
        for _ in range(1000):
            agent = engine.create_agent(graph)
            agent.send_message("Do you sell swords?")
            agent.resume()
            agent.send_message("And shields?")
        one = len(agent.snapshot())
    db = sqlite3.connect(store_path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.execute("VACUUM")
    db.close()
    return one, os.path.getsize(store_path) / 1000


def _fill(path: str, count: int) -> None:
    """`count` paused agents in a SQLite store at `path`, each with its own messages."""
    import msgpack

    import turnloom as tl

    graph = pause_then_canned(pause_timeout_ms=600_000)
    with tl.Engine(_model(), store=":memory:") as engine:
        agent = engine.create_agent(graph)
        agent.send_message("Do you sell swords?")
        agent.resume()
        agent.send_message("And shields?")
        doc = msgpack.unpackb(agent.snapshot(), raw=False)
    store = tl.SQLiteStore(path)
    rows = []
    for agent_id in range(1, count + 1):
        doc["agent_id"] = doc["rng_seed"] = agent_id
        doc["turn"]["user_message"] = f"And shields? (player {agent_id})"
        rows.append((agent_id, msgpack.packb(doc, use_bin_type=True)))
    # Whole snapshots: rows with no dialog parts (as a store written before the parts were).
    store._db.executemany("INSERT INTO turnloom_agents (agent_id, document) VALUES (?, ?)", rows)
    store.close()


def restore_time(path: str, count: int) -> float:
    """Seconds for an engine to start on a store of `count` paused agents."""
    import turnloom as tl

    _fill(path, count)
    gc.collect()
    t0 = time.perf_counter()
    engine = tl.Engine(_model(), store=path)
    seconds = time.perf_counter() - t0
    ids = engine.agent_ids()
    assert len(ids) == count and engine.agent(ids[-1]).wait().paused
    engine.close()
    return seconds


def _full(work: Path) -> Any:
    """A SQLite store that fsyncs every write (synchronous=FULL), as LangGraph's saver does."""
    import turnloom as tl

    return tl.SQLiteStore(work / f"s{time.time_ns()}.db", synchronous="FULL")


def _best(runs: int, fn: Callable[[], float]) -> float:
    return min(fn() for _ in range(runs))


def main(argv: list[str] | None = None) -> None:
    """Run the figures and print them with the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns, 10,000 restored")
    parser.add_argument("--restore", type=int, default=None, help="agents to restore")
    args = parser.parse_args(argv)
    quiet_logging()
    turns = 300 if args.quick else 2000
    lg_turns = 100 if args.quick else 300
    restore_count = args.restore or (10_000 if args.quick else 100_000)
    work = Path(tempfile.mkdtemp(prefix="turnloom-durable-"))
    figures: dict[str, float] = {}
    server = None
    try:
        runs = [
            ("turnloom, no store, 100 agents", lambda: turnloom_turns(turns, None, fresh=False)),
            (
                "turnloom + SQLite, 100 agents",
                lambda: turnloom_turns(turns, str(work / f"t{time.time_ns()}.db"), fresh=False),
            ),
            (
                "turnloom + SQLite FULL, 100 agents",
                lambda: turnloom_turns(turns, _full(work), fresh=False),
            ),
            (
                "turnloom + SQLite, agent per turn",
                lambda: turnloom_turns(turns, str(work / f"f{time.time_ns()}.db"), fresh=True),
            ),
        ]
        server = redis_server()
        if server is not None:
            url = server[1]
            runs.append(
                ("turnloom + Redis, 100 agents", lambda: turnloom_turns(turns, url, fresh=False))
            )
        runs += [
            (
                "LangGraph + SqliteSaver, sync",
                lambda: langgraph_sqlite(lg_turns, str(work / f"l{time.time_ns()}.db"), "sync"),
            ),
            (
                "LangGraph + SqliteSaver, default",
                lambda: langgraph_sqlite(lg_turns, str(work / f"d{time.time_ns()}.db"), None),
            ),
        ]
        print(f"{'variant':40} {'turns/s':>10} {'us/turn':>10}")
        for name, run in runs:
            count = lg_turns if name.startswith("LangGraph") else turns
            seconds = _best(3, run)
            figures[name] = count / seconds
            print(f"{name:40} {count / seconds:10.0f} {seconds / count * 1e6:10.1f}")
        print("LangGraph + Redis saver: not measured (needs Redis Stack's modules)")
        ours = figures["turnloom + SQLite, 100 agents"]
        theirs = figures["LangGraph + SqliteSaver, sync"]
        print(f"\nturnloom + SQLite vs LangGraph + SqliteSaver (sync): {ours / theirs:.1f}x")
        full = figures["turnloom + SQLite FULL, 100 agents"]
        print(f"  with an fsync per write on both sides (synchronous=FULL): {full / theirs:.1f}x")
        fresh = figures["turnloom + SQLite, agent per turn"]
        print(f"  (agent per turn: {fresh / theirs:.1f}x; vs LangGraph default durability: "
              f"{ours / figures['LangGraph + SqliteSaver, default']:.1f}x)")  # fmt: skip
        print(
            f"  store cost: {ours / figures['turnloom, no store, 100 agents']:.0%} of the "
            "in-memory speed"
        )
        one, per_agent = stored_bytes(str(work / "size.db"))
        print(f"\nbytes per stored paused agent (one full turn, one paused): snapshot {one} B, "
              f"SQLite file {per_agent:.0f} B per agent")  # fmt: skip
        seconds = restore_time(str(work / "restore.db"), restore_count)
        print(f"restore {restore_count:,} paused agents from SQLite: {seconds:.2f} s "
              f"({seconds / restore_count * 1e6:.0f} us/agent)")  # fmt: skip
        print(logged_summary())
    finally:
        if server is not None:  # also when a variant failed: no redis-server left behind
            server[0].terminate()
            server[0].wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
