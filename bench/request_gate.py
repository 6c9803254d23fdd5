"""The request/talk step of the `score` decision alone, on labelled lines of its own.

Whether a player's line asks for something at all is the first step of the ToolCall node's
`score` decision (`turnloom.engine.turns.nodes.score.request`): talk calls no tool. This scores
the lines of `data/request_dev.json` (requests and talk from places none of the prompt sets
use, and lines said right after a call; the step's development lines, tuned on) on the
embedded default model in three ways, one line at a time in turn, so a burst of load hits them
alike:

- **short alone**: the short prompt's answer only (what the step did before the second prompt);
- **default**: the step as shipped, the long prompt asked too where the short one is not sure
  (within `score.request.SURE` nats of its boundary), the two averaged;
- **both always**: both prompts for every line, averaged.

For each: lines right (request above the boundary, talk below), per kind of line (statement,
question, after a call), how many lines came within 0.1 nats of the boundary (where what was
scored before can tip them), how many asked the long prompt, and the median ms of the step
over the lines it scored first (each way goes first on a third of the lines, in turn).
Run from the repository root: ``.venv/bin/python -m bench.request_gate [--verbose]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/request_gate.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import logged_summary, print_table, quiet_logging

_DATA = Path(__file__).resolve().parent / "data" / "request_dev.json"
#: (label, the `SURE` it runs with): 0 never asks the long prompt, inf always does.
CONFIGS = (("short alone", 0.0), ("default", None), ("both always", math.inf))


async def _run(model: Any, lines: list[dict[str, Any]], verbose: bool) -> dict[str, Any]:
    from turnloom.engine.turns.nodes.score import request as sr

    shipped = sr.SURE
    results: dict[str, dict[str, Any]] = {
        label: {"margins": [], "ms": [], "long": 0} for label, _ in CONFIGS
    }
    counted = {"n": 0}
    real_score = model.score_choices

    async def counting(prompt: str, *args: Any, **kwargs: Any) -> list[float]:
        counted["n"] += 1
        return await real_score(prompt, *args, **kwargs)

    model.score_choices = counting
    try:
        await sr.request_margin(model, "Hello.")  # boundaries and both prompts cached first
        for index, item in enumerate(lines):
            # Each line in every way, the ways in a rotating order: the first to score a line
            # reads it afresh, the others find some of it cached, so only the first is timed.
            turn = index % len(CONFIGS)
            for position, (label, sure) in enumerate(CONFIGS[turn:] + CONFIGS[:turn]):
                sr.SURE = shipped if sure is None else sure
                counted["n"] = 0
                started = time.perf_counter()
                margin = await sr.request_margin(
                    model, item["line"], after_call=item.get("after_call", False)
                )
                if position == 0:
                    results[label]["ms"].append((time.perf_counter() - started) * 1000)
                results[label]["margins"].append(margin)
                results[label]["long"] += counted["n"] == 2
                assert counted["n"] in (1, 2), "one or two prompts per line"
            if verbose:
                said = " ".join(f"{r['margins'][-1]:+.2f}" for r in results.values())
                kind = "request" if item["request"] else "talk"
                print(f"  {kind:<8} {said}  {item['line']!r}")
    finally:
        sr.SURE = shipped
        del model.score_choices
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="print every line's margins")
    args = parser.parse_args()
    quiet_logging()
    import turnloom as tl
    from turnloom.engine.turns.nodes.score.request import line_kind

    doc = json.loads(_DATA.read_text(encoding="utf-8"))
    lines = doc["lines"]
    kinds = ("statement", "question", "after call")
    kind_of = [line_kind(x["line"], x.get("after_call", False)) for x in lines]
    of_kind = {k: [i for i, of in enumerate(kind_of) if of == k] for k in kinds}
    assert sum(len(v) for v in of_kind.values()) == len(lines), "every line has one kind"
    print(f"model {tl.models.DEFAULT_MODEL}; {len(lines)} lines of {_DATA.name} "
          f"({', '.join(f'{len(v)} {k}' for k, v in of_kind.items())}); "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="m", n_ctx=2048).load()
    try:
        results = asyncio.run(_run(model, lines, args.verbose))
    finally:
        model.close()
    rows = []
    for label, _ in CONFIGS:
        r = results[label]
        right = [(m > 0) == x["request"] for m, x in zip(r["margins"], lines, strict=True)]
        per_kind = [f"{sum(right[i] for i in of_kind[k])}/{len(of_kind[k])}" for k in kinds]
        near = sum(abs(m) < 0.1 for m in r["margins"])
        rows.append([label, f"{sum(right)}/{len(lines)} ({100 * sum(right) / len(lines):.0f}%)",
                     *per_kind, near, r["long"], f"{statistics.median(r['ms']):.0f}"])  # fmt: skip
    print_table(["request step", "right", "statements", "questions", "after a call",
                 "within 0.1", "asked long", "median ms (first)"], rows)  # fmt: skip
    print(f"\nload at end {os.getloadavg()[0]:.2f}; {logged_summary()}")


if __name__ == "__main__":
    main()
