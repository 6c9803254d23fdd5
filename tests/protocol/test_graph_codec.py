"""Graphs and params as plain data: round trips, and refusals with the engine's own codes."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnloom as tl
from turnloom.engine.support.rejections import GraphCompilationFailed, InvalidParamValue
from turnloom.protocol.graph_codec import (
    NODE_TYPES,
    graph_from_wire,
    graph_to_wire,
    params_from_wire,
    to_plain,
)

names = st.text("abcdefgh", min_size=1, max_size=6)
texts = st.text(max_size=20)
sampling = st.builds(
    tl.SamplingParams,
    temperature=st.floats(0, 5),
    top_p=st.floats(0, 1),
    top_k=st.integers(0, 100),
    max_tokens=st.integers(1, 32768),
    seed=st.integers(-1, 2**31),
)
tools = st.lists(
    st.builds(
        tl.ToolDefinition,
        name=names,
        description=texts,
        parameters=st.lists(
            st.builds(
                tl.ToolParamDefinition,
                name=names,
                type=st.sampled_from(["string", "boolean", "integer", "number"]),
                description=texts,
            ),
            max_size=3,
        ),
    ),
    max_size=3,
)
params = st.one_of(
    st.builds(
        tl.PauseParams,
        pause_timeout_ms=st.integers(0, 10**6),
        default_exit=names,
        timeout_exit=names,
    ),
    st.builds(
        tl.GenerateParams,
        system_prompt=texts,
        template=texts,
        placement=st.sampled_from(tl.Placement),
        stream=st.booleans(),
        model_name=texts,
        sampling=sampling,
        default_exit=names,
    ),
    st.builds(
        tl.CannedResponseParams,
        lines=st.lists(texts, max_size=4),
        selection=st.sampled_from(tl.Selection),
    ),
    st.builds(
        tl.ToolCallParams,
        tools=tools,
        disposition=st.sampled_from(tl.ToolCallDisposition),
        mode=st.sampled_from(tl.ToolCallMode),
        acknowledge_text=texts,
        sampling=sampling,
        pause_timeout_ms=st.integers(0, 10**6),
        tool_called_exit=names,
    ),
)


@settings(deadline=None)  # a loaded machine is no failure of the codec
@given(st.lists(st.tuples(names, params), max_size=5), names, texts)
def test_any_graph_survives_the_wire(
    nodes: list[tuple[str, tl.NodeParams]], start: str, model: str
) -> None:
    graph = tl.GraphDescription()
    for name, p in nodes:
        graph.add_node(name, p)
    graph.set_start_node(start).set_default_model_name(model)
    data = msgpack.unpackb(msgpack.packb(graph_to_wire(graph)))
    back = graph_from_wire(data)
    assert back.nodes == graph.nodes
    assert (back.start_node, back.default_model_name) == (start, model)
    assert [type(p) for _, p in back.nodes] == [type(p) for _, p in graph.nodes]


def test_node_types_are_the_params_node_types() -> None:
    assert sorted(NODE_TYPES) == ["CannedResponse", "Generate", "Pause", "ToolCall"]
    node = graph_to_wire(tl.GraphDescription().add_node("g", tl.GenerateParams()))["nodes"][0]
    assert node["type"] == "Generate" and node["params"]["placement"] == "in_place_of_user"


@pytest.mark.parametrize(
    "data, rejection, words",
    [
        ({"nodes": {}}, GraphCompilationFailed, "'nodes' must be an array"),
        ({"nodes": [5]}, GraphCompilationFailed, "#0 must be a map"),
        ({"nodes": [{"name": "a", "type": "Teleport"}]}, GraphCompilationFailed, "Teleport"),
        ({"nodes": [{"name": "a", "type": "Pause", "params": 3}]}, GraphCompilationFailed, "map"),
        (
            {"nodes": [{"name": "a", "type": "Pause", "params": {"warp": 9}}]},
            InvalidParamValue,
            "'a': PauseParams has no field(s) ['warp']",
        ),
    ],
)
def test_bad_graph_data_is_refused_with_the_engines_rejections(
    data: dict[str, object], rejection: type[Exception], words: str
) -> None:
    with pytest.raises(rejection) as info:
        graph_from_wire(data)
    assert words in str(info.value)


def test_values_are_left_for_the_engine_to_check() -> None:
    # A wrong value is not refused here: the engine refuses it with its own code and words.
    p = params_from_wire("g", "Generate", {"placement": "sideways", "stream": "yes"})
    assert isinstance(p, tl.GenerateParams) and p.placement == "sideways"


def test_to_plain_flattens_params_enums_and_tuples() -> None:
    value = {"sampling": tl.SamplingParams(top_k=3), "placement": tl.Placement.InPlaceOfUser}
    plain = to_plain({**value, "lines": ("a", "b")})
    assert plain["sampling"]["top_k"] == 3 and plain["placement"] == "in_place_of_user"
    assert plain["lines"] == ["a", "b"]
