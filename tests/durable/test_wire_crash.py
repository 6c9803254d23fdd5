"""kill -9 a `turnloom serve --store` process with durable agents paused, start another,
attach each agent from a new connection and finish its turn, on SQLite and
on a real Redis (the second process could as well run on another machine).

Every turn completes once, as an uninterrupted run would (same replies, same call ids); a pause
deadline that passed while nothing ran has fired by the time anyone attaches; after a second
kill -9 the finished turns are found finished, not run again.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import turnloom as tl
from tests.durable.served import DEADLINE_MS, finish, graph, kill_9, message, serving

PER_KIND = 34  # 3 kinds x 34: over 100 agents paused when the server is killed

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
