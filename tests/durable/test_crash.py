"""kill -9 with paused agents in a store, then a new process picks them up
(docs/reference/durability.md#crash-safety).

On SQLite, and on Redis (process A pauses and dies, process B finishes the turns).

A worker process (`crash_worker.py`) pauses agents of every kind (pending tool calls, plain
pauses, pauses with deadlines) after a first full turn each, and is killed with SIGKILL. A
second process opens the store later in (virtual) time and finishes every turn. What it reports
— replies, call ids, dialogs, turn ids — must equal a run that never crashed, with every
deadline that passed while nothing ran fired, and nothing lost or duplicated. Then randomized
trials: a worker churning turns is killed at random instants, again and again on one store.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
COUNT = 60
#: Randomized crash trials (the issue asks for >= 200: TURNLOOM_CRASH_TRIALS=200).
TRIALS = int(os.environ.get("TURNLOOM_CRASH_TRIALS", "8"))


def _run(*args: str, timeout: float = 60) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.durable.crash_worker", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def _pause_and_kill(db: str) -> list[dict[str, Any]]:
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.durable.crash_worker", "pause", str(db), str(COUNT), "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    lines = []
    try:
        for line in worker.stdout:
            if line.strip() == "ready":
                break
            lines.append(json.loads(line))
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    assert worker.returncode == -signal.SIGKILL
    return lines


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_paused_agents_survive_kill_9_and_finish_as_if_nothing_happened(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    straight = _run("straight", str(tmp_path / "straight.db"), str(COUNT), "0")
    if kind == "sqlite":
        store = str(tmp_path / "game.db")
    else:  # process A pauses on Redis and dies; process B picks the agents up
        import redis

        store = request.getfixturevalue("redis_url").rsplit("/", 1)[0] + "/15"
        redis.Redis.from_url(store).flushdb()
    paused = _pause_and_kill(store)
    assert len(paused) == COUNT
    # Later in time: every 5 s deadline passed while no process ran.
    resumed = _run("resume", store, str(COUNT), "100")
    assert resumed == straight
    assert [line["agent_id"] for line in resumed] == list(range(1, COUNT + 1))
    # The calls pending at the kill are the ones the new process answered.
    for pause, line in zip(paused, resumed, strict=True):
        answered = [m["tool_call_id"] for m in line["dialog"] if m["role"] == "tool"]
        assert set(pause["calls"]) <= set(answered)
    late = [line for line in resumed if line["text"] == "Too late."]
    assert len(late) == COUNT // 3  # each deadline fired once, on restore


def _churn_until_killed(
    db: str, seed: random.Random, phase: str = "churn"
) -> tuple[dict[str, Any], list[str]]:
    """Start a churn worker on `db`, let it play for a random while, SIGKILL it; its "up"
    state and the events it acknowledged."""
    worker = subprocess.Popen(
        [sys.executable, "-m", "tests.durable.crash_worker", phase, str(db), "4", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert worker.stdout is not None
    try:
        up = worker.stdout.readline()
        assert up.startswith("up "), up
        time.sleep(seed.uniform(0.0, 0.4))
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        events = worker.stdout.read().splitlines()
        worker.wait(timeout=30)
    return json.loads(up[3:]), events


def _check_restored(state: dict[str, Any], acked: list[str]) -> None:
    """Every agent's dialog is turns 0 … n-1, each once, with its reply; every completion the
    killed worker reported is in it; a reported pause is either completed or still paused."""
    for agent_id, agent in state.items():
        users = [m["content"] for m in agent["dialog"] if m["role"] == "user"]
        replies = [m["content"] for m in agent["dialog"] if m["role"] == "assistant"]
        assert users == [str(k) for k in range(len(users))], (agent_id, users)
        expected = [f"[] {2 * k + 1} messages, last '{k}'" for k in range(len(users))]
        assert replies == expected, (agent_id, replies)
        if agent["paused"] is not None:
            assert agent["paused"] == str(len(users)), (agent_id, agent["paused"], users)
        for event in acked:
            kind, who, k = event.split()
            if who != agent_id:
                continue
            done = int(k) < len(users)
            assert done or (kind == "P" and agent["paused"] == k), ("lost", event, agent)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
@pytest.mark.parametrize("phase", ["churn", "churn-off-loop"])
@pytest.mark.parametrize("kind", ["sqlite", "redis"])
def test_randomized_kill_9_loses_and_duplicates_nothing(
    tmp_path: Path, kind: str, phase: str, request: pytest.FixtureRequest
) -> None:
    """The dialogs grow long over the trials: their parts are appended, sealed, merged and
    written whole again (after each restart) while the kills land, on the loop and from the
    store's writing thread."""
    seed = random.Random(11)
    db = str(tmp_path / "churn.db")
    if kind == "redis":  # each restart on the same machine takes the dead worker's agents back
        import redis

        db = request.getfixturevalue("redis_url").rsplit("/", 1)[0] + "/14"
        redis.Redis.from_url(db).flushdb()
    acked: list[str] = []
    completions = 0
    for _ in range(TRIALS + 1):  # the last start only checks the last kill
        state, events = _churn_until_killed(db, seed, phase)
        _check_restored(state, acked)
        acked = [e for e in events if e[:2] in ("P ", "C ")]
        completions += sum(e.startswith("C ") for e in acked)
    assert completions > 0
