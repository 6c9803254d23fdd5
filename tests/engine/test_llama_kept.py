"""Each agent's cached prompt is kept while other agents use the same model: NPCs talked to in
turn re-read only what is new in their prompts, whether each keeps its own sequence of the
batched context or, with more NPCs than sequences, its cells wait in host memory; and a
restored cache is the very cache (greedy replies are the same as with nothing evicted). Real
default model; replies of a few tokens."""

from __future__ import annotations

import ctypes

import pytest

import turnloom as tl
from turnloom.engine.inference.llama.kept import KeptPrompts, _Kept


def npc_graph(i: int) -> tl.GraphDescription:
    system = f"You are villager {i} of Ashford, who knows the mill, the river and the harvest. " * 4
    return (
        tl.GraphDescription()
        .add_node(
            "answer",
            tl.GenerateParams(
                system_prompt=system, sampling=tl.SamplingParams(temperature=0, max_tokens=6)
            ),
        )
        .set_start_node("answer")
        .set_default_model_name("gemma")
    )


def talk_in_turn(model: tl.LlamaModel, rounds: int = 3) -> tuple[list[str], int, int]:
    """Four NPCs, each told a line in turn; their replies, and the prompt tokens and evaluated
    prompt tokens of every turn after each NPC's first."""
    texts, prompt, evaluated = [], 0, 0
    with tl.Engine(model) as engine:
        agents = [engine.create_agent(npc_graph(i)) for i in range(4)]
        for r in range(rounds):
            for agent in agents:
                result = agent.send_message(f"Round {r}: how is the harvest this year?").final
                assert result.status == tl.TurnStatus.SUCCESS, result
                texts.append(result.text)
                stats = model.generations[-1]
                if r:
                    prompt += stats.prompt_tokens
                    evaluated += stats.prompt_tokens_evaluated
    return texts, prompt, evaluated


def kept_bytes(model: tl.LlamaModel) -> int:
    """Host memory the model's kept prompts take."""
    keepers = [inst.prompts for inst in model._instances]
    if model._batcher is not None:
        keepers.append(model._batcher.prompts)
    return sum(k.kept_bytes for k in keepers)


@pytest.mark.parametrize(
    ("options", "in_host_memory"),
    [
        ({}, False),  # the default: 4 sequences, one per NPC
        ({"sequences": 2}, True),  # more NPCs than sequences: the idle ones wait in host memory
        ({"sequences": 1}, True),  # one context per instance: every switch goes to host memory
    ],
    ids=["4-sequences", "2-sequences", "1-sequence"],
)
def test_npcs_talked_to_in_turn_reread_only_what_is_new(
    options: dict[str, int], in_host_memory: bool
) -> None:
    model = tl.LlamaModel.from_catalog(name="gemma", n_ctx=1024, **options).load()
    forgetful = tl.LlamaModel.from_catalog(
        name="gemma", n_ctx=1024, kept_prompts_mb=0, **options
    ).load()
    try:
        texts, prompt, evaluated = talk_in_turn(model)
        assert evaluated <= 0.3 * prompt
        assert (kept_bytes(model) > 0) is in_host_memory
        forgotten, prompt, evaluated = talk_in_turn(forgetful)
        if in_host_memory:  # nothing kept: each NPC finds another's prompt and re-reads its own
            assert evaluated >= 0.9 * prompt
        assert kept_bytes(forgetful) == 0
        assert texts == forgotten
    finally:
        model.close()
        forgetful.close()


def _kept(size: int) -> _Kept:
    return _Kept((ctypes.c_uint8 * size)(), [])


def test_the_least_recently_used_prompts_go_first_within_the_cap() -> None:
    prompts = KeptPrompts(limit_bytes=250)
    for agent in (1, 2, 3):
        prompts._keep(agent, _kept(100))
    assert prompts.agents() == [2, 3] and prompts.kept_bytes == 200
    prompts._keep(2, _kept(120))  # kept again: now the most recent, at its new size
    assert prompts.agents() == [3, 2] and prompts.kept_bytes == 220
    prompts._keep(4, _kept(100))
    assert prompts.agents() == [2, 4] and prompts.kept_bytes == 220


def test_kept_prompts_mb_is_checked() -> None:
    with pytest.raises(ValueError, match="kept_prompts_mb"):
        tl.LlamaModel.from_catalog(kept_prompts_mb=-1)
