"""Sizes no game needs are refused before their items are looked at: nodes per graph (3003),
tools per ToolCall node, parameters per tool and lines per CannedResponse (3007), embedded and
over the wire, at creation and in change_params. The refusal names the limit and changes
nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.graph.builder import MAX_NODES
from turnloom.engine.graph.params import MAX_LINES, MAX_TOOL_PARAMETERS, MAX_TOOLS


def tool(name: str, parameters: int = 1) -> tl.ToolDefinition:
    params = [tl.ToolParamDefinition(name=f"p{i}") for i in range(parameters)]
    return tl.ToolDefinition(name=name, description="", parameters=params)


def canned_chain(count: int) -> tl.GraphDescription:
    graph = tl.GraphDescription()
    for i in range(count):
        graph.add_node(f"n{i}", tl.CannedResponseParams(lines=["x"]))
    return graph.set_start_node("n0")


def test_a_graph_of_the_largest_size_is_taken_one_more_node_is_3003(engine: tl.Engine) -> None:
    engine.create_agent(canned_chain(MAX_NODES))
    with pytest.raises(tl.GraphCompilationFailed, match=f"{MAX_NODES + 1} nodes, over the limit"):
        engine.create_agent(canned_chain(MAX_NODES + 1))


@pytest.mark.parametrize(
    ("params", "field", "limit"),
    [
        (lambda n: tl.ToolCallParams(tools=[tool(f"t{i}") for i in range(n)]), "tools", MAX_TOOLS),
        (
            lambda n: tl.ToolCallParams(tools=[tool("t", parameters=n)]),
            "tools[0].parameters",
            MAX_TOOL_PARAMETERS,
        ),
        (lambda n: tl.CannedResponseParams(lines=["x"] * n), "lines", MAX_LINES),
    ],
    ids=["tools", "parameters", "lines"],
)
def test_lists_past_their_limit_are_3007_naming_the_field(
    engine: tl.Engine, params: Callable[[int], tl.NodeParams], field: str, limit: int
) -> None:
    engine.create_agent(graph_of(("n", params(limit))))
    with pytest.raises(tl.InvalidParamValue) as refused:
        engine.create_agent(graph_of(("n", params(limit + 1))))
    assert f"field '{field}' must have at most {limit} item(s), got {limit + 1}" in str(
        refused.value
    )


def test_change_params_past_the_lines_limit_is_3007_and_changes_nothing(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph_of(("say", tl.CannedResponseParams(lines=["hi"]))))
    with pytest.raises(tl.InvalidParamValue, match=f"at most {MAX_LINES} item"):
        agent.change_params("say", {"lines": ["x"] * (MAX_LINES + 1)})
    assert agent.get_params("say") == tl.CannedResponseParams(lines=["hi"])
    assert agent.send_message("hello").final.text == "hi"


def test_an_oversized_list_is_never_walked() -> None:
    class Bomb:
        """An item that fails the test if anything copies, hashes or reprs it."""

        def __deepcopy__(self, memo: object) -> object:
            raise AssertionError("walked")

        def __repr__(self) -> str:
            raise AssertionError("walked")

        __hash__ = None  # type: ignore[assignment]

    lines = [Bomb()] * (MAX_LINES + 1)
    with tl.Engine(tl.MockModel("mock")) as engine, pytest.raises(tl.InvalidParamValue):
        engine.create_agent(graph_of(("say", tl.CannedResponseParams(lines=lines))))
