"""Continuous batching on the real default model: several agents' generations decoded together
in one context. They overlap instead of queueing, a short reply is not held back by a long one,
each streams its own text, a cancel or a time budget ends one generation and not the others,
grammar-constrained calls work per sequence, and more agents than sequences all get served.
Replies are a few tokens, greedy; nothing asserts a wall-clock duration, only the order in
which generations started, produced their first token and ended."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest

import turnloom as tl

MODEL = "gemma"


@pytest.fixture(scope="module")
def model() -> Iterator[tl.LlamaModel]:
    """The default model with its defaults: 4 sequences in one batched context."""
    llama = tl.LlamaModel.from_catalog(
        name=MODEL, n_ctx=512, tool_grammar=tl.models.ToolGrammar.REQUIRED
    ).load()
    yield llama
    llama.close()


def say(max_tokens: int, **sampling: int) -> tl.GraphDescription:
    return (
        tl.GraphDescription()
        .add_node(
            "say",
            tl.GenerateParams(
                sampling=tl.SamplingParams(
                    temperature=0.0, max_tokens=max_tokens, repeat_penalty=1, **sampling
                )
            ),
        )
        .set_start_node("say")
        .set_default_model_name(MODEL)
    )


COUNT = "Count from one to one hundred: one, two, three,"


async def turns(engine: tl.AsyncEngine, graphs: list[tl.GraphDescription], line: str) -> list:
    agents = [await engine.create_agent(g) for g in graphs]

    async def one(agent: tl.AsyncAgent) -> tl.TurnResult:
        step = await agent.send_message(line)
        result = step.final if step.final is not None else await agent.wait_complete()
        assert result is not None
        return result

    return await asyncio.gather(*(one(a) for a in agents))


def test_four_agents_answering_at_once_are_decoded_together(model: tl.LlamaModel) -> None:
    assert model._batcher is not None and model._batcher.sequences == 4

    async def scenario() -> list[tl.TurnResult]:
        async with tl.AsyncEngine(model) as engine:
            return await turns(engine, [say(12) for _ in range(4)], COUNT)

    results = asyncio.run(scenario())
    assert all(r.status is tl.TurnStatus.SUCCESS and r.text for r in results)
    stats = list(model.generations)[-4:]
    assert sorted(s.instance for s in stats) == [0, 1, 2, 3]  # one sequence each
    # Every generation produced its first token before any of them ended: they overlapped.
    first_tokens = [s.started + s.seconds_to_first_token for s in stats]
    ends = [s.started + s.seconds for s in stats]
    assert max(first_tokens) < min(ends)


def test_a_short_reply_is_not_held_back_by_a_long_one(model: tl.LlamaModel) -> None:
    async def scenario() -> None:
        async with tl.AsyncEngine(model) as engine:
            long, short = await engine.create_agent(say(60)), await engine.create_agent(say(3))
            running = asyncio.ensure_future(long.send_message(COUNT))
            await asyncio.sleep(0.3)  # the long reply is under way
            assert (await short.send_message("Hello")).final.status is tl.TurnStatus.SUCCESS
            assert not running.done()  # the short reply ended while the long one still ran
            assert (await running).final.status is tl.TurnStatus.SUCCESS

    asyncio.run(scenario())


def test_a_cancel_or_a_time_budget_ends_one_generation_not_the_others(
    model: tl.LlamaModel,
) -> None:
    async def scenario() -> tuple[list[tl.TurnResult], tl.TurnResult]:
        async with tl.AsyncEngine(model) as engine:
            victim = await engine.create_agent(say(200))
            timed = await engine.create_agent(say(200, timeout_ms=300))
            others = [await engine.create_agent(say(8)) for _ in range(2)]
            cancelled = asyncio.ensure_future(victim.send_message(COUNT))
            rest = asyncio.ensure_future(
                asyncio.gather(*(a.send_message(COUNT) for a in [timed, *others]))
            )
            await asyncio.sleep(0.5)
            assert await victim.cancel()
            steps = await rest
            result = (await cancelled).final
            return [s.final for s in steps], result

    (timed, *others), cancelled = asyncio.run(scenario())
    assert cancelled.status is tl.TurnStatus.CANCELLED
    assert (timed.status, timed.error_code) == (tl.TurnStatus.ERROR, tl.ErrorCode.InferenceTimeout)
    assert all(r.status is tl.TurnStatus.SUCCESS and r.text for r in others)
    assert model.wait_idle(30)


def test_grammar_constrained_calls_work_per_sequence(model: tl.LlamaModel) -> None:
    tool = tl.ToolDefinition(
        "check_stock",
        "Look up how many of an item the shop has.",
        [tl.ToolParamDefinition("item", "string", "The item.")],
    )
    graph = (
        tl.GraphDescription()
        .add_node(
            "act",
            # Greedy: a sampled item name can run past max_tokens and cut the call short.
            tl.ToolCallParams(
                tools=[tool],
                decision="generate",
                sampling=tl.SamplingParams(temperature=0.0, max_tokens=24),
            ),
        )
        .set_start_node("act")
        .set_default_model_name(MODEL)
    )

    async def scenario() -> list[tl.TurnResult]:
        async with tl.AsyncEngine(model) as engine:
            agents = [await engine.create_agent(graph, enable_diagnostics=True) for _ in range(3)]
            steps = await asyncio.gather(*(a.send_message("Do you have swords?") for a in agents))
            return [s.final for s in steps]

    for result in asyncio.run(scenario()):
        assert result.status is tl.TurnStatus.SUCCESS
        (node,) = result.debug_info["nodes"]
        texts = [s.text for s in list(model.generations)[-3:]]
        assert len(node["diagnostics"]["detected_calls"]) == 1, texts
        (call,) = node["diagnostics"]["detected_calls"]
        assert call["tool_name"] == "check_stock" and isinstance(call["arguments"]["item"], str)
    assert {s.grammar for s in list(model.generations)[-3:]} == {"required"}
    json.dumps([s.text for s in list(model.generations)[-3:]])  # texts are plain strings


def test_more_agents_than_sequences_are_all_served(model: tl.LlamaModel) -> None:
    async def scenario() -> list[tl.TurnResult]:
        async with tl.AsyncEngine(model) as engine:
            first = await turns(engine, [say(4) for _ in range(6)], "Hello there")
            return first

    results = asyncio.run(scenario())
    assert len(results) == 6 and all(r.status is tl.TurnStatus.SUCCESS for r in results)
    assert model.wait_idle(30)


def test_agents_of_several_wire_sessions_share_the_batching(model: tl.LlamaModel) -> None:
    from turnloom.server import BackgroundServer

    with BackgroundServer(lambda: tl.AsyncEngine(model)) as server:
        sessions = [tl.connect(*server.address) for _ in range(2)]
        try:
            agents = [s.create_agent(say(12)) for s in sessions]
            futures = [a.send_message_async(COUNT) for a in agents]
            results = [f.result(120).final for f in futures]
        finally:
            for session in sessions:
                session.close()
    assert all(r is not None and r.status is tl.TurnStatus.SUCCESS for r in results)
    stats = list(model.generations)[-2:]
    assert len({s.instance for s in stats}) == 2  # two sequences of the one context
    first_tokens = [s.started + s.seconds_to_first_token for s in stats]
    assert max(first_tokens) < min(s.started + s.seconds for s in stats)
