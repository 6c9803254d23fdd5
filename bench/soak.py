"""Soak: many agents doing random operations for a long run, embedded and over the wire.

Each round creates ``--agents`` agents, drives them with random operations until ``--turns``
turns have started, cancels what is still open and destroys the agents. A chaos task pokes
random agents at the same time (cancel, change_params, get_params, a stray resume), so
operations race each other, the pause timeouts (a few ms) and the model's streaming. A
player who talks over an NPC plays the turn the message starts, as the driver plays its own.

Checked after every round, per agent (a failed check is a *violation*, printed and counted):

* every started turn completed exactly once (``on_turn_complete``) and sent exactly one final
  ``AnswerText`` chunk, whose text is the completion's text. The agents get random input
  policies, and the chaos task also talks over those that are not ``reject`` (queued,
  interrupting and merging messages), so turns are counted from the message events;
* every operation either worked or was refused with a ``TurnloomError`` (anything else leaks);
* every driver is done within ``ROUND_LIMIT_S`` (a turn that nobody can end would hold it);
* after the round no task of the round is left, and no engine timer is still scheduled
  (embedded);
* the RSS of the process that holds the engines (this one embedded; the ``serve --mock``
  child over the wire) stays flat across rounds: the round-1 figure is the reference.

Run from the repository root (``make soak`` runs the default sizes):
``.venv/bin/python -m bench.soak [--faces embedded wire] [--rounds 5] [--turns 20000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/soak.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import turnloom as tl
from bench._common import live_timers, print_table, quiet_logging, rss_bytes
from bench.wire_bench import start_server

#: The user messages: the mock echoes them, so the JSON one makes the ToolCall node see a call.
MESSAGES = ("hello", "what do you sell?", '{"name": "open_door", "arguments": {"door_id": "7"}}')
STATUSES = {"success", "cancelled", "pause_timed_out", "error"}


def soak_graph(timeout_ms: int) -> tl.GraphDescription:
    """gate (Pause) → door (ToolCall, AwaitResult) → say (Generate); jumps may go to `aside`."""
    door = tl.ToolDefinition(
        name="open_door",
        description="Open a door.",
        parameters=[tl.ToolParamDefinition(name="door_id", type="string", description="")],
    )
    return (
        tl.GraphDescription()
        .add_node(
            "gate",
            tl.PauseParams(default_exit="door", timeout_exit="aside", pause_timeout_ms=timeout_ms),
        )
        .add_node(
            "door",
            tl.ToolCallParams(
                tools=[door],
                disposition=tl.ToolCallDisposition.AwaitResult,
                mode=tl.ToolCallMode.DetectOnly,  # "say" answers when no tool is called
                tool_called_exit="say",
                no_tool_called_exit="say",
                pause_timeout_ms=timeout_ms,
            ),
        )
        .add_node("say", tl.GenerateParams(sampling=tl.SamplingParams(max_tokens=8)))
        .add_node(
            "aside", tl.CannedResponseParams(lines=["hm", "well"], selection=tl.Selection.Cycle)
        )
        .set_start_node("gate")
        .set_default_model_name("mock")
    )


@dataclass
class Ledger:
    """What one agent did and what its callbacks saw."""

    started: int = 0
    #: Turns started as the message events report them (every policy but `reject` over the
    #: wire, where only waiting messages are reported): idle starts, queued starts,
    #: interrupts and merges.
    starts: int = 0
    policy: str = "reject"
    completions: list[str] = field(default_factory=list)
    finals: list[str] = field(default_factory=list)
    texts_match: bool = True

    def on_answer_text(self, text: str, is_delta: bool, is_final: bool) -> None:
        if is_final:
            self.finals.append(text)

    def on_message(self, event: tl.MessageEvent) -> None:
        if event.fate in (
            tl.MessageFate.STARTED,
            tl.MessageFate.INTERRUPTED,
            tl.MessageFate.MERGED,
        ):
            self.starts += 1

    @property
    def turns_started(self) -> int:
        """Every turn that started: from the events, or (`reject`, which the wire does not
        report) the driver's own count, the only sender of such an agent."""
        return self.started if self.policy == "reject" else self.starts

    def on_turn_complete(self, result: tl.TurnResult) -> None:
        self.completions.append(str(result.status))
        if (
            not self.finals
            or self.finals[-1] != result.text
            or len(self.finals) != len(self.completions)
        ):
            self.texts_match = False


@dataclass
class RoundReport:
    """The figures and violations of one round."""

    turns: int = 0
    operations: Counter[str] = field(default_factory=Counter)
    refusals: Counter[int] = field(default_factory=Counter)
    statuses: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    seconds: float = 0.0
    rss: int = 0


class Budget:
    """Turns left to start in this round, shared by every driver."""

    def __init__(self, turns: int) -> None:
        self.left = turns

    def take(self) -> bool:
        self.left -= 1
        return self.left >= 0


async def attempt(report: RoundReport, name: str, call: Any) -> Any:
    """Run one operation; a `TurnloomError` is a legal refusal, anything else a violation."""
    report.operations[name] += 1
    try:
        return await call
    except tl.TurnloomError as error:
        report.refusals[int(error.code)] += 1
        return None
    except Exception as error:  # the point of the soak: nothing else may come out
        report.violations.append(f"{name}: {type(error).__name__}: {error}")
        return None


async def play_pause(agent: Any, step: Any, rng: random.Random, report: RoundReport) -> None:
    """Answer pauses with random operations until the turn completes (or is cancelled)."""
    while step is not None and step.paused:
        pause = step.pause
        roll = rng.random()
        if roll < 0.05:
            await attempt(report, "cancel", agent.cancel())
            return
        if roll < 0.15:  # let the deadline (if any) decide, or resume after a short wait
            await asyncio.sleep(rng.choice((0, 0.002, 0.01)))
        if roll < 0.25:
            await attempt(report, "change_params", agent.change_params("say", {"stream": False}))
        elif roll < 0.30:
            await attempt(report, "resume_unknown", agent.resume("nowhere"))
        elif roll < 0.35:
            await attempt(report, "resume_bad_batch", agent.resume("", [("nope", "x")]))
        if roll < 0.45:
            after = await attempt(report, "resume_jump", agent.resume("aside"))
        elif pause.awaits_results:
            results = [(call.call_id, "opened") for call in pause.pending_calls]
            after = await attempt(report, "resume_results", agent.resume("", results))
        else:
            after = await attempt(report, "resume", agent.resume())
        if after is None:  # refused (a timeout or the chaos task won): see where the turn is
            after = await attempt(report, "wait", agent.wait())
        step = after


async def drive(
    agent: Any, ledger: Ledger, rng: random.Random, budget: Budget, report: RoundReport
) -> None:
    """One agent's turns, one after the other, each with random operations at its pauses."""
    while budget.take():
        step = await attempt(report, "send_message", agent.send_message(rng.choice(MESSAGES)))
        if step is None:
            await attempt(report, "wait_complete", agent.wait_complete())
            continue
        ledger.started += 1
        report.turns += 1
        await play_pause(agent, step, rng, report)
        await attempt(report, "wait_complete", agent.wait_complete())


async def talk(agent: Any, text: str, rng: random.Random, report: RoundReport) -> None:
    """A player talks over an NPC, then plays the turn the message starts as a driver plays
    its own: nobody else would answer that turn's tool call, and a pause without a deadline
    that nobody answers holds the agent's turn open, and every message queued behind it,
    for ever."""
    step = await attempt(report, "chaos_send", agent.send_message(text))
    await play_pause(agent, step, rng, report)


#: How long a round's drivers may take (the default round takes well under a minute).
ROUND_LIMIT_S = 900.0

#: The input policies the agents of a round get, at random; `reject` twice as often.
POLICIES = ("reject", "reject", "enqueue", "interrupt", "merge")


async def chaos(
    agents: list[Any],
    ledgers: list[Ledger],
    rng: random.Random,
    report: RoundReport,
    sends: list[asyncio.Future[Any]],
) -> None:
    """Poke random agents while their drivers run, so operations race each other; a player
    talks over the NPCs whose input policy lets them (queued, interrupting, merging)."""
    while True:
        await asyncio.sleep(rng.choice((0, 0.0005, 0.001)))
        index = rng.randrange(len(agents))
        agent = agents[index]
        roll = rng.random()
        if roll < 0.3 and ledgers[index].policy != "reject":
            text = rng.choice(MESSAGES)
            # Not awaited here: a queued message answers only once its own turn runs.
            sends.append(
                asyncio.ensure_future(talk(agent, text, random.Random(rng.random()), report))
            )
        elif roll < 0.3:
            await attempt(report, "chaos_cancel", agent.cancel())
        elif roll < 0.6:
            await attempt(report, "chaos_get_params", agent.get_params("door"))
        elif roll < 0.8:
            change = {"system_prompt": rng.choice(("", "Be brief."))}
            await attempt(report, "chaos_change_params", agent.change_params("door", change))
        else:
            await attempt(report, "chaos_resume", agent.resume())


async def run_round(
    engine: Any, agents_n: int, turns: int, rng: random.Random, report: RoundReport
) -> None:
    """Create the agents, drive them until the budget is spent, close and check everything."""
    agents, ledgers = [], []
    for _ in range(agents_n):
        policy = rng.choice(POLICIES)
        graph = soak_graph(rng.choice((0, 0, 3, 20)))
        agent = await engine.create_agent(graph, input_policy=policy)
        ledger = Ledger(policy=policy)
        agent.set_on_answer_text(ledger.on_answer_text)
        agent.set_on_turn_complete(ledger.on_turn_complete)
        agent.set_on_message(ledger.on_message)
        agents.append(agent)
        ledgers.append(ledger)
    budget = Budget(turns)
    sends: list[asyncio.Future[Any]] = []
    chaos_task = asyncio.create_task(chaos(agents, ledgers, rng, report, sends))
    drivers = [
        asyncio.ensure_future(drive(agent, ledger, random.Random(rng.random()), budget, report))
        for agent, ledger in zip(agents, ledgers, strict=True)
    ]
    # A turn that nobody can end would hold its driver for ever (and the chaos task with it):
    # past the limit that is a violation, named, and the round goes on to its checks.
    _, stuck = await asyncio.wait(drivers, timeout=ROUND_LIMIT_S)
    if stuck:
        names = [
            f"agent {agent.agent_id} ({ledger.policy})"
            for agent, ledger, driver in zip(agents, ledgers, drivers, strict=True)
            if driver in stuck
        ]
        report.violations.append(
            f"{len(stuck)} drivers still waiting after {ROUND_LIMIT_S:.0f} s: " + ", ".join(names)
        )
        for driver in stuck:
            driver.cancel()
    await asyncio.gather(*drivers, return_exceptions=True)
    chaos_task.cancel()
    await asyncio.gather(chaos_task, return_exceptions=True)
    for agent in agents:  # the chaos task may have left turns open, and messages waiting
        while await attempt(report, "final_cancel", agent.cancel()):
            pass  # each cancel ends a turn; a waiting message then starts the next
        await attempt(report, "final_wait", agent.wait_complete())
    await asyncio.gather(*sends)  # every player message has its answer now
    await asyncio.sleep(0.05)  # the last callbacks (over the wire they come as frames)
    for agent, ledger in zip(agents, ledgers, strict=True):
        report.statuses.update(ledger.completions)
        where = f"agent {agent.agent_id}"
        started = ledger.turns_started
        if len(ledger.completions) != started:
            report.violations.append(
                f"{where} ({ledger.policy}): {started} turns started, "
                f"{len(ledger.completions)} completed"
            )
        if len(ledger.finals) != started:
            report.violations.append(
                f"{where} ({ledger.policy}): {started} turns started, "
                f"{len(ledger.finals)} final chunks"
            )
        if not ledger.texts_match:
            report.violations.append(f"{where}: a final chunk's text differs from its completion")
        if set(ledger.completions) - STATUSES:
            report.violations.append(f"{where}: statuses {set(ledger.completions)}")
        await attempt(report, "destroy", agent.destroy())


async def soak_embedded(args: argparse.Namespace) -> list[RoundReport]:
    """Rounds on an in-process `AsyncEngine` with the mock model."""
    reports = []
    rng = random.Random(args.seed)
    async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
        for _ in range(args.rounds):
            report = RoundReport()
            start = time.perf_counter()
            await run_round(engine, args.agents, args.turns, rng, report)
            report.seconds = time.perf_counter() - start
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            if others:
                report.violations.append(f"{len(others)} tasks left after the round")
            if engine.core.agents:
                report.violations.append(f"{len(engine.core.agents)} agents left")
            # The stall warning's one timer outlives the last pause until its moment.
            timers = live_timers(asyncio.get_running_loop(), engine.core.stall_watch._fire)
            if timers:
                report.violations.append(f"{timers} timers still scheduled after the round")
            gc.collect()
            report.rss = rss_bytes()
            reports.append(report)
    return reports


def server_rss(pid: int) -> int:
    """The resident set size of another process (Linux)."""
    with open(f"/proc/{pid}/statm") as f:
        return int(f.read().split()[1]) * 4096


async def soak_wire(args: argparse.Namespace) -> list[RoundReport]:
    """The same rounds through `tl.connect_async` against `python -m turnloom serve --mock`."""
    proc, address = start_server()
    reports = []
    rng = random.Random(args.seed)
    try:
        async with await tl.connect_async(*address) as engine:
            for _ in range(args.rounds):
                report = RoundReport()
                start = time.perf_counter()
                await run_round(engine, args.agents, args.turns, rng, report)
                report.seconds = time.perf_counter() - start
                report.rss = server_rss(proc.pid)
                reports.append(report)
        if proc.poll() is not None:
            reports[-1].violations.append(f"the server exited with {proc.returncode}")
    finally:
        proc.terminate()
        proc.wait(10)
    return reports


def summarize(face: str, reports: list[RoundReport]) -> int:
    """Print one face's rounds; return its number of violations."""
    print(f"\n{face}: {len(reports)} rounds")
    reference = reports[0].rss
    rows = []
    for i, r in enumerate(reports, 1):
        drift = (r.rss - reference) / reference * 100
        rows.append(
            [
                i,
                f"{r.turns:,}",
                f"{sum(r.operations.values()):,}",
                f"{sum(r.refusals.values()):,}",
                f"{r.turns / r.seconds:,.0f}",
                f"{r.rss / 2**20:.1f}",
                f"{drift:+.1f}%",
                len(r.violations),
            ]
        )
    headers = ["round", "turns", "operations", "refused", "turns/s", "RSS MiB", "vs 1", "viol."]
    print_table(headers, rows)
    statuses = sum((r.statuses for r in reports), Counter())
    refusals = sum((r.refusals for r in reports), Counter())
    print("completions by status:", dict(statuses.most_common()))
    print("refusals by code:", dict(sorted(refusals.items())))
    later = [r.rss for r in reports[1:]] or [reference]
    spread = (max(later) - min(later)) / min(later) * 100
    print(f"RSS spread over rounds 2..{len(reports)}: {spread:.1f}% (goal: within 5%)")
    violations = [v for r in reports for v in r.violations]
    for line in violations[:20]:
        print("VIOLATION:", line)
    return len(violations)


def main(argv: list[str] | None = None) -> int:
    """Run the soak and print the figures; exit 1 on any violation."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faces", nargs="+", choices=("embedded", "wire"), default=None)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--turns", type=int, default=20_000, help="turns started per round")
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    quiet_logging()
    violations = 0
    for face in args.faces or ("embedded", "wire"):
        runner = soak_embedded if face == "embedded" else soak_wire
        violations += summarize(face, asyncio.run(runner(args)))
    print(f"\nviolations: {violations}")
    return 1 if violations else 0


if __name__ == "__main__":
    raise SystemExit(main())
