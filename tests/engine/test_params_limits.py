"""Every param value is bounded, typed before it is looked into, and quoted briefly
(docs/reference/graphs.md#param-values): numbers past their bounds, values nested thousands
deep and megabyte strings are 3007 (or 3003/3006 where those apply) and change nothing."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import graph_of, nested
from turnloom.engine.graph.fields import param_fields
from turnloom.engine.graph.model_params import MAX_SEED, MAX_TIMEOUT_MS, MAX_TOP_K
from turnloom.engine.graph.params import validate_params
from turnloom.engine.params_doc import DOCUMENTED
from turnloom.engine.support.rejections import GraphCompilationFailed, InvalidParamValue
from turnloom.protocol.graph_codec import graph_from_wire, params_from_wire

Code = tl.ErrorCode
HUGE = 10**400  # an int no float can hold


DEEP = {
    "list": nested(leaf="x"),
    "dict": nested(kind=dict, leaf="x"),
    "tuple": nested(kind=tuple, leaf="x"),
}

#: The numeric fields of every class the engine validates.
CLASSES = list(DOCUMENTED)  # every class the params reference documents
NUMERIC = [(cls, f) for cls in CLASSES for f, tp in param_fields(cls) if tp in (int, float)]


def create_error(engine: tl.Engine, params: tl.NodeParams) -> tl.TurnloomError:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph_of(("n", params)))
    return info.value


def in_node(cls: type, **values: Any) -> tl.NodeParams:
    """Node params that carry `values` on a `cls` (a node class, or SamplingParams)."""
    if cls is tl.SamplingParams:
        return tl.GenerateParams(sampling=tl.SamplingParams(**values))
    if cls is tl.HistoryParams:
        return tl.GenerateParams(history=tl.HistoryParams(**values))
    if cls is tl.ToolCallParams:
        return tl.ToolCallParams(tools=[tl.ToolDefinition(name="t")], **values)
    return typing.cast("tl.NodeParams", cls(**values))


@pytest.mark.parametrize("cls, field", NUMERIC, ids=[f"{c.__name__}.{f.name}" for c, f in NUMERIC])
def test_every_numeric_field_has_both_bounds(cls: type, field: dataclasses.Field[Any]) -> None:
    # An unbounded number passes validation and overflows later, inside the turn.
    assert field.metadata["min"] is not None and field.metadata["max"] is not None


NODE_NUMERIC = [(c, f.name, f.metadata["max"]) for c, f in NUMERIC if c is not tl.EngineSettings]


@pytest.mark.parametrize("cls, name, high", NODE_NUMERIC, ids=[n for _, n, _ in NODE_NUMERIC])
@pytest.mark.parametrize("over", ["just", "huge"])
def test_a_number_past_its_bound_is_3007_at_creation(
    engine: tl.Engine, engine_kind: str, cls: type, name: str, high: float, over: str
) -> None:
    value = HUGE if over == "huge" else (high + 1 if isinstance(high, int) else high + 0.5)
    err = create_error(engine, in_node(cls, **{name: value}))
    assert err.code == Code.InvalidParamValue
    if over == "huge" and engine_kind == "remote":
        return  # msgpack holds no such int: the client refuses to send it, with 3007 too
    assert f"{name}' must be <= {high}" in err.message and len(err.message) < 300


@pytest.mark.parametrize("cls, name, high", NODE_NUMERIC, ids=[n for _, n, _ in NODE_NUMERIC])
def test_a_number_at_its_bound_is_accepted(
    engine: tl.Engine, cls: type, name: str, high: float
) -> None:
    engine.create_agent(graph_of(("n", in_node(cls, **{name: high}))))


@pytest.mark.parametrize("name", ["temperature", "top_p", "min_p", "repeat_penalty"])
def test_a_huge_int_for_a_float_field_is_3007_not_overflow_error(
    engine: tl.Engine, engine_kind: str, name: str
) -> None:
    err = create_error(engine, in_node(tl.SamplingParams, **{name: -HUGE}))
    assert err.code == Code.InvalidParamValue
    if engine_kind == "embedded":  # the wire client refuses to encode it (3007 as well)
        assert f"sampling.{name}' must be >= 0.0" in err.message


# Past the bound but within msgpack's 64 bits, so the remote engine carries them to the server.
@pytest.mark.parametrize(
    "name, value",
    [("seed", 2**32 - 1), ("seed", 2**63), ("top_k", 10**18), ("timeout_ms", 2**63 - 1)],
    ids=["seed-uint32-max", "seed-2**63", "top_k", "timeout_ms"],
)
def test_change_params_refuses_a_sampling_number_past_its_bound(
    engine: tl.Engine, mock_model: tl.MockModel, name: str, value: int
) -> None:
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams())))
    before = agent.get_params("gen")
    with pytest.raises(tl.TurnloomError) as info:
        agent.change_params("gen", {"sampling": {name: value}})
    assert info.value.code == Code.InvalidParamValue and f"sampling.{name}'" in info.value.message
    assert agent.get_params("gen") == before
    mock_model.push("fine")
    assert agent.send_message("hi").result.status == tl.TurnStatus.SUCCESS  # type: ignore[union-attr]


def test_the_longest_pause_timeout_still_times_out(
    engine: tl.Engine, clock: tl.VirtualClock
) -> None:
    gate = tl.PauseParams(pause_timeout_ms=MAX_TIMEOUT_MS, timeout_exit="late")
    agent = engine.create_agent(graph_of(("gate", gate), ("late", tl.CannedResponseParams(["z"]))))
    agent.send_message("hi")
    clock.advance((MAX_TIMEOUT_MS - 1) / 1000)
    assert agent.wait().paused
    clock.advance(0.002)
    assert agent.wait_complete().text == "z"


def test_the_bounds_are_the_documented_ones() -> None:
    assert (MAX_TIMEOUT_MS, MAX_SEED, MAX_TOP_K) == (2**31 - 1, 2**32 - 2, 1_000_000)


# --- EngineSettings ------------------------------------------------------------------------


SETTINGS = [f.name for f, _ in param_fields(tl.EngineSettings)]


@pytest.mark.parametrize("name", SETTINGS)
@pytest.mark.parametrize(
    "value", ["15000", 1.5, True, None, nested()], ids=["str", "float", "bool", "None", "deep"]
)
def test_a_setting_of_the_wrong_type_is_a_type_error_naming_it(name: str, value: Any) -> None:
    with pytest.raises(TypeError, match=f"EngineSettings: field '{name}' must be int"):
        tl.EngineSettings(**{name: value})


@pytest.mark.parametrize("name", SETTINGS)
@pytest.mark.parametrize("value", [-1, 2**31, HUGE])
def test_a_setting_out_of_range_is_a_value_error_naming_it(name: str, value: int) -> None:
    with pytest.raises(ValueError, match=f"EngineSettings: field '{name}' must be"):
        tl.EngineSettings(**{name: value})


def test_settings_in_range_are_kept_and_an_engine_takes_only_settings() -> None:
    settings = tl.EngineSettings(pause_stall_warn_ms=0, max_tool_result_bytes=2**31 - 1)
    assert (settings.pause_stall_warn_ms, settings.max_tool_result_bytes) == (0, 2**31 - 1)
    with pytest.raises(TypeError, match="settings must be an EngineSettings, got dict"):
        tl.Engine(tl.MockModel("mock"), settings={"pause_stall_warn_ms": 1})  # type: ignore[arg-type]


# --- values nested thousands deep, megabyte strings ----------------------------------------


def deep_params(field: str, value: Any) -> tl.NodeParams:
    return {
        "lines": lambda: tl.CannedResponseParams(lines=value),
        "lines[1]": lambda: tl.CannedResponseParams(lines=["ok", value]),
        "system_prompt": lambda: tl.GenerateParams(system_prompt=value),
        "template": lambda: tl.GenerateParams(template=value),
        "placement": lambda: tl.GenerateParams(placement=value),
        "model_name": lambda: tl.GenerateParams(model_name=value),
        "sampling": lambda: tl.GenerateParams(sampling=value),
        "sampling.seed": lambda: tl.GenerateParams(sampling=tl.SamplingParams(seed=value)),
        "tools": lambda: tl.ToolCallParams(tools=value),
        "parameters": lambda: tl.ToolCallParams(
            tools=[tl.ToolDefinition(name="t", parameters=value)]
        ),
    }[field]()


DEEP_FIELDS = [
    "lines",
    "lines[1]",
    "system_prompt",
    "template",
    "placement",
    "model_name",
    "sampling",
    "sampling.seed",
    "tools",
    "parameters",
]


@pytest.mark.embedded_only  # the wire client cannot encode such a value in the first place
@pytest.mark.parametrize("kind", DEEP)
@pytest.mark.parametrize("field", DEEP_FIELDS)
def test_a_deeply_nested_value_is_3007_at_creation(
    engine: tl.Engine, field: str, kind: str
) -> None:
    err = create_error(engine, deep_params(field, DEEP[kind]))
    assert err.code == Code.InvalidParamValue
    assert f"{field.split('[')[0]}' " in err.message and len(err.message) < 300


@pytest.mark.embedded_only
@pytest.mark.parametrize("as_mapping", [True, False], ids=["mapping", "params"])
@pytest.mark.parametrize("kind", DEEP)
@pytest.mark.parametrize(
    "field, code",
    [
        ("system_prompt", Code.InvalidParamValue),
        ("template", Code.InvalidParamValue),
        ("placement", Code.InvalidParamValue),
        ("model_name", Code.ParamNotMutable),
        ("default_exit", Code.ParamNotMutable),
    ],
)
def test_a_deeply_nested_value_in_change_params_is_refused_and_changes_nothing(
    engine: tl.Engine, field: str, code: tl.ErrorCode, kind: str, as_mapping: bool
) -> None:
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams())))
    before = agent.get_params("gen")
    proposed = agent.get_params("gen")
    setattr(proposed, field, DEEP[kind])
    with pytest.raises(tl.TurnloomError) as info:
        agent.change_params("gen", {field: DEEP[kind]} if as_mapping else proposed)
    assert info.value.code == code and f"'{field}'" in info.value.message
    assert len(info.value.message) < 400
    assert agent.get_params("gen") == before


@pytest.mark.embedded_only
@pytest.mark.parametrize("kind", DEEP)
def test_a_deeply_nested_sampling_value_in_change_params_is_3007(
    engine: tl.Engine, kind: str
) -> None:
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams())))
    before = agent.get_params("gen")
    with pytest.raises(tl.TurnloomError) as info:
        agent.change_params("gen", {"sampling": {"temperature": DEEP[kind]}})
    assert info.value.code == Code.InvalidParamValue
    assert "'sampling.temperature' must be float" in info.value.message
    assert agent.get_params("gen") == before


@pytest.mark.embedded_only
@pytest.mark.parametrize("kind", DEEP)
@pytest.mark.parametrize("where", ["node name", "start node", "default model"])
def test_a_deeply_nested_builder_name_is_3003(engine: tl.Engine, where: str, kind: str) -> None:
    g = tl.GraphDescription()
    g.add_node(DEEP[kind] if where == "node name" else "a", tl.PauseParams())
    g.set_start_node(DEEP[kind] if where == "start node" else "a")
    g.set_default_model_name(DEEP[kind] if where == "default model" else "mock")
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(g)
    assert info.value.code == Code.GraphCompilationFailed
    assert where.split()[-1] in info.value.message and len(info.value.message) < 300


MEGA = "m" * 1_000_000


@pytest.mark.parametrize(
    "params, field",
    [
        (tl.GenerateParams(placement=MEGA), "placement"),  # type: ignore[arg-type]
        (tl.GenerateParams(template="{{" + MEGA + "}}"), "template"),
        (tl.GenerateParams(template="{{#human_message}}{{/" + MEGA + "}}"), "template"),
        (tl.PauseParams(default_exit=MEGA), "default_exit"),
        (
            tl.ToolCallParams(
                tools=[
                    tl.ToolDefinition(
                        name="t", parameters=[tl.ToolParamDefinition(name="p", type=MEGA)]
                    )
                ]
            ),
            "type",
        ),
    ],
)
def test_a_megabyte_value_is_quoted_briefly(
    engine: tl.Engine, params: tl.NodeParams, field: str
) -> None:
    err = create_error(engine, params)
    assert err.code in (Code.InvalidParamValue, Code.InvalidExitTarget)
    assert field in err.message and len(err.message) < 400


def test_a_megabyte_structural_change_is_quoted_briefly(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams())))
    with pytest.raises(tl.TurnloomError) as info:
        agent.change_params("gen", {"model_name": MEGA})
    assert info.value.code == Code.ParamNotMutable and len(info.value.message) < 400


@pytest.mark.parametrize("kind", DEEP)
def test_the_graph_codec_quotes_deep_wire_values_briefly(kind: str) -> None:
    with pytest.raises(GraphCompilationFailed) as failed:
        params_from_wire(DEEP[kind], DEEP[kind], {})
    assert "unknown node type" in failed.value.message and len(failed.value.message) < 300
    with pytest.raises(InvalidParamValue) as invalid:
        params_from_wire(DEEP[kind], "Pause", {DEEP["tuple"]: 1, "default_exit": "x"})
    assert "field names must be strings, got tuple" in invalid.value.message
    assert len(invalid.value.message) < 300
    node = {"name": "n", "type": "CannedResponse", "params": {"lines": DEEP[kind]}}
    (name, params), *_ = graph_from_wire({"nodes": [node]}).nodes
    with pytest.raises(InvalidParamValue, match="field 'lines' "):  # left to the engine
        validate_params(name, params)
