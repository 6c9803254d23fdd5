"""Graph building and validation at agent creation (docs/reference/graphs.md)."""

from __future__ import annotations

import pytest

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.core import MAX_STEPS_PER_TURN

Code = tl.ErrorCode


def create_error(engine: tl.Engine, graph: tl.GraphDescription) -> tl.TurnloomError:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph)
    return info.value


def test_fluent_builder_returns_the_graph() -> None:
    g = tl.GraphDescription()
    assert g.add_node("a", tl.PauseParams()) is g
    assert g.set_start_node("a") is g
    assert g.set_default_model_name("mock") is g


def test_empty_graph_is_3003(engine: tl.Engine) -> None:
    err = create_error(engine, tl.GraphDescription().set_default_model_name("mock"))
    assert err.code == Code.GraphCompilationFailed and "no nodes" in err.message


def test_duplicate_node_names_are_3003(engine: tl.Engine) -> None:
    g = graph_of(("a", tl.PauseParams()), ("a", tl.PauseParams()))
    err = create_error(engine, g)
    assert err.code == Code.GraphCompilationFailed and "'a'" in err.message


@pytest.mark.parametrize("start, words", [("", "no start node"), ("ghost", "'ghost'")])
def test_missing_or_unknown_start_is_3003(engine: tl.Engine, start: str, words: str) -> None:
    g = tl.GraphDescription().add_node("a", tl.PauseParams()).set_default_model_name("mock")
    err = create_error(engine, g.set_start_node(start))
    assert err.code == Code.GraphCompilationFailed and words in err.message


def test_model_node_without_any_model_is_3003(engine: tl.Engine) -> None:
    g = tl.GraphDescription().add_node("gen", tl.GenerateParams()).set_start_node("gen")
    err = create_error(engine, g)
    assert err.code == Code.GraphCompilationFailed
    assert "'gen'" in err.message and "model_name" in err.message


def test_model_that_is_not_loaded_is_3003(engine: tl.Engine) -> None:
    g = graph_of(("gen", tl.GenerateParams(model_name="llama-9000")))
    err = create_error(engine, g)
    assert err.code == Code.GraphCompilationFailed and "llama-9000" in err.message


def test_exit_to_missing_node_is_3008_naming_node_and_field(engine: tl.Engine) -> None:
    g = graph_of(("p", tl.PauseParams(timeout_exit="nowhere")))
    err = create_error(engine, g)
    assert err.code == Code.InvalidExitTarget
    assert "'p'" in err.message and "timeout_exit" in err.message and "nowhere" in err.message


def test_params_that_are_not_params_are_3003(engine: tl.Engine) -> None:
    g = graph_of(("p", {"default_exit": ""}))  # type: ignore[arg-type]
    assert create_error(engine, g).code == Code.GraphCompilationFailed


@pytest.mark.parametrize(
    "params, field",
    [
        (tl.PauseParams(pause_timeout_ms=-1), "pause_timeout_ms"),
        (tl.CannedResponseParams(lines=[]), "lines"),
        (tl.GenerateParams(sampling=tl.SamplingParams(temperature=-0.5)), "sampling.temperature"),
        (tl.GenerateParams(template="{{#open}}x{{/shut}}"), "template"),
        (tl.GenerateParams(placement="sideways"), "placement"),  # type: ignore[arg-type]
        (tl.CannedResponseParams(lines=["ok", 3]), "lines"),  # type: ignore[list-item]
    ],
)
def test_out_of_range_values_are_3007_at_creation(
    engine: tl.Engine, params: tl.NodeParams, field: str
) -> None:
    err = create_error(engine, graph_of(("n", params)))
    assert err.code == Code.InvalidParamValue
    assert "'n'" in err.message and f"'{field}'" in err.message


def test_graph_is_frozen_at_creation(engine: tl.Engine) -> None:
    lines = ["hello"]
    g = graph_of(("say", tl.CannedResponseParams(lines=lines)))
    agent = engine.create_agent(g)
    lines[0] = "changed after creation"
    assert agent.send_message("hi").result.text == "hello"  # type: ignore[union-attr]


def test_max_steps_must_be_positive(engine: tl.Engine) -> None:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph_of(("p", tl.PauseParams())), max_steps_per_turn=0)
    assert info.value.code == Code.InvalidParamValue


@pytest.mark.embedded_only  # the server refuses past its own, lower cap with 2003
def test_max_steps_is_bounded(engine: tl.Engine) -> None:
    graph = graph_of(("p", tl.PauseParams()))
    engine.create_agent(graph, max_steps_per_turn=MAX_STEPS_PER_TURN)
    with pytest.raises(tl.InvalidParamValue, match=f"1 … {MAX_STEPS_PER_TURN}, got 10000000"):
        engine.create_agent(graph, max_steps_per_turn=10**7)


@pytest.mark.embedded_only  # compares the engine's compiled graphs
def test_agents_from_an_unchanged_description_share_one_compiled_graph(engine: tl.Engine) -> None:
    g = graph_of(("say", tl.CannedResponseParams(lines=["v1"])))
    a, b = engine.create_agent(g), engine.create_agent(g)
    assert a._agent._core.graph is b._agent._core.graph  # type: ignore[attr-defined]
    g.nodes[0][1].lines[0] = "v2"  # edited in place after creation: recompiled, not reused
    c = engine.create_agent(g)
    assert c._agent._core.graph is not a._agent._core.graph  # type: ignore[attr-defined]
    assert a.send_message("x").result.text == "v1"  # type: ignore[union-attr]
    assert c.send_message("x").result.text == "v2"  # type: ignore[union-attr]
    g.nodes[0][1].lines = []  # now invalid: rejected although an earlier version compiled
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(g)
    assert info.value.code == Code.InvalidParamValue


@pytest.mark.parametrize(
    "params, field",
    [
        (tl.GenerateParams(sampling=tl.SamplingParams(temperature=float("nan"))), "temperature"),
        (tl.GenerateParams(sampling=tl.SamplingParams(top_p=float("inf"))), "top_p"),
        (tl.ToolCallParams(tools=[tl.ToolDefinition(name=7), tl.ToolDefinition(name=7)]), "name"),  # type: ignore[arg-type]
    ],
)
def test_non_finite_numbers_and_non_string_names_are_3007(
    engine: tl.Engine, params: tl.NodeParams, field: str
) -> None:
    err = create_error(engine, graph_of(("n", params)))
    assert err.code == Code.InvalidParamValue and field in err.message
