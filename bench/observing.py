"""What seeing inside costs a turn: the same turns with telemetry off, with OpenTelemetry spans
to a no-op provider (and, for scale, to the SDK with no exporter), and with the inspector page
served and one headless browser watching it.

A turn is Pause "gate" -> Generate "reply" on the mock model (so node, pause and generation
hooks all run), 100 agents reused round-robin on `AsyncEngine`, one turn at a time. Rounds
interleave the variants (`--repeat`, default 5) and the best round is shown with the median.
Targets: no-op OTel at most 5 % slower than off; inspector watching at most 15 %.
Run: `python -m bench.observing` (the browser row needs chromium: `make chromium`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import threading
import time
from collections.abc import Awaitable, Callable

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NoOpTracerProvider

import turnloom as tl
from turnloom.telemetry.tracing import TurnTracer

AGENTS = 100
CHROMIUM = "/usr/bin/chromium"
LIMITS = {"otel no-op provider": 1.05, "inspector + 1 browser": 1.15}


def _graph() -> tl.GraphDescription:
    g = tl.GraphDescription()
    g.add_node("gate", tl.PauseParams(default_exit="reply"))
    g.add_node("reply", tl.GenerateParams())
    return g.set_start_node("gate").set_default_model_name("mock")


async def _turns(engine: tl.AsyncEngine, agents: list[tl.AsyncAgent], turns: int) -> float:
    paused = answered = 0
    t0 = time.perf_counter()
    for i in range(turns):
        agent = agents[i % AGENTS]
        paused += (await agent.send_message("hi")).pause is not None
        answered += (await agent.resume()).final.text == "You said: hi"
    seconds = time.perf_counter() - t0
    assert paused == answered == turns, (paused, answered)
    return seconds


class _Browser:
    """One headless chromium on its own thread, watching the inspector page."""

    def __init__(self, url: str, agent_id: int) -> None:
        self.ready = threading.Event()
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(url, agent_id), daemon=True)
        self._thread.start()

    def _run(self, url: str, agent_id: int) -> None:
        from playwright.sync_api import sync_playwright

        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=CHROMIUM,
                    headless=True,
                    args=[
                        "--no-sandbox",
                        "--disable-gpu",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        "--no-first-run",
                    ],
                )
                page = browser.new_page()
                page.goto(url)
                page.locator(f'tr[data-agent-id="{agent_id}"]').click()
                page.wait_for_selector("#live.on")
                self.ready.set()
                while not self.stop.is_set():
                    page.wait_for_timeout(200)  # keeps the page's events flowing
                browser.close()
        except BaseException as error:  # said by the caller
            self.error = error
            self.ready.set()

    def close(self) -> None:
        self.stop.set()
        self._thread.join(30)


async def _engine(
    kind: str,
) -> tuple[tl.AsyncEngine, list[tl.AsyncAgent], Callable[[], Awaitable[None]]]:
    engine = tl.AsyncEngine(tl.MockModel("mock"))
    await engine.__aenter__()
    for observer in engine.observers:  # the default tracer: "off" means no observer at all
        engine.remove_observer(observer)
    browser = None
    if kind == "otel no-op provider":
        engine.add_observer(TurnTracer(NoOpTracerProvider()))
    elif kind == "otel SDK, no exporter":
        engine.add_observer(TurnTracer(TracerProvider()))
    agents = [await engine.create_agent(_graph()) for _ in range(AGENTS)]
    if kind == "inspector + 1 browser":
        inspector = await engine.inspect()
        browser = _Browser(inspector.url, agents[0].agent_id)
        await asyncio.to_thread(browser.ready.wait, 60)
        if browser.error is not None:
            raise browser.error

    async def close() -> None:
        if browser is not None:
            await asyncio.to_thread(browser.close)
        await engine.aclose()

    return engine, agents, close


async def _main(turns: int, repeat: int) -> None:
    kinds = ["off", "otel no-op provider", "otel SDK, no exporter"]
    if os.path.exists(CHROMIUM):
        kinds.append("inspector + 1 browser")
    else:
        print(f"(no {CHROMIUM}: the inspector row is left out; make chromium)")
    setups = {kind: await _engine(kind) for kind in kinds}
    rounds: dict[str, list[float]] = {kind: [] for kind in kinds}
    try:
        for engine, agents, _ in setups.values():  # warm-up
            await _turns(engine, agents, turns // 5)
        for _ in range(repeat):
            for kind, (engine, agents, _) in setups.items():
                rounds[kind].append(await _turns(engine, agents, turns) / turns * 1e6)
    finally:
        for _, _, close in setups.values():
            await close()
    best = {kind: min(times) for kind, times in rounds.items()}
    print(f"{turns} turns per round, best of {repeat} (median), us per turn:")
    failed = []
    for kind in kinds:
        ratio = best[kind] / best["off"]
        limit = LIMITS.get(kind)
        verdict = "" if limit is None else (" ok" if ratio <= limit else f" OVER {limit:.2f}x")
        if limit is not None and ratio > limit:
            failed.append(kind)
        print(
            f"  {kind:<24} {best[kind]:7.1f} ({statistics.median(rounds[kind]):7.1f})"
            f"  {ratio:5.3f}x off{verdict}"
        )
    if failed:
        print(f"over target: {', '.join(failed)}")


def main(argv: list[str] | None = None) -> None:
    """Print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    asyncio.run(_main(args.turns, args.repeat))


if __name__ == "__main__":
    main()
