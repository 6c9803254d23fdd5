"""One headless browser watching an inspector page, in its own process, for bench/turns.py.

The browser (Debian's chromium, driven by Playwright) runs in a child process so that neither
Playwright's client nor the page's rendering shares the benchmark's interpreter: the child
reads an inspector URL and an agent id per line on stdin, opens the page, chooses the agent,
waits until the page says it is live, and answers "ready". Its CPU time (the child, its
Playwright driver and every chromium process) is read with psutil so that the benchmark can
say what the browser cost the machine apart from the turns.

The page's own split of that time comes from Chromium itself (the DevTools protocol's
`Performance.getMetrics`: seconds spent in script, style, layout, and all tasks of the page's
main thread), asked for with a `metrics` line.

Run as `python -m bench.watching` by `Browser`; not a benchmark of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

#: What a trace of the page records: its main thread's tasks and what they were (script,
#: style, layout, paint...), as DevTools' Performance panel shows them.
TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute"]


def trace_summary(path: str, top: int = 12) -> list[tuple[str, float]]:
    """From a trace written by `Browser.trace`: the page's main-thread time by what it was
    (milliseconds, most first): each complete event's time less that of the events inside it,
    on the renderer's main thread (`CrRendererMain`)."""
    loaded = json.loads(Path(path).read_text())
    events = loaded.get("traceEvents", []) if isinstance(loaded, dict) else loaded
    main = {
        (e["pid"], e["tid"])
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "thread_name"
        and e.get("args", {}).get("name") == "CrRendererMain"
    }
    spans = sorted(
        (e["ts"], -e["dur"], e["name"], (e["pid"], e["tid"]))
        for e in events
        if e.get("ph") == "X" and "dur" in e and (e["pid"], e["tid"]) in main
    )
    entries: list[list[Any]] = []  # [end, name, own time]
    stacks: dict[tuple[int, int], list[list[Any]]] = {}
    for start, minus_dur, name, thread in spans:
        end = start - minus_dur
        stack = stacks.setdefault(thread, [])
        while stack and stack[-1][0] <= start:
            stack.pop()
        if stack:  # nested: its time is not its parent's own
            stack[-1][2] -= min(end, stack[-1][0]) - start
        entry = [end, name, end - start]
        stack.append(entry)
        entries.append(entry)
    own: Counter[str] = Counter()
    for _end, name, left in entries:
        own[name] += left / 1000
    return own.most_common(top)


def available() -> str | None:
    """Why the browser row cannot run here, or None if it can."""
    if not os.path.exists(CHROMIUM):
        return f"no {CHROMIUM} (make chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "no playwright (pip install -e '.[dev]')"
    try:
        import psutil  # noqa: F401
    except ImportError:
        return "no psutil (pip install -e '.[bench]')"
    return None


class Browser:
    """The watching browser's process: `watch(url, agent_id)` points it at a page."""

    def __init__(self) -> None:
        import psutil

        self._process = subprocess.Popen(
            [sys.executable, "-m", "bench.watching"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        self._psutil = psutil.Process(self._process.pid)

    def watch(self, url: str, agent_id: int) -> None:
        """Open `url`, choose `agent_id`, and return once the page is live."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(f"{url} {agent_id}\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline().strip()
        if answer != "ready":
            raise RuntimeError(f"the watching browser did not get ready: {answer or 'it died'}")

    def page_metrics(self) -> dict[str, float]:
        """Chromium's own counters of the page being watched (`Performance.getMetrics`):
        `TaskDuration`, `ScriptDuration`, `LayoutDuration`, `RecalcStyleDuration` (seconds
        so far on the page's main thread), `LayoutCount`, `RecalcStyleCount`, ..."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write("metrics\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        found: dict[str, float] = json.loads(answer)
        return found

    def trace(self, path: str | None) -> None:
        """Start Chromium's own performance trace of the page (`path` None), or stop it and
        write it to `path` (open it in chrome://tracing or DevTools; `trace_summary` reads it)."""
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write("trace-start\n" if path is None else f"trace-stop {path}\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline().strip()
        if answer != "ok":
            raise RuntimeError(f"the watching browser could not trace: {answer or 'it died'}")

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the browser's processes have used so far."""
        import psutil

        total = 0.0
        for process in [self._psutil, *self._psutil.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def close(self) -> None:
        """Close the browser and its process."""
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


def _serve() -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS
        )
        page = browser.new_page()
        devtools = page.context.new_cdp_session(page)
        devtools.send("Performance.enable")
        for line in sys.stdin:
            if line.strip() == "metrics":
                found = devtools.send("Performance.getMetrics")["metrics"]
                print(json.dumps({m["name"]: m["value"] for m in found}), flush=True)
                continue
            if line.startswith("trace-"):
                if line.strip() == "trace-start":
                    browser.start_tracing(page=page, categories=TRACE_CATEGORIES)
                else:
                    Path(line.split(maxsplit=1)[1].strip()).write_bytes(browser.stop_tracing())
                print("ok", flush=True)
                continue
            url, agent_id = line.split()
            try:
                page.goto(url)
                page.locator(f'tr[data-agent-id="{agent_id}"]').click()
                page.wait_for_selector("#live.on")
                page.wait_for_selector("#detail:not([hidden])")
            except Exception as error:  # told to the parent, which stops
                print(f"{type(error).__name__}: {error}".replace("\n", " "), flush=True)
                break
            print("ready", flush=True)
        browser.close()


if __name__ == "__main__":
    _serve()
