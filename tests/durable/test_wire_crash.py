"""kill -9 a `turnloom serve --store` process with durable agents paused, start another,
attach each agent from a new connection and finish its turn (SPEC R-R4, R-R5), on SQLite and
on a real Redis (the second process could as well run on another machine).

Every turn completes once, as an uninterrupted run would (same replies, same call ids); a pause
deadline that passed while nothing ran has fired by the time anyone attaches; after a second
kill -9 the finished turns are found finished, not run again.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

import turnloom as tl
from tests.durable import scenario

REPO = Path(__file__).resolve().parents[2]
#: A wall-clock pause deadline (a separate process has no virtual clock): long enough that it
#: is still open when the server is killed, waited out before the restart.
DEADLINE_MS = 1500
PER_KIND = 34  # 3 kinds x 34: over 100 agents paused when the server is killed
ENV = {**os.environ, "PYTHONUNBUFFERED": "1"}

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """What `serve --store` takes: a fresh SQLite file, or a Redis database emptied before and
    after (database 5 of the session's redis-server)."""
    if request.param == "sqlite":
        yield str(tmp_path / "game.db")
        return
    import redis

    url = request.getfixturevalue("redis_url").rsplit("/", 1)[0] + "/5"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


@contextmanager
def serving(store: str) -> Iterator[tuple[subprocess.Popen[str], tuple[str, int]]]:
    """`python -m turnloom serve --mock --store STORE` on a free port; killed at the end."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnloom", "serve", "--port", "0", "--mock", "--store", store],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=ENV,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.fullmatch(r"turnloom: protocol v1 on (\S+):(\d+)\n", line)
        assert found, line
        yield proc, (found.group(1), int(found.group(2)))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def kill_9(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL


def graph(kind: str) -> tl.GraphDescription:
    g = tl.GraphDescription()
    if kind == "await":
        params = tl.ToolCallParams(
            tools=[scenario.LOOK],
            disposition=tl.ToolCallDisposition.AwaitResult,
            tool_called_exit="answer",
        )
        g.add_node("act", params)
    else:
        timeout = DEADLINE_MS if kind == "deadline" else 0
        g.add_node(
            "act",
            tl.PauseParams(
                default_exit="answer",
                pause_timeout_ms=timeout,
                timeout_exit="late" if timeout else "",
            ),
        )
        g.add_node("late", tl.CannedResponseParams(lines=["Too late."]))
    g.add_node("answer", tl.GenerateParams(system_prompt="Mira"))
    return g.set_start_node("act").set_default_model_name("mock")


def message(kind: str, index: int) -> str:
    if kind == "await":  # the mock model echoes it: a call of `look`
        return json.dumps({"name": "look", "arguments": {"what": f"door {index}"}})
    return f"hello {index}"


def finish(agent: tl.Agent, step: tl.Step, kind: str) -> tuple[list[str], tl.TurnResult]:
    """Finish a paused turn as the game would: (the call ids answered, the completion)."""
    assert step.pause is not None, step
    calls = step.pause.pending_calls
    if kind == "await":
        results = [(c.call_id, f"saw {c.arguments['what']}") for c in calls]
        return [c.call_id for c in calls], agent.resume(tool_results=results).final
    agent.change_params("answer", {"system_prompt": "Mira, trusted"})
    return [], agent.resume().final


def test_paused_durable_agents_survive_kill_9_and_finish_once_as_if_nothing_happened(
    store: str,
) -> None:
    db = store
    kinds = [kind for kind in ("await", "pause", "deadline") for _ in range(PER_KIND)]
    # agent id -> (kind, index, token, the pause it stood at)
    paused: dict[int, tuple[str, int, str, tl.PauseInfo]] = {}
    with serving(db) as (proc, address), tl.connect(*address) as remote:
        for index, kind in enumerate(kinds):
            agent = remote.create_agent(graph(kind), durable=True)
            step = agent.send_message(message(kind, index))
            assert step.pause is not None and agent.resume_token is not None
            paused[agent.agent_id] = (kind, index, agent.resume_token, step.pause)
        opened = time.monotonic()
        kill_9(proc)
    # Let the deadlines pass while nothing runs.
    time.sleep(max(0.0, opened + DEADLINE_MS / 1000 + 0.2 - time.monotonic()))

    finished: dict[int, tl.TurnResult] = {}
    with serving(db) as (proc, address), tl.connect(*address) as remote:
        for agent_id, (kind, index, token, pause) in paused.items():
            agent = remote.attach_agent(agent_id, token)
            step = agent.wait()
            if kind == "deadline":  # fired at restore, before anyone attached
                assert step.result is not None and step.result.text == "Too late."
                assert step.result.pause_count == 1
                finished[agent_id] = step.result
                continue
            assert step.pause == pause
            completions: list[tl.TurnResult] = []
            agent.set_on_turn_complete(completions.append)
            call_ids, result = finish(agent, step, kind)
            assert completions == [result] and result.status is tl.TurnStatus.SUCCESS
            # The same turn as an uninterrupted run of a fresh agent.
            straight = remote.create_agent(graph(kind))
            want_ids, want = finish(straight, straight.send_message(message(kind, index)), kind)
            assert (call_ids, result.text) == (want_ids, want.text)
            assert call_ids == [c.call_id for c in pause.pending_calls]
            with pytest.raises(tl.TurnloomError) as twice:
                agent.resume()
            assert twice.value.code == tl.ErrorCode.AgentNotPaused
            finished[agent_id] = result
        kill_9(proc)

    # Once more, killed after finishing: every turn is found done, none runs again.
    with serving(db) as (_proc, address), tl.connect(*address) as remote:
        for agent_id, (_kind, _index, token, _pause) in paused.items():
            step = remote.attach_agent(agent_id, token).wait()
            assert step.result == finished[agent_id]
