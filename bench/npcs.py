"""NPCs on the embedded default model (Gemma 3 270M Q4_K_M): long conversations, and several
NPCs talked to in turn on one model.

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

**NPCs talked to in turn.** Four NPCs, each with a system prompt of about 500 tokens, on one
model (context 4096, the default), are told a line each in turn, A B C D A B …, for 5 rounds.
Side by side: turnloom's defaults (each NPC's cached prompt is kept in host memory while the
others speak, and put back when it speaks again) and the old path (`kept_prompts_mb=0`: the one
llama.cpp context holds one conversation's cache at a time). Printed: the prompt tokens
evaluated against the prompt tokens after each NPC's first turn, the median seconds per turn,
and the host memory the kept prompts take.

**NPCs answering at once.** N NPCs (short distinct system prompts) are each told a line at
the same moment (`send_message_async` on `Engine()`'s defaults: 4 sequences decoded together),
replies of at most 48 greedy tokens; the raw run decodes as many tokens per NPC as turnloom's
replies had. Printed per N (1, 2, 4, 8): the round's wall time,
each NPC's time to first token (first and last), aggregate generated tokens/s; next to it the
same NPCs one after another (the old path: `sequences=1`), and raw llama-cpp-python doing the
same work through its low-level batch API (one context, N sequences, greedy, no turnloom):
the floor for this machine.

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


def in_turn(label: str, model: tl.LlamaModel, npcs: int, rounds: int) -> list[object]:
    """Four NPCs told a line each in turn; the row of the table."""
    prompt = evaluated = 0
    seconds: list[float] = []
    with tl.Engine(model) as engine:
        agents = []
        for i in range(npcs):
            system = f"You are {NAMES[i]}, who lives in Ashford. " + BACKSTORY
            graph = (
                tl.GraphDescription()
                .add_node(
                    "answer",
                    tl.GenerateParams(
                        system_prompt=system,
                        sampling=tl.SamplingParams(temperature=0.0, max_tokens=32),
                    ),
                )
                .set_start_node("answer")
                .set_default_model_name(model.name)
            )
            agents.append(engine.create_agent(graph))
        lines = player_lines(rounds)
        for r in range(rounds):
            for agent in agents:
                started = time.perf_counter()
                result = agent.send_message(lines[r]).final
                seconds.append(time.perf_counter() - started)
                assert result.status == tl.TurnStatus.SUCCESS and result.text.strip(), result
                stats = model.generations[-1]
                if r:
                    prompt += stats.prompt_tokens
                    evaluated += stats.prompt_tokens_evaluated
    keepers = [inst.prompts for inst in model._instances]
    if model._batcher is not None:
        keepers.append(model._batcher.prompts)
    kept = sum(k.kept_bytes for k in keepers) / 2**20
    return [
        label,
        prompt,
        evaluated,
        f"{evaluated / prompt:.2f}",
        f"{statistics.median(seconds):.2f}",
        f"{kept:.1f}",
    ]


AT_ONCE_TOKENS = 48
AT_ONCE_LINE = "Tell me a long story about the river and the old mill, please."


def at_once_graph(model_name: str, i: int) -> tl.GraphDescription:
    return (
        tl.GraphDescription()
        .add_node(
            "answer",
            tl.GenerateParams(
                system_prompt=f"You are villager number {i} of Ashford.",
                # repeat_penalty 1 and a stop-free reply: every NPC produces all its tokens.
                sampling=tl.SamplingParams(
                    temperature=0.0, max_tokens=AT_ONCE_TOKENS, repeat_penalty=1.0
                ),
            ),
        )
        .set_start_node("answer")
        .set_default_model_name(model_name)
    )


def round_at_once(
    model: tl.LlamaModel, npcs: int, together: bool
) -> tuple[float, float, float, list[int]]:
    """N NPCs each told a line (at once, or one after another); the round's seconds, the
    first and last NPC's time to first token (from the round's start) and each reply's
    tokens."""
    with tl.Engine(model) as engine:
        agents = [engine.create_agent(at_once_graph(model.name, i)) for i in range(npcs)]
        agents[0].send_message("warm up")  # loads what loads lazily; not timed
        started = time.perf_counter()
        if together:
            futures = [a.send_message_async(AT_ONCE_LINE) for a in agents]
            steps = [f.result(600) for f in futures]
        else:
            steps = [a.send_message(AT_ONCE_LINE) for a in agents]
        seconds = time.perf_counter() - started
        for step in steps:
            assert step.final is not None and step.final.status is tl.TurnStatus.SUCCESS
        stats = list(model.generations)[-npcs:]
        firsts = sorted(s.started + s.seconds_to_first_token - started for s in stats)
        assert all(s.tokens > 0 for s in stats)
        counts = [s.tokens for s in sorted(stats, key=lambda s: s.agent_id)]
    return seconds, firsts[0], firsts[-1], counts


def raw_batched(model: tl.LlamaModel, counts: list[int]) -> float:
    """The same prompts and as many tokens (`counts`, per NPC) through llama-cpp-python's
    low-level API alone: one context of a sequence per NPC, every prompt prefilled in one
    batch, then one batch per step of the sequences not yet done; greedy. The round's
    seconds."""
    import llama_cpp

    npcs = len(counts)
    llm = model._instances[0].ensure_loaded()
    prompts = []
    for i in range(npcs):
        chat = [
            {"role": "system", "content": f"You are villager number {i} of Ashford."},
            {"role": "user", "content": AT_ONCE_LINE},
        ]
        prompts.append(model.prompt_token_ids(chat))
    params = type(llm.context_params).from_buffer_copy(llm.context_params)
    params.n_ctx = 1024 * npcs
    params.n_seq_max = npcs
    params.kv_unified = True
    ctx = llama_cpp.llama_init_from_model(llm.model, params)
    batch = llama_cpp.llama_batch_init(max(sum(map(len, prompts)), npcs), 0, 1)
    samplers = [llama_cpp.llama_sampler_init_greedy() for _ in range(npcs)]
    try:
        started = time.perf_counter()
        n = 0
        rows = []
        for seq, tokens in enumerate(prompts):
            for pos, token in enumerate(tokens):
                batch.token[n], batch.pos[n], batch.n_seq_id[n] = token, pos, 1
                batch.seq_id[n][0], batch.logits[n] = seq, pos == len(tokens) - 1
                n += 1
            rows.append(n - 1)
        positions = [len(t) for t in prompts]
        left = list(counts)
        while True:
            batch.n_tokens = n
            assert llama_cpp.llama_decode(ctx, batch) == 0
            sampled = {}
            for seq in range(npcs):
                if left[seq] > 0:
                    sampled[seq] = llama_cpp.llama_sampler_sample(samplers[seq], ctx, rows[seq])
                    left[seq] -= 1
            going = [seq for seq in sampled if left[seq] > 0]
            if not going:
                break
            for n, seq in enumerate(going):  # the next step: one token of each not done
                batch.token[n], batch.pos[n], batch.n_seq_id[n] = sampled[seq], positions[seq], 1
                batch.seq_id[n][0], batch.logits[n] = seq, True
                rows[seq] = n
                positions[seq] += 1
            n = len(going)
        return time.perf_counter() - started
    finally:
        for sampler in samplers:
            llama_cpp.llama_sampler_free(sampler)
        llama_cpp.llama_batch_free(batch)
        llama_cpp.llama_free(ctx)


def at_once(counts: list[int]) -> None:
    print(f"\nNPCs answering at once, {AT_ONCE_TOKENS} greedy tokens each, Engine() defaults")
    batched = tl.LlamaModel.from_catalog().load()
    serial = tl.LlamaModel.from_catalog(sequences=1).load()
    rows = []
    try:
        for npcs in counts:
            ours, first, last, counts = round_at_once(batched, npcs, together=True)
            one_by_one, _, _, _ = round_at_once(serial, npcs, together=False)
            raw = raw_batched(batched, counts)
            tokens = sum(counts)
            rows.append(
                [
                    npcs,
                    f"{ours:.2f}",
                    f"{first:.2f} / {last:.2f}",
                    f"{tokens / ours:.1f}",
                    f"{one_by_one:.2f}",
                    f"{ours / one_by_one:.2f}",
                    f"{raw:.2f}",
                    f"{ours / raw:.2f}",
                ]
            )
    finally:
        batched.close()
        serial.close()
    print_table(
        [
            "NPCs",
            "round s",
            "1st token first/last s",
            "tok/s",
            "one after another s",
            "x one after another",
            "raw batched s",
            "x raw",
        ],
        rows,
    )


NAMES = ["Mira", "Tomas", "Old Brenna", "Kit"]
BACKSTORY = (
    "You keep a small trade in the market square and have lived here all your life. You know "
    "the miller and his sons, the priest who comes each autumn, the wolves of the northern "
    "farms and the toll on the bridge to the capital. You are kind but careful with strangers, "
    "and you answer in one or two sentences, plainly, as a villager would. "
) * 6


def long_conversation(lines: list[str], served: bool) -> None:
    print(f"A long conversation: {len(lines)} player lines, context {N_CTX}, greedy, 32 tokens")
    runs = []
    for trim, label in ((True, "turnloom defaults (history budget)"), (False, "the old path")):
        model = tl.LlamaModel.from_catalog(n_ctx=N_CTX).load()
        try:
            runs.append(converse(label, model, trim, lines))
        finally:
            model.close()
    if served:
        from bench.served_bench import MODEL, llama_server

        with llama_server(threads=2, n_ctx=N_CTX) as url:
            model = tl.ServedModel(
                url,
                model=MODEL,
                name=MODEL,
                server_kind="llama-cpp-python",
                entry=tl.models.DEFAULT_MODEL,
                n_ctx=N_CTX,
            )
            runs.append(converse("ServedModel, defaults", model, True, lines))
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


def talked_to_in_turn(rounds: int) -> None:
    print(f"\nFour NPCs talked to in turn, {rounds} rounds, context 4096, greedy, 32 tokens")
    rows = []
    variants: list[tuple[str, dict[str, int]]] = [
        ("turnloom defaults (4 sequences)", {}),
        ("2 sequences (the others' cells in host memory)", {"sequences": 2}),
        ("the old path (1 sequence, nothing kept)", {"sequences": 1, "kept_prompts_mb": 0}),
    ]
    for label, options in variants:
        model = tl.LlamaModel.from_catalog(**options).load()
        try:
            rows.append(in_turn(label, model, 4, rounds))
        finally:
            model.close()
    print_table(
        ["variant", "prompt tok (round 2+)", "evaluated", "share", "s/turn", "kept MB"], rows
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--lines", type=int, default=40, help="player lines per conversation")
    parser.add_argument("--no-served", action="store_true", help="skip the ServedModel run")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of NPCs talked to in turn")
    parser.add_argument("--only", choices=["long", "in-turn", "at-once"], help="one part only")
    args = parser.parse_args()
    quiet_logging()
    if args.only in (None, "long"):
        long_conversation(player_lines(args.lines), not args.no_served)
    if args.only in (None, "in-turn"):
        talked_to_in_turn(args.rounds)
    if args.only in (None, "at-once"):
        at_once([1, 2, 4, 8])


if __name__ == "__main__":
    main()
