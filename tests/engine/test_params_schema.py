"""What params accept and what they document: enum fields take their string values, the
deprecated `tool_call_format` is accepted and ignored, templates name only the variables the
engine provides, and docs/params.md is generated from the declarations."""

from __future__ import annotations

import enum
import warnings
from pathlib import Path
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import SET_LIGHT, graph_of
from turnloom.engine.graph import fields
from turnloom.engine.graph.fields import param_fields, params_to_mapping
from turnloom.engine.graph.prompt_template import MAX_SECTION_DEPTH, TEMPLATE_VARIABLES
from turnloom.engine.params_doc import DOCUMENTED, params_markdown, write_params_doc
from turnloom.engine.turns.dialog.projection import Interaction, prompt_context
from turnloom.protocol.graph_codec import params_from_wire

Code = tl.ErrorCode
REPO = Path(__file__).resolve().parents[2]

#: Every enum-typed field of every node class: (class, field name, enum).
ENUM_FIELDS = [
    (cls, f.name, tp)
    for cls in (tl.GenerateParams, tl.CannedResponseParams, tl.ToolCallParams)
    for f, tp in param_fields(cls)
    if isinstance(tp, type) and issubclass(tp, enum.Enum)
]
ENUM_CASES = [(cls, name, member) for cls, name, tp in ENUM_FIELDS for member in tp]


def node(cls: type, **values: Any) -> tl.NodeParams:
    extra = {"tools": [SET_LIGHT]} if cls is tl.ToolCallParams else {}
    if cls is tl.CannedResponseParams:
        extra = {"lines": ["a", "b"]}
    return cls(**extra, **values)  # type: ignore[no-any-return]


def test_every_enum_field_is_covered() -> None:
    assert {name for _, name, _ in ENUM_FIELDS} == {"placement", "selection", "disposition", "mode"}


@pytest.mark.parametrize(
    "cls, name, member", ENUM_CASES, ids=[f"{n}={m.value}" for _, n, m in ENUM_CASES]
)
def test_an_enum_field_takes_its_string_value(
    engine: tl.Engine, cls: type, name: str, member: enum.Enum
) -> None:
    params = node(cls, **{name: member.value})
    assert getattr(params, name) is member
    agent = engine.create_agent(graph_of(("n", params)))
    assert getattr(agent.get_params("n"), name) is member


@pytest.mark.embedded_only  # set after construction: the wire client sends the value as it is
def test_an_enum_string_set_after_construction_is_taken_at_creation(engine: tl.Engine) -> None:
    params = tl.CannedResponseParams(lines=["a", "b"])
    params.selection = "cycle"  # type: ignore[assignment]
    agent = engine.create_agent(graph_of(("n", params)))
    assert [agent.send_message("x").result.text for _ in range(3)] == ["a", "b", "a"]  # type: ignore[union-attr]


def test_an_enum_string_in_change_params_is_taken(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph_of(("n", tl.CannedResponseParams(lines=["a", "b"]))))
    agent.change_params("n", {"selection": "cycle"})
    assert agent.get_params("n").selection is tl.Selection.Cycle  # type: ignore[attr-defined]


@pytest.mark.parametrize("value", ["Cycle", "sideways", 3])
def test_a_value_of_no_member_is_3007_listing_the_values(engine: tl.Engine, value: Any) -> None:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph_of(("n", tl.CannedResponseParams(["a"], selection=value))))
    assert info.value.code == Code.InvalidParamValue
    assert "'selection' must be one of ['first', 'random', 'cycle']" in info.value.message


# --- tool_call_format ----------------------------------------------------------------------


@pytest.fixture
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Forget which deprecations were warned about (they warn once per process)."""
    monkeypatch.setattr(fields, "_WARNED", set())


@pytest.mark.usefixtures("fresh_warnings")
def test_tool_call_format_is_accepted_ignored_and_warned_about_once() -> None:
    with pytest.warns(DeprecationWarning, match="'tool_call_format' is deprecated") as caught:
        legacy = tl.ToolCallParams(tools=[SET_LIGHT], tool_call_format="hermes")
    assert [w.filename for w in caught] == [__file__]  # points at the caller
    assert legacy == tl.ToolCallParams(tools=[SET_LIGHT])
    assert "tool_call_format" not in params_to_mapping(legacy)  # nor sent on the wire
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tl.ToolCallParams(tools=[SET_LIGHT], tool_call_format="llama3")  # warned already


@pytest.mark.usefixtures("fresh_warnings")
def test_tool_call_format_is_accepted_on_the_wire() -> None:
    with pytest.warns(DeprecationWarning):
        params = params_from_wire("t", "ToolCall", {"tool_call_format": "auto"})
    assert params == tl.ToolCallParams()


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_tool_call_format_in_change_params_changes_nothing(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph_of(("t", tl.ToolCallParams(tools=[SET_LIGHT]))))
    before = agent.get_params("t")
    agent.change_params("t", {"tool_call_format": "hermes"})
    assert agent.get_params("t") == before
    with pytest.raises(tl.TurnloomError) as info:  # not a field of any other node type
        engine.create_agent(graph_of(("g", tl.GenerateParams()))).change_params(
            "g", {"tool_call_format": "hermes"}
        )
    assert info.value.code == Code.InvalidParamValue
    assert "no field(s) ['tool_call_format']" in info.value.message


# --- template variables --------------------------------------------------------------------


def test_the_projection_provides_exactly_the_template_variables() -> None:
    context = prompt_context(Interaction("hello"))
    assert context.keys() == TEMPLATE_VARIABLES.keys() and context["human_message"] == "hello"


UNKNOWN = {
    "a misspelt variable": ("{{user_message}}", "'user_message'"),
    "a section key": ("{{#shouting}}!{{/shouting}}{{human_message}}", "'shouting'"),
    "an inverted section key": ("{{^quiet}}{{human_message}}{{/quiet}}", "'quiet'"),
    "inside a section": ("{{#human_message}}{{name}}{{/human_message}}", "'name'"),
    "a dotted name": ("{{human_message.upper}}", "'human_message.upper'"),
    "'.' outside a section": ("{{.}}", "'.'"),
    "unescaped": ("{{{player}}}", "'player'"),
    "after a delimiter change": ("{{=<% %>=}}<%npc%>", "'npc'"),
}


@pytest.mark.parametrize("template, variable", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_a_template_naming_an_unknown_variable_is_3007_at_creation(
    engine: tl.Engine, template: str, variable: str
) -> None:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph_of(("gen", tl.GenerateParams(template=template))))
    message = info.value.message
    assert info.value.code == Code.InvalidParamValue
    assert "'gen'" in message and "'template'" in message and variable in message
    assert "(variables: ['human_message'])" in message


@pytest.mark.parametrize("template, variable", UNKNOWN.values(), ids=UNKNOWN.keys())
def test_a_template_naming_an_unknown_variable_in_change_params_changes_nothing(
    engine: tl.Engine, template: str, variable: str
) -> None:
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams())))
    before = agent.get_params("gen")
    with pytest.raises(tl.TurnloomError) as info:
        agent.change_params("gen", {"template": template})
    assert info.value.code == Code.InvalidParamValue and variable in info.value.message
    assert agent.get_params("gen") == before


@pytest.mark.parametrize(
    "template, words",
    [
        ("{{>header}}{{human_message}}", "partial 'header'"),
        ("{{#human_message}}" * (MAX_SECTION_DEPTH + 1), f"more than {MAX_SECTION_DEPTH} deep"),
    ],
    ids=["partial", "deep sections"],
)
def test_partials_and_deep_sections_are_3007(engine: tl.Engine, template: str, words: str) -> None:
    with pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph_of(("gen", tl.GenerateParams(template=template))))
    assert info.value.code == Code.InvalidParamValue and words in info.value.message


def test_sections_nested_to_the_limit_render(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    depth = MAX_SECTION_DEPTH
    template = "{{#human_message}}" * depth + "{{.}}" + "{{/human_message}}" * depth
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams(template=template))))
    agent.send_message("hi")
    assert mock_model.requests[-1].messages[-1]["content"] == "hi"


# --- docs/params.md ------------------------------------------------------------------------


def test_docs_params_md_is_generated_from_the_declarations(tmp_path: Path) -> None:
    fresh = write_params_doc(tmp_path)
    committed = REPO / "docs" / fresh.name
    assert committed.exists(), f"{committed} is missing: regenerate it with `make diagrams`"
    assert committed.read_text(encoding="utf-8") == fresh.read_text(encoding="utf-8"), (
        f"{committed} is stale: regenerate it with `make diagrams`"
    )


def test_docs_params_md_has_a_row_per_field_and_every_variable() -> None:
    text = params_markdown()
    for cls in DOCUMENTED:
        assert f"## {cls.__name__}" in text
        for f, _ in param_fields(cls):
            section = text.split(f"## {cls.__name__}", 1)[1].split("\n## ", 1)[0]
            assert f"| `{f.name}` |" in section, f"{cls.__name__}.{f.name}"
    for name in TEMPLATE_VARIABLES:
        assert f"| `{name}` |" in text
    assert "| `pause_timeout_ms` | int | `0` | 0 … 2147483647 | structural |" in text
    assert "| `seed` | int | `-1` | -1 … 4294967294 | mutable |" in text
    assert "`tool_call_format` (deprecated)" in text
