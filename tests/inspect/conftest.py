"""The browser the inspector's page tests drive: Debian's chromium through Playwright, no
browser download. Without chromium or Playwright the tests skip saying how to install them
(`make chromium`); with $CI set they fail instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _browser_or_skip() -> Any:
    missing = None
    if not os.path.exists(CHROMIUM):
        missing = "chromium is not installed: run `make chromium` (apt-get install chromium)"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing = "playwright is not installed: pip install -e '.[dev]'"
    if missing is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI needs the browser tests: {missing}")
        pytest.skip(f"SKIPPED LOUDLY, the inspector's browser tests did not run: {missing}")
    return sync_playwright


@pytest.fixture
def page() -> Iterator[Any]:
    """A fresh page of a headless chromium, 1400x900."""
    sync_playwright = _browser_or_skip()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=LAUNCH_ARGS
        )
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 900})
        finally:
            browser.close()
