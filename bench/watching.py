"""One headless browser watching an inspector page, in its own process, for bench/turns.py.

The browser (Debian's chromium, driven by Playwright) runs in a child process so that neither
Playwright's client nor the page's rendering shares the benchmark's interpreter: the child
reads an inspector URL and an agent id per line on stdin, opens the page, chooses the agent,
waits until the page says it is live, and answers "ready". Its CPU time (the child, its
Playwright driver and every chromium process) is read with psutil so that the benchmark can
say what the browser cost the machine apart from the turns.

Run as `python -m bench.watching` by `Browser`; not a benchmark of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


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
        for line in sys.stdin:
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
