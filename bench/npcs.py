"""NPCs on the embedded default model (Gemma 3 270M Q4_K_M): long conversations.

**A long conversation.** One Generate NPC with a short system prompt, on a context of 1024
tokens, is told 40 player lines of about 25 words (greedy, replies of at most 32 tokens), one
after another, as a game would. Side by side in one run:

* turnloom's defaults: the history budget leaves the oldest exchanges out of the prompt in
  chunks, down to 75 % of its budget, so the kept prefix stays for several turns;
* the old path (`HistoryParams(trim=False)`): the whole dialog in every prompt, as before the
  budget existed; once it passes the context every turn fails (4001).

Printed per variant: turns that succeeded, the first that failed, the prompt tokens llama.cpp
evaluated against the prompt tokens of the turns after the first three (the share the prompt
cache did not cover), trims, and the median seconds per turn. The same conversation then runs
over `ServedModel` against llama-cpp-python's server (context 1024), counted by the server's
tokenizer; that server reports no evaluated-token counts, so only successes and times show.

Every turn is checked: a success must have answered with text and its prompt must fit the
budget the node reported.

Run from the repository root: ``.venv/bin/python -m bench.npcs [--lines 40]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/npcs.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import turnloom as tl
from bench._common import print_table, quiet_logging

SYSTEM = "You are Mira, who keeps the general store in the village of Ashford. Answer briefly."
N_CTX = 1024
#: Turns whose evaluated share is not counted: the first fills the cache from nothing.
WARM_UP = 3

SUBJECTS = [
    "the old mill by the river",
    "the blacksmith's daughter who went missing last spring",
    "the price of salted fish since the harbour froze",
    "the wolves that were heard near the northern farms",
    "the travelling priest who stayed at the inn",
    "the new toll on the bridge to the capital",
    "the apples from the orchard on the hill",
    "the stranger in the grey cloak asking about maps",
]
ASKS = [
    "and whether you think it is safe for someone like me to go there alone after dark",
    "and what the people in the village say about it when they think nobody is listening",
    "and if you have anything in the shop that would help a traveller deal with it",
    "and how long it has been like this, because I remember it very differently",
    "and who I should talk to if I want to learn more before the market closes",
]


def player_lines(count: int) -> list[str]:
    """`count` distinct lines of about 25 words, the same every run."""
    lines = []
    for i in range(count):
        subject, ask = SUBJECTS[i % len(SUBJECTS)], ASKS[(i * 3) % len(ASKS)]
        lines.append(f"Good day again, Mira. Tell me about {subject} {ask}?")
    return lines


def npc_graph(model_name: str, trim: bool) -> tl.GraphDescription:
    return (
        tl.GraphDescription()
        .add_node(
            "answer",
            tl.GenerateParams(
                system_prompt=SYSTEM,
                sampling=tl.SamplingParams(temperature=0.0, max_tokens=32),
                history=tl.HistoryParams(trim=trim),
            ),
        )
        .set_start_node("answer")
        .set_default_model_name(model_name)
    )


@dataclass
class Conversation:
    """What one run of the conversation did."""

    label: str
    ok: int = 0
    first_failure: int | None = None
    prompt: int = 0
    evaluated: int = 0
    trims: int = 0
    seconds: list[float] = field(default_factory=list)
    reports_evaluated: bool = True

    def row(self) -> list[object]:
        share = (
            f"{self.evaluated / self.prompt:.2f}"
            if self.prompt and self.reports_evaluated
            else "n/a"
        )
        return [
            self.label,
            self.ok,
            "-" if self.first_failure is None else self.first_failure,
            self.prompt if self.reports_evaluated else "n/a",
            self.evaluated if self.reports_evaluated else "n/a",
            share,
            self.trims,
            f"{statistics.median(self.seconds):.2f}" if self.seconds else "-",
        ]


def converse(label: str, model: Any, trim: bool, lines: list[str]) -> Conversation:
    run = Conversation(label, reports_evaluated=isinstance(model, tl.LlamaModel))
    with tl.Engine(model) as engine:
        agent = engine.create_agent(npc_graph(model.name, trim), enable_diagnostics=True)
        for turn, line in enumerate(lines):
            started = time.perf_counter()
            result = agent.send_message(line).final
            run.seconds.append(time.perf_counter() - started)
            if result.status != tl.TurnStatus.SUCCESS:
                assert result.error_code == tl.ErrorCode.InferenceFailed, result
                if run.first_failure is None:
                    run.first_failure = turn + 1
                continue
            assert result.text.strip(), f"turn {turn + 1} answered nothing"
            diagnostics = result.debug_info["nodes"][0]["diagnostics"]
            history = diagnostics.get("history")
            if trim:
                assert history is not None
                assert history["prompt_tokens"] <= history["budget_tokens"], history
                run.trims += "newly_left_out" in history
            run.ok += 1
            stats = model.generations[-1]
            if turn >= WARM_UP and run.reports_evaluated:
                run.prompt += stats.prompt_tokens
                run.evaluated += stats.prompt_tokens_evaluated
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lines", type=int, default=40, help="player lines per conversation")
    parser.add_argument("--no-served", action="store_true", help="skip the ServedModel run")
    args = parser.parse_args()
    quiet_logging()
    lines = player_lines(args.lines)
    print(f"A long conversation: {len(lines)} player lines, context {N_CTX}, greedy, 32 tokens")
    runs = []
    for trim, label in ((True, "turnloom defaults (history budget)"), (False, "the old path")):
        model = tl.LlamaModel.from_catalog(n_ctx=N_CTX).load()
        try:
            runs.append(converse(label, model, trim, lines))
        finally:
            model.close()
    if not args.no_served:
        from bench.served_bench import MODEL, llama_server

        with llama_server(threads=2, n_ctx=N_CTX) as url:
            served = tl.ServedModel(
                url,
                model=MODEL,
                name=MODEL,
                server_kind="llama-cpp-python",
                entry=tl.models.DEFAULT_MODEL,
                n_ctx=N_CTX,
            )
            runs.append(converse("ServedModel, defaults", served, True, lines))
    print_table(
        [
            "variant",
            "ok",
            "first failure",
            f"prompt tok (turn {WARM_UP + 1}+)",
            "evaluated",
            "evaluated share",
            "trims",
            "s/turn",
        ],
        [run.row() for run in runs],
    )
    ours = runs[0]
    assert ours.ok == len(lines), "a turn failed on the defaults"
    share = ours.evaluated / ours.prompt
    print(f"\nevaluated share after {WARM_UP} turns: {share:.2f} (goal: at most 0.35)")


if __name__ == "__main__":
    main()
