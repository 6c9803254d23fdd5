"""Prometheus metrics: scraped over HTTP after a few mock turns, embedded and from `serve
--metrics` with a wire client, the values checked against what the turns did."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.request
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

import turnloom as tl
from tests.helpers import ENV, ready_address, running
from tests.telemetry.conftest import hermes, story_graph
from turnloom.engine.inference.mock import split_tokens
from turnloom.telemetry.endpoint import MetricsEndpoint


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape by (name, sorted labels)."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[sample.name, tuple(sorted(sample.labels.items()))] = sample.value
    return found


def test_a_scrape_after_a_few_turns_counts_them() -> None:
    clock = tl.VirtualClock()
    replies = [hermes("set_light", name="hall", on=True), "lit", "", "x"]
    model = tl.MockModel("mock", list(replies))

    async def scenario() -> str:
        async with tl.AsyncEngine(model, clock=clock) as engine:
            metrics = engine.metrics()
            endpoint = MetricsEndpoint(metrics)
            await endpoint.start("127.0.0.1", 0)
            try:
                agent = await engine.create_agent(story_graph())
                await agent.send_message("lights")  # paused at detect, awaiting the result
                clock.advance(2.0)
                await agent.resume("", [{"call_id": "c00000000", "result": "ok"}])
                clock.advance(1.0)  # paused at wait
                assert (await agent.resume()).final.status is tl.TurnStatus.SUCCESS
                await agent.send_message("again")  # no call this time: paused at wait
                clock.advance(4.0)
                assert await agent.cancel()
                for _ in range(2):  # refused: nothing is paused (3012)
                    try:
                        await agent.resume()
                    except tl.TurnloomError as error:
                        assert error.code == tl.ErrorCode.AgentNotPaused
                await agent.send_message("third")  # paused at wait, stays so
                url = endpoint.url
                return await asyncio.to_thread(lambda: urllib.request.urlopen(url).read().decode())
            finally:
                await endpoint.close()

    found = samples(asyncio.run(scenario()))
    assert found["turnloom_turns_total", (("status", "success"),)] == 1
    assert found["turnloom_turns_total", (("status", "cancelled"),)] == 1
    assert found["turnloom_turns_paused", ()] == 1
    assert found["turnloom_rejections_total", (("code", "3012"),)] == 2
    assert found["turnloom_pause_duration_seconds_count", ()] == 3  # 2 s, 1 s, 4 s
    assert found["turnloom_pause_duration_seconds_sum", ()] == 7.0
    # Turns took no virtual time outside their pauses: both in the lowest bucket.
    assert found["turnloom_turn_duration_seconds_count", ()] == 2
    assert found["turnloom_turn_duration_seconds_sum", ()] == 0.0
    # Generations: the call, "lit", "" and the third turn's "x", as the mock counts tokens.
    tokens = sum(len(split_tokens(reply)) for reply in replies)
    assert found["turnloom_generated_tokens_total", (("model", "mock"),)] == tokens
    assert found["turnloom_prompt_tokens_total", (("model", "mock"),)] > 0
    assert found["turnloom_generations_total", (("model", "mock"), ("outcome", "ok"))] == 4
    assert found["turnloom_time_to_first_token_seconds_count", (("model", "mock"),)] == 3


def test_serve_metrics_counts_sessions_and_turns_of_wire_clients() -> None:
    args = [sys.executable, "-m", "turnloom", "serve", "--mock", "--port", "0", "--metrics", "0"]
    with running(args) as proc:
        host, port = ready_address(proc)
        assert proc.stdout is not None
        metrics_line = proc.stdout.readline().strip()
        assert metrics_line.startswith("turnloom: metrics on http://127.0.0.1:")
        url = metrics_line.removeprefix("turnloom: metrics on ")
        with tl.connect(host, port) as remote:
            agent = remote.create_agent(
                tl.GraphDescription()
                .add_node("hi", tl.CannedResponseParams(lines=["hello"]))
                .set_start_node("hi")
                .set_default_model_name("mock")
            )
            assert agent.send_message("hey").final.status is tl.TurnStatus.SUCCESS
            try:
                agent.resume()
            except tl.TurnloomError as error:
                assert error.code == tl.ErrorCode.AgentNotPaused
            found = samples(urllib.request.urlopen(url).read().decode())
        assert found["turnloom_sessions_open", ()] == 1
        assert found["turnloom_turns_total", (("status", "success"),)] == 1
        assert found["turnloom_rejections_total", (("code", "3012"),)] == 1


def test_metrics_beyond_loopback_need_tls_and_a_key() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "turnloom", "serve", "--mock", "--metrics", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing --metrics on 0.0.0.0 without TLS" in done.stderr


def test_a_turn_restored_paused_from_the_store_counts_as_paused(tmp_path: Path) -> None:
    store = tmp_path / "game.db"
    graph = story_graph()
    with tl.Engine(tl.MockModel("mock", ["no call"]), store=store) as first:
        paused = first.create_agent(graph)
        assert paused.send_message("wait for me").pause.node_name == "wait"  # type: ignore[union-attr]
        first.create_agent(graph)  # idle
        assert samples(first.metrics().exposition().decode())["turnloom_turns_paused", ()] == 1
    with tl.Engine(tl.MockModel("mock", ["no call"]), store=store) as second:
        metrics = second.metrics()
        assert second.agent_ids() == [1, 2]
        found = samples(metrics.exposition().decode())
        assert found["turnloom_turns_paused", ()] == 1  # it paused in the first engine
        assert second.agent(paused.agent_id).resume().final.status is tl.TurnStatus.SUCCESS
        found = samples(metrics.exposition().decode())
        assert found["turnloom_turns_paused", ()] == 0
        assert found["turnloom_turns_total", (("status", "success"),)] == 1


def test_a_pause_begun_in_another_process_is_timed_from_its_snapshot(tmp_path: Path) -> None:
    store = tmp_path / "game.db"
    graph = story_graph()
    clock = tl.VirtualClock()
    with tl.Engine(tl.MockModel("mock", ["no call"]), store=store, clock=clock) as first:
        clock.advance(100)
        paused = first.create_agent(graph)
        assert paused.send_message("wait for me").pause.node_name == "wait"  # type: ignore[union-attr]
        snapshot = paused.snapshot()
    clock.advance(150)  # the game was away: the pause went on
    with tl.Engine(tl.MockModel("mock", ["no call"]), store=store, clock=clock) as second:
        metrics = second.metrics()  # after the agent came back from the store
        assert second.agent(paused.agent_id).resume().pause is None
        clock.advance(30)
        # One restored by the running engine, with the metrics already there.
        copy = second.restore(snapshot, durable=False)
        copy.cancel()
        found = samples(metrics.exposition().decode())
    assert found["turnloom_pause_duration_seconds_count", ()] == 2
    assert found["turnloom_pause_duration_seconds_sum", ()] == 150 + 180
    assert found["turnloom_pause_duration_seconds_bucket", (("le", "300.0"),)] == 2
    assert found["turnloom_pause_duration_seconds_bucket", (("le", "60.0"),)] == 0
