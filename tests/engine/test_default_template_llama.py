"""The default model's tool instruction (gemma3-tools.jinja) on the real model: with the grammar
off, a line the bench once saw parroted as the template's placeholder call ("Walk north." ->
``{"name": "<tool name>", ...}``) now ends as a clean no-call or a valid call.

Kept short: one greedy generation per grammar mode.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import turnloom as tl

MOVE = tl.ToolDefinition(
    name="move",
    description="Walk the party in a direction.",
    parameters=[
        tl.ToolParamDefinition("direction", "string", "Where to go, one of: north, south.")
    ],
)


@pytest.fixture(scope="module")
def model() -> Iterator[tl.LlamaModel]:
    llama = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="m", n_ctx=1024).load()
    yield llama
    llama.close()


@pytest.mark.parametrize("grammar", [tl.models.ToolGrammar.OFF, tl.models.ToolGrammar.LAZY])
def test_a_free_reply_is_a_clean_no_call_or_a_valid_call(
    model: tl.LlamaModel, grammar: tl.models.ToolGrammar
) -> None:
    model.tool_grammar = grammar
    params = tl.ToolCallParams(
        tools=[MOVE],
        disposition=tl.ToolCallDisposition.Notify,
        mode=tl.ToolCallMode.DetectOnly,
        decision="generate",
        sampling=tl.SamplingParams(temperature=0.0, max_tokens=48),
    )
    graph = tl.GraphDescription().add_node("act", params).set_start_node("act")
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph.set_default_model_name("m"), enable_diagnostics=True)
        result = agent.send_message("Walk north.").final
    assert result.debug_info is not None
    diagnostics = result.debug_info["nodes"][0]["diagnostics"]
    assert diagnostics["decision"] == "generate"
    assert not diagnostics["malformed_calls"] and not diagnostics["rejected_calls"]
    for call in diagnostics["detected_calls"]:
        assert call["tool_name"] == "move" and set(call["arguments"]) == {"direction"}
    assert "<tool" not in result.text  # no call markup reaches the player
