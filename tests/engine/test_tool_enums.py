"""A string tool parameter may declare its allowed values (`ToolParamDefinition.enum`, JSON
Schema's `enum`): the schema templates render lists them, the `required` grammar lets the
model write only one of them whole (and its bound counts the longest), `score` chooses among
them, and a bad list is refused 3007: a valid call has schema-valid arguments.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import turnloom as tl
from turnloom.engine.graph.params import MAX_ENUM_VALUES
from turnloom.engine.inference.llama import tool_call_grammar
from turnloom.engine.inference.llama.grammar import call_token_bound
from turnloom.engine.turns.nodes.score.decision import enum_values

HAND = tl.ToolParamDefinition("hand", "string", "Which hand.", enum=["left", "right"])
SORT = tl.ToolDefinition("sort_bag", "Sort the bag into one hand.", [HAND])


def test_the_schema_lists_the_values_of_a_string_only() -> None:
    schema = SORT.json_schema()["function"]["parameters"]["properties"]["hand"]
    assert schema == {"type": "string", "description": "Which hand.", "enum": ["left", "right"]}
    count = tl.ToolParamDefinition("count", "integer", "How many.", enum=["1"])
    assert "enum" not in count.json_schema()
    assert "enum" not in tl.ToolParamDefinition("any", "string", "Free text.").json_schema()


def test_the_grammar_allows_exactly_the_values_and_its_bound_holds_the_longest() -> None:
    long_value = "the-very-long-value-" * 5
    wide = tl.ToolParamDefinition("hand", "string", "", enum=["l", long_value])
    tool = tl.ToolDefinition("sort_bag", "Sort.", [wide]).json_schema()
    grammar = tool_call_grammar([tool], tl.models.ToolCallFamily.HERMES, [2]).gbnf
    assert '"\\"l\\""' in grammar and f'"\\"{long_value}\\""' in grammar
    assert "minLength" not in grammar
    # The string cap (2 characters) does not cut the long value: its bytes are counted whole.
    bound = call_token_bound([tool], tl.models.ToolCallFamily.HERMES, [2])
    assert bound > len(long_value) + 2


@pytest.mark.parametrize(
    ("values", "words"),
    [
        (["left", ""], "item 1 must not be empty"),
        (["left", "left"], "item 1 repeats"),
        ([f"v{i}" for i in range(MAX_ENUM_VALUES + 1)], f"at most {MAX_ENUM_VALUES}"),
        (["left", 3], "item 1 must be str"),
    ],
)
def test_a_bad_list_of_values_is_3007(values: list[object], words: str) -> None:
    bad = tl.ToolParamDefinition("hand", "string", "", enum=values)  # type: ignore[arg-type]
    graph = (
        tl.GraphDescription()
        .add_node("act", tl.ToolCallParams(tools=[tl.ToolDefinition("sort_bag", "", [bad])]))
        .set_start_node("act")
        .set_default_model_name("mock")
    )
    with tl.Engine(tl.MockModel("mock")) as engine, pytest.raises(tl.TurnloomError) as refused:
        engine.create_agent(graph)
    assert refused.value.code == tl.ErrorCode.InvalidParamValue
    assert words in refused.value.message and "enum" in refused.value.message


def test_score_chooses_among_the_declared_values_before_the_description() -> None:
    described = tl.ToolParamDefinition("hand", "string", "Which hand, one of: up, down.")
    assert enum_values(described) == ("up", "down")
    declared = tl.ToolParamDefinition(
        "hand", "string", "Which hand, one of: up, down.", enum=["left", "right"]
    )
    assert enum_values(declared) == ("left", "right")


@pytest.fixture(scope="module")
def model() -> Iterator[tl.LlamaModel]:
    """The catalog's default model with its own defaults (the `required` grammar)."""
    llama = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="gemma", n_ctx=512).load()
    assert llama.tool_grammar is tl.models.ToolGrammar.REQUIRED
    yield llama
    llama.close()


@pytest.mark.parametrize("decision", ["generate", "score"])
def test_the_real_model_writes_only_a_declared_value(model: tl.LlamaModel, decision: str) -> None:
    """The line that made the model write `auto_sort_on` for a two-value hand before."""
    params = tl.ToolCallParams(
        tools=[SORT],
        disposition=tl.ToolCallDisposition.AwaitResult,
        system_prompt="Use a tool for what the player asks.",
        decision=decision,
        sampling=tl.SamplingParams(temperature=0.0, max_tokens=24),
    )
    graph = (
        tl.GraphDescription()
        .add_node("call", params)
        .set_start_node("call")
        .set_default_model_name("gemma")
    )
    with tl.Engine(model) as engine:
        step = engine.create_agent(graph).send_message("Auto-sort my bag, please.")
    assert step.pause is not None, step
    (call,) = step.pause.pending_calls
    assert call.arguments["hand"] in ("left", "right"), call
