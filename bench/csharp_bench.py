"""The C# client (clients/csharp) over loopback, against the Python client as the baseline.

Figures, on graph Pause "gate" -> CannedResponse "reply" (no model involved):

* resume -> ack: a ``ResumeAgent`` frame written until its ``Ack`` is handled. C#: on the
  thread that pumps the client (``TurnloomClient.RequestAsync`` then ``Update()`` until the
  Task is done: the reader thread's hand-over to the game thread is inside the figure). Python:
  ``bench.wire_bench.ack_times_remote`` (the asyncio client's loop). Rounds interleave the two;
  the best and the median round's p50 and p99 are shown. The task's target: C# within 2x of
  Python's p50.
* allocations over many turns: 10,000 full turns (SendMessage -> pause, Resume -> completion)
  through the C# API after 1,000 warm-up turns: the managed heap after a full collection before
  and after, and the collections each generation had. No growth means no leak per turn.

The server is ``python -m turnloom serve --mock --port 0``, a child process; the C# side is
clients/csharp/build/Bench.exe (``clients/csharp/Tools~/make_csharp.sh build`` makes it; this
script runs that first) under Mono.

Run from the repository root: ``.venv/bin/python -m bench.csharp_bench [--acks 2000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import subprocess
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/csharp_bench.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import print_table, quiet_logging
from bench.wire_bench import ack_times_remote, best_and_median, start_server

ROOT = Path(__file__).resolve().parent.parent
CSHARP = ROOT / "clients" / "csharp"
BENCH_EXE = CSHARP / "build" / "Bench.exe"


def csharp(port: int, mode: str, count: int) -> list[str]:
    """Bench.exe's output lines."""
    out = subprocess.run(
        ["mono", "--optimize=all", str(BENCH_EXE), str(port), mode, str(count)],
        capture_output=True, text=True, check=True, timeout=1800,
    )  # fmt: skip
    return out.stdout.splitlines()


def main() -> None:
    """Build, measure both clients, print the tables and the verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acks", type=int, default=2000, help="resume -> ack samples per client")
    parser.add_argument("--rounds", type=int, default=4, help="rounds the acks are split in")
    parser.add_argument("--turns", type=int, default=11000, help="turns of the allocation run")
    args = parser.parse_args()
    if not shutil.which("mono"):
        raise SystemExit("mono is missing: `make csharp` installs it")
    subprocess.run(["bash", str(CSHARP / "Tools~" / "make_csharp.sh"), "build"], check=True)
    quiet_logging()
    proc, address = start_server()
    per_round = max(args.acks // args.rounds, 100)
    rounds: dict[str, list[list[float]]] = {"python": [], "csharp": []}
    try:
        for _ in range(args.rounds):
            rounds["python"].append(asyncio.run(ack_times_remote(address, per_round)))
            samples = [float(us) / 1e6 for us in csharp(address[1], "acks", per_round)]
            assert len(samples) == per_round, "Bench.exe printed the wrong number of samples"
            rounds["csharp"].append(samples)
        gc_lines = csharp(address[1], "turns", args.turns)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(10)
    gc = dict(line.split("=", 1) for line in gc_lines)

    print(f"turnloom C# client benchmark (mono, loopback, mock model; server at {address[1]})")
    print()
    rows = []
    p50 = {}
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        figures = {key: best_and_median(samples, q) for key, samples in rounds.items()}
        if name == "p50":
            p50 = {key: best for key, (best, _) in figures.items()}
        rows.append(
            [name]
            + [
                f"{best * 1e6:,.0f} us / {median * 1e6:,.0f} us"
                for best, median in figures.values()
            ]
            + [f"{figures['csharp'][0] / figures['python'][0]:.2f}x"]
        )
    print_table(["resume -> ack (best / median round)", "python", "C#", "C# / python"], rows)
    ratio = p50["csharp"] / p50["python"]
    verdict = "within" if ratio <= 2.0 else "NOT within"
    print(f"C# p50 is {ratio:.2f}x Python's: {verdict} the 2x target")
    print()
    turns = int(gc["turns"])
    heap_before, heap_after = int(gc["heap_after_warmup"]), int(gc["heap_at_end"])
    growth = heap_after - heap_before
    print_table(
        [f"C# allocations over {turns:,} turns", "value"],
        [
            ["managed heap after warm-up (full GC)", f"{heap_before:,} bytes"],
            ["managed heap at the end (full GC)", f"{heap_after:,} bytes"],
            ["growth per turn", f"{growth / turns:,.1f} bytes"],
            ["gen0 / gen1 / gen2 collections", f"{gc['gen0_collections']} / "
             f"{gc['gen1_collections']} / {gc['gen2_collections']}"],
            ["turns per second (C#, sequential)", f"{turns / float(gc['seconds']):,.0f}"],
        ],
    )  # fmt: skip
    # A leak would keep something per turn: 10,000 turns of even one small object each is
    # over 100 KB. Less than 64 KB of growth is noise (the runtime's own caches).
    held = "no growth" if growth < 64 * 1024 else "GROWTH"
    print(f"{held}: {growth:,} bytes over {turns:,} turns")
    print(f"{per_round * args.rounds} resume samples per client in {args.rounds} rounds")


if __name__ == "__main__":
    main()
