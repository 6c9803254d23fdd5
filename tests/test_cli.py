"""`python -m turnloom serve`: loopback by default (R-W4), serves, shuts down on a signal."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from typing import Any

import pytest

import turnloom as tl
import turnloom.__main__ as cli
from turnloom.server import ServerLimits


def test_serve_listens_on_loopback_serves_and_stops_on_sigint() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnloom", "serve", "--port", "0", "--mock", "--log-level=error"],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"protocol v1 on (\S+):(\d+)", line)
        assert found, line
        host, port = found.group(1), int(found.group(2))
        assert host == "127.0.0.1"
        graph = (
            tl.GraphDescription()
            .add_node("gate", tl.PauseParams(default_exit="say"))
            .add_node("say", tl.CannedResponseParams(lines=["served"]))
            .set_start_node("gate")
        )
        with tl.connect(host, port) as remote:
            agent = remote.create_agent(graph)
            assert agent.send_message("hi").paused
            assert agent.resume().result.text == "served"  # type: ignore[union-attr]
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_serve_parses_its_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_serve(host: str, port: int, limits: ServerLimits, *, mock: bool = False) -> int:
        seen.update(host=host, port=port, limits=limits, mock=mock)
        return 0

    monkeypatch.setattr(cli, "serve", fake_serve)
    monkeypatch.setattr(cli, "_quiet_logs", lambda level: None)  # keep the test's logging
    assert cli.main(["serve"]) == 0
    assert (seen["host"], seen["port"], seen["mock"]) == ("127.0.0.1", 7411, False)
    assert cli.main(["serve", "--host", "0.0.0.0", "--max-agents", "3", "--mock"]) == 0
    assert (seen["host"], seen["limits"].max_agents_per_session, seen["mock"]) == (
        "0.0.0.0",
        3,
        True,
    )
