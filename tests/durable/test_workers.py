"""Several `turnloom serve --store redis://` workers over one Redis server (docs/scaling.md),
as real processes, the way a studio runs them behind a TCP load balancer.

* A client moves its paused agents from one worker to another and finishes them there; while
  a session on one worker holds an agent, attaching it on another is 3004 (3001 without its
  token).
* Pause deadlines nobody holds fire exactly once across the workers, and a worker `kill -9`'d
  while holding paused agents loses them to the others: every turn completes exactly once.

"Exactly once" is read from the workers' own debug logs, where every completed turn is one
`turn.completed` record with its agent and turn id: a turn run by two workers would be logged
by both.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

import turnloom as tl
from tests.durable.served import Balancer, finish, graph, kill_9, message, serving

LEASE_MS = 1000
DEADLINE_MS = 1500
COMPLETED = re.compile(r"turn\.completed agent_id=(\d+) turn_id=(\d+) status=(\w+)")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")


@pytest.fixture
def redis_db(redis_url: str) -> Iterator[str]:
    """Database 7 of the session's redis-server, emptied before and after."""
    import redis

    url = redis_url.rsplit("/", 1)[0] + "/7"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


def workers(stack: ExitStack, store: str, count: int, logs: Path) -> list[tuple[object, tuple]]:
    """`count` workers on `store`, each logging at debug level to logs/worker-N.log."""
    started = []
    for index in range(count):
        log = stack.enter_context((logs / f"worker-{index}.log").open("w"))
        options = ("--lease-ms", str(LEASE_MS), "--log-level", "debug")
        started.append(stack.enter_context(serving(store, *options, log=log)))
    return started


def attach_when_free(remote: tl.RemoteEngine, agent_id: int, token: str) -> tl.Agent:
    """Attach, waiting while another worker still holds the agent (3004): one that is letting
    it go (its session just closed, or it is firing the agent's deadline)."""
    give_up = time.monotonic() + 10 * LEASE_MS / 1000
    while True:
        try:
            return remote.attach_agent(agent_id, token)
        except tl.TurnloomError as error:
            if error.code != tl.ErrorCode.AgentBusy or time.monotonic() > give_up:
                raise
            time.sleep(0.05)


def completions(logs: Path) -> Counter[tuple[int, int, str]]:
    """(agent id, turn id, status) of every turn completion any worker logged."""
    found: Counter[tuple[int, int, str]] = Counter()
    for path in logs.glob("worker-*.log"):
        for agent_id, turn_id, status in COMPLETED.findall(path.read_text()):
            found[int(agent_id), int(turn_id), status] += 1
    return found


def test_a_client_moves_its_paused_agents_from_one_worker_to_another(
    redis_db: str, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        (_, at_a), (_, at_b) = workers(stack, redis_db, 2, tmp_path)
        paused: dict[int, tuple[str, int, str, tl.PauseInfo]] = {}
        with tl.connect(*at_a) as remote:
            for index, kind in enumerate(["await", "pause", "deadline"] * 2):
                agent = remote.create_agent(graph(kind, 60_000), durable=True)
                step = agent.send_message(message(kind, index))
                assert step.pause is not None and agent.resume_token is not None
                paused[agent.agent_id] = (kind, index, agent.resume_token, step.pause)
            assert len(paused) == 6  # ids unique in the store
            with tl.connect(*at_b) as other:  # held by the session on A
                some_id, (_, _, token, _) = next(iter(paused.items()))
                with pytest.raises(tl.TurnloomError) as busy:
                    other.attach_agent(some_id, token)
                assert busy.value.code == tl.ErrorCode.AgentBusy
                with pytest.raises(tl.TurnloomError) as wrong:
                    other.attach_agent(some_id, "not-the-token")
                assert wrong.value.code == tl.ErrorCode.InvalidAgentId
        with tl.connect(*at_b) as remote:  # A's session ended: B takes them all
            for agent_id, (kind, index, token, pause) in paused.items():
                agent = attach_when_free(remote, agent_id, token)
                step = agent.wait()
                assert step.pause == pause
                call_ids, result = finish(agent, step, kind)
                assert result.status is tl.TurnStatus.SUCCESS
                straight = remote.create_agent(graph(kind, 60_000))
                want_ids, want = finish(straight, straight.send_message(message(kind, index)), kind)
                assert (call_ids, result.text) == (want_ids, want.text)
                with pytest.raises(tl.TurnloomError) as twice:
                    agent.resume()
                assert twice.value.code == tl.ErrorCode.AgentNotPaused


def test_every_turn_completes_exactly_once_across_workers_and_a_kill_9(
    redis_db: str, tmp_path: Path
) -> None:
    kinds = ["await", "pause", "deadline"] * 4
    with ExitStack() as stack:
        (proc_a, at_a), (_, at_b), (_, at_c) = workers(stack, redis_db, 3, tmp_path)
        tokens: dict[int, tuple[str, str, int]] = {}
        # Held by a live session on A when A is killed.
        doomed = tl.connect(*at_a)
        held: dict[int, tuple[str, tl.Step]] = {}
        for index, kind in enumerate(kinds):
            agent = doomed.create_agent(graph(kind, DEADLINE_MS), durable=True)
            held[agent.agent_id] = (kind, agent.send_message(message(kind, index)))
            tokens[agent.agent_id] = (agent.resume_token or "", kind, index)
        # Let go by B at once (its client leaves): their deadlines are swept by B or C.
        with tl.connect(*at_b) as leaving:
            for index in range(6):
                agent = leaving.create_agent(graph("deadline", DEADLINE_MS), durable=True)
                assert agent.send_message(message("deadline", index)).paused
                tokens[agent.agent_id] = (agent.resume_token or "", "deadline", index)
        kill_9(proc_a)
        doomed.close()  # its connection died with A

        with tl.connect(*at_c) as remote:
            for agent_id, (kind, step) in held.items():
                if kind == "deadline":
                    continue
                agent = attach_when_free(remote, agent_id, tokens[agent_id][0])
                now = agent.wait()
                assert now.pause == step.pause, (agent_id, now)
                assert finish(agent, now, kind)[1].status is tl.TurnStatus.SUCCESS
            time.sleep(DEADLINE_MS / 1000 + 0.5)  # every deadline has passed
            for agent_id, (token, kind, _) in tokens.items():
                final = attach_when_free(remote, agent_id, token).wait()
                assert final.result is not None, (agent_id, final)
                if kind == "deadline":
                    assert final.result.text == "Too late."

    counted = completions(tmp_path)
    assert sorted({agent_id for agent_id, _, _ in counted}) == sorted(tokens)
    assert set(counted.values()) == {1}, counted  # no turn completed twice
    assert {status for _, _, status in counted} == {"success"}


def test_reconnect_through_a_load_balancer_takes_the_agents_to_a_live_worker(
    redis_db: str, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        (proc_a, at_a), (_, at_b) = workers(stack, redis_db, 2, tmp_path)
        balancer = Balancer(at_a)
        stack.callback(balancer.close)
        remote = stack.enter_context(tl.connect(*balancer.address))
        agents = {}
        for index, kind in enumerate(["await", "pause", "deadline"]):
            agent = remote.create_agent(graph(kind, 60_000), durable=True)
            agents[agent.agent_id] = (agent, kind, agent.send_message(message(kind, index)))
        kill_9(proc_a)
        balancer.backend = at_b  # the balancer sends new connections to the live worker
        assert sorted(remote.reconnect(timeout=30)) == sorted(agents)
        for agent, kind, step in agents.values():  # the same objects carry on, on B
            now = agent.wait()
            assert now.pause == step.pause
            assert finish(agent, now, kind)[1].status is tl.TurnStatus.SUCCESS
