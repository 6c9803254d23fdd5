"""The `score` decision on the real embedded default model: the scoring primitive (trie,
greedy, prompt cache left usable) and a ToolCall node deciding with it by default.

Kept short: a handful of scoring passes, and generations of a few greedy tokens.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterator

import pytest

import turnloom as tl
from tests.helpers import OPEN_DOOR, SET_TORCH


@pytest.fixture(scope="module")
def model() -> Iterator[tl.LlamaModel]:
    """The catalog's default model, as shipped (its tool decision: score)."""
    llama = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="m", n_ctx=1024).load()
    yield llama
    llama.close()


def test_the_default_model_scores_and_a_user_gguf_generates(model: tl.LlamaModel) -> None:
    assert model.default_tool_decision() == "score"
    assert model.scoring_error() is None
    assert tl.models.CatalogEntry("x", "x.gguf").tool_decision == "generate"
    with pytest.raises(ValueError, match="tool_decision"):
        tl.models.CatalogEntry("x", "x.gguf", tool_decision="vote")


def test_scores_are_log_probabilities_where_choices_part(model: tl.LlamaModel) -> None:
    prompt = "Player: Open the north door.\nAction:"
    choices = [" open door\n", " talk\n", " open the door\n"]
    full = asyncio.run(model.score_choices(prompt, choices))
    again = asyncio.run(model.score_choices(prompt, choices))
    assert full == again  # the cached prompt gives the same logits
    assert all(s < 0 for s in full)
    # The three choices share their first token pairwise at most, so the probabilities of the
    # first tokens sum to at most 1.
    assert math.fsum(math.exp(s) for s in full) <= 1.0 + 1e-6
    greedy = asyncio.run(model.score_choices(prompt, choices, greedy=True))
    best = max(range(3), key=full.__getitem__)
    assert greedy[best] == pytest.approx(full[best], abs=1e-6)
    assert [math.isinf(s) for i, s in enumerate(greedy) if i != best] == [True, True]


def test_each_header_keeps_its_own_cached_prompt(model: tl.LlamaModel) -> None:
    from turnloom.engine.inference.llama.scoring import scoring_key

    tools = "Player: Open the north door.\nAction:"
    kinds = "Player: Good morning!\nKind: talk\nPlayer: Open the north door.\nKind:"
    assert scoring_key(tools) != scoring_key(kinds)
    first = asyncio.run(model.score_choices(tools, [" open door\n", " talk\n"]))
    asyncio.run(model.score_choices(kinds, [" request\n", " talk\n"]))
    prompts = model._instances[0].prompts
    # Asking the other header kept the first one's cells aside, and they come back.
    assert prompts.current == scoring_key(kinds) and scoring_key(tools) in prompts.agents()
    again = asyncio.run(model.score_choices(tools, [" open door\n", " talk\n"]))
    assert again == pytest.approx(first, abs=0.1)


def test_no_two_headers_share_a_cached_prompt() -> None:
    import zlib

    from turnloom.engine.inference.llama import scoring

    # Two headers whose first characters hash alike (as a hash of them once keyed them): each
    # its own key, so NPCs with these tools do not read each other's header out of the cache.
    examples = "Player: Good morning!\nAction: talk\n" * 7
    one, other = (f"Player: a header, number {n}.\nAction: talk\n{examples}" for n in (3, 109))
    assert zlib.crc32(one[:256].encode()) % 1024 == zlib.crc32(other[:256].encode()) % 1024
    assert scoring.scoring_key(one) != scoring.scoring_key(other)
    # What follows the header (the line, the dialog) does not change its key.
    assert scoring.scoring_key(one) == scoring.scoring_key(one + "Player: Hello!\nAction:")
    # Once every key is given, a new header takes the least recently used one's.
    keys = scoring._ScoringKeys()
    given = [keys.key(f"header {n}") for n in range(scoring._SCORING_KEYS)]
    assert len(set(given)) == scoring._SCORING_KEYS and max(given) == scoring.SCORING_AGENT
    keys.key("header 0")  # used again: "header 1" is now the least recent
    assert keys.key("a new header") == given[1]
    assert keys.key("header 0") == given[0]


def test_generation_after_scoring_is_unchanged(model: tl.LlamaModel) -> None:
    graph = (
        tl.GraphDescription()
        .add_node("say", tl.GenerateParams(sampling=tl.SamplingParams(temperature=0, max_tokens=4)))
        .set_start_node("say")
        .set_default_model_name("m")
    )
    with tl.Engine(model) as engine:
        before = engine.create_agent(graph).send_message("Tell me about the castle.").final.text
        asyncio.run(model.score_choices("Player: Hello!\nAction:", [" talk\n", " move\n"]))
        after = engine.create_agent(graph).send_message("Tell me about the castle.").final.text
    assert before == after and before


@pytest.mark.parametrize(
    "line, expected",
    [
        ("Open the north door.", ("open_door", {"door": "north"})),
        ("Put out the torch.", None),  # a decided call, whatever its value: see below
        ("What is your name?", None),
    ],
)
def test_a_toolcall_node_decides_by_score_by_default(
    model: tl.LlamaModel, line: str, expected: tuple[str, dict[str, object]] | None
) -> None:
    params = tl.ToolCallParams(
        tools=[OPEN_DOOR, SET_TORCH],
        disposition=tl.ToolCallDisposition.Notify,
        mode=tl.ToolCallMode.DetectOnly,
    )
    graph = tl.GraphDescription().add_node("act", params).set_start_node("act")
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph.set_default_model_name("m"), enable_diagnostics=True)
        calls: list[tl.ToolCallEvent] = []
        agent.set_on_tool_call_event(calls.append)
        result = agent.send_message(line).final
    assert result.debug_info is not None
    diagnostics = result.debug_info["nodes"][0]["diagnostics"]
    assert diagnostics["decision"] == "score"
    assert diagnostics["tokens_generated"] == 0
    got = [(c.tool_name, c.arguments) for c in calls]
    if line.startswith("Put out"):
        # Valid whatever the model prefers: the declared tool with a boolean.
        assert [name for name, _ in got] == ["set_torch"]
        assert isinstance(got[0][1]["lit"], bool)
    else:
        assert got == ([expected] if expected else [])


def test_the_scorer_keeps_its_own_cached_prompt_while_agents_generate(
    model: tl.LlamaModel,
) -> None:
    from turnloom.engine.inference.llama.scoring import scoring_key

    graph = (
        tl.GraphDescription()
        .add_node("say", tl.GenerateParams(sampling=tl.SamplingParams(temperature=0, max_tokens=2)))
        .set_start_node("say")
        .set_default_model_name("m")
    )
    prompt, choices = "Player: Hello there!\nAction:", [" talk\n", " open door\n"]
    first = asyncio.run(model.score_choices(prompt, choices, agent_id=7))
    with tl.Engine(model) as engine:
        engine.create_agent(graph).send_message("Tell me about the castle.")
    # The agent's generation did not overwrite the scorer's prompt (it is still the instance's,
    # or kept aside), and the next scoring, whichever agent asks, finds it again.
    prompts, key = model._instances[0].prompts, scoring_key(prompt)
    assert key < 0  # no agent's id
    assert prompts.current == key or key in prompts.agents()
    again = asyncio.run(model.score_choices(prompt, choices, agent_id=8))
    # Equal but for a few hundredths of a nat, which depend on how much was cached before.
    assert again == pytest.approx(first, abs=0.1)


def test_the_default_model_ships_its_request_boundaries_as_measured(model: tl.LlamaModel) -> None:
    from turnloom.engine.turns.nodes.score import request as sr

    shipped = model.measured(sr.MEASURED_AS)
    assert shipped is not None, (
        f"the catalog's default entry has no values under {sr.MEASURED_AS}: the request "
        "prompt or its lines changed; measure them again (score.request.measure_boundaries)"
    )
    fresh = asyncio.run(sr.measure_boundaries(model))
    # A few hundredths of a nat move with what was cached before each scoring, and about a
    # tenth with the CPU the model runs on (llama.cpp builds its kernels for the machine): the
    # long prompt's question boundary, shipped as measured on one machine (-0.12), measures
    # -0.02 to -0.05 on another. The boundaries of one prompt lie 0.18 to 0.76 apart, so values
    # measured for other prompts or lines, or put under the wrong kind, still fail.
    assert fresh == pytest.approx(dict(shipped), abs=0.15), f"measured now: {fresh}"


def test_a_count_of_things_calls_the_tool_that_hands_them_over(model: tl.LlamaModel) -> None:
    """ "torches" names set_torch, and alone the model prefers it; the count and its noun go to
    the tool that takes a count of items."""
    give = tl.ToolDefinition(
        "give_item",
        "Give the player some items.",
        [
            tl.ToolParamDefinition("item", "string", "The item, e.g. 'apple'."),
            tl.ToolParamDefinition("count", "integer", "How many."),
        ],
    )
    params = tl.ToolCallParams(
        tools=[OPEN_DOOR, give, SET_TORCH],
        disposition=tl.ToolCallDisposition.Notify,
        mode=tl.ToolCallMode.DetectOnly,
    )
    graph = tl.GraphDescription().add_node("act", params).set_start_node("act")
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph.set_default_model_name("m"))
        calls: list[tl.ToolCallEvent] = []
        agent.set_on_tool_call_event(calls.append)
        agent.send_message("Hand me 2 torches, please.")
    assert [(c.tool_name, c.arguments) for c in calls] == [
        ("give_item", {"item": "torches", "count": 2})
    ]


def test_a_flag_of_urgency_reads_how_urgent_the_line_sounds(model: tl.LlamaModel) -> None:
    """Asked as ``urgent=``, the model hardly reads the line; asked how it would answer, it
    tells a cry for help from an errand for later."""
    from turnloom.engine.turns.nodes.score.arguments import fill_arguments
    from turnloom.engine.turns.nodes.score.calibration import is_urgency, urgency_margin

    send = tl.ToolDefinition(
        "send_runner",
        "Send a runner with a message.",
        [
            tl.ToolParamDefinition("urgent", "boolean", "true if it cannot wait."),
            tl.ToolParamDefinition("message", "string", "What the runner says."),
        ],
    )
    assert is_urgency(send.parameters[0]) and not is_urgency(SET_TORCH.parameters[0])
    urgent = "Hurry, tell the miller his mill is on fire!"
    calm = "Whenever you have time, tell the smith my horse needs new shoes."
    assert asyncio.run(urgency_margin(model, urgent)) > 0 > asyncio.run(urgency_margin(model, calm))
    # The model answers "At once!" to "hurry", negated or not: a line that says it is not
    # urgent is read by its words.
    said = "No hurry, but the warden should know the roof leaks."
    values = [
        asyncio.run(fill_arguments(model, send, line, (), 0)).values
        for line in (urgent, calm, said)
    ]
    assert [v["urgent"] for v in values] == [True, False, False]
