"""The native call forms of current model families: Mistral v11+'s `name[ARGS]{...}`,
Gemma 4's `call:name{...}`, XML-style `<function=...>` / `<function name=...>` calls and Granite's
`<|tool_call|>[...]`, read from realistic output, from their real templates, and never shown to
the player when broken."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.inference.llama import ChatTemplate
from turnloom.engine.tools.families import ToolCallFamily, detect_family
from turnloom.engine.tools.parsing import parse_tool_calls

TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "chat_templates"

OPEN_DOOR = tl.ToolDefinition(
    name="open_door",
    description="Open a door.",
    parameters=[
        tl.ToolParamDefinition("door_id", "string", "Which door."),
        tl.ToolParamDefinition("options", "object", "How."),
    ],
)
LOOK = tl.ToolDefinition(
    name="look",
    description="Look at something.",
    parameters=[tl.ToolParamDefinition("target", "string", "What.")],
)

NESTED = {"force": False, "keys": ["brass", "iron"], "retries": 2}
EXPECTED = [
    ("open_door", {"door_id": "north", "options": NESTED}),
    ("look", {"target": "the hall, east side"}),
]

# family -> (realistic output with two calls and prose around them, malformed variant)
FORMATS: dict[str, tuple[ToolCallFamily, str, str]] = {
    "mistral-v11": (
        ToolCallFamily.MISTRAL,
        "Let me try the north door first.\n"
        '[TOOL_CALLS]open_door[ARGS]{"door_id": "north", "options": ' + json.dumps(NESTED) + "}"
        '[TOOL_CALLS]look[ARGS]{"target": "the hall, east side"}\n'
        "Then I will tell you.",
        'Let me try the north door first.\n[TOOL_CALLS]open_door[ARGS]{"door_id": "north", "opt',
    ),
    "mistral-v11-call-ids": (
        ToolCallFamily.MISTRAL,
        "Let me try the north door first.\n"
        "[TOOL_CALLS]open_door[CALL_ID]a1b2c3d4e[ARGS]"
        '{"door_id": "north", "options": ' + json.dumps(NESTED) + "}"
        '[TOOL_CALLS]look[CALL_ID]f5g6h7i8j[ARGS]{"target": "the hall, east side"}'
        "Then I will tell you.",
        "Let me try the north door first.\n[TOOL_CALLS]open_door[ARGS]{door_id: north}",
    ),
    "gemma4": (
        ToolCallFamily.GEMMA4,
        "Let me try the north door first.\n"
        '<|tool_call>call:open_door{door_id:<|"|>north<|"|>,options:{force:false,'
        'keys:[<|"|>brass<|"|>,<|"|>iron<|"|>],retries:2}}<tool_call|>'
        '<|tool_call>call:look{target:<|"|>the hall, east side<|"|>}<tool_call|>'
        "Then I will tell you.",
        'Let me try the north door first.\n<|tool_call>call:open_door{door_id:<|"|>north}'
        "<tool_call|>",
    ),
    "qwen3-coder": (
        ToolCallFamily.XML,
        "Let me try the north door first.\n\n"
        "<tool_call>\n<function=open_door>\n<parameter=door_id>\nnorth\n</parameter>\n"
        "<parameter=options>\n" + json.dumps(NESTED) + "\n</parameter>\n</function>\n"
        "</tool_call>\n<tool_call>\n<function=look>\n<parameter=target>\nthe hall, east side\n"
        "</parameter>\n</function>\n</tool_call>\nThen I will tell you.",
        "Let me try the north door first.\n\n<tool_call>\n<function=open_door>\n"
        "<parameter=door_id>\nnorth\n</parameter>\n<parameter=options>\n{",
    ),
    "minicpm": (
        ToolCallFamily.XML,
        "Let me try the north door first.\n"
        '<function name="open_door"><param name="door_id">north</param>'
        '<param name="options">' + json.dumps(NESTED) + "</param></function>\n"
        "<function name=look><param name=target><![CDATA[the hall, east side]]></param>"
        "</function>\nThen I will tell you.",
        'Let me try the north door first.\n<function name="open_door"><param name="door_id">'
        "north</function>",
    ),
    "granite": (
        ToolCallFamily.GRANITE,
        "Let me try the north door first.\n<|tool_call|>["
        + json.dumps({"name": "open_door", "arguments": {"door_id": "north", "options": NESTED}})
        + ", "
        + json.dumps({"name": "look", "arguments": {"target": "the hall, east side"}})
        + "]\nThen I will tell you.",
        "Let me try the north door first.\n<|tool_call|>"
        '[{"name": "open_door", "arguments": {"door_id": "north"',
    ),
}
PROSE = "Let me try the north door first.\nThen I will tell you."


def calls_of(text: str, family: ToolCallFamily) -> list[tuple[str, dict[str, object]]]:
    return [(call.name, call.arguments) for call in parse_tool_calls(text, family).calls]


@pytest.mark.parametrize("form", sorted(FORMATS))
@pytest.mark.parametrize("as_family", ["own", "generic"])
def test_each_format_reads_several_calls_with_nested_arguments(form: str, as_family: str) -> None:
    family, output, _ = FORMATS[form]
    outcome = parse_tool_calls(output, family if as_family == "own" else ToolCallFamily.GENERIC)
    assert [(call.name, call.arguments) for call in outcome.calls] == EXPECTED
    assert " ".join(outcome.residual_text.split()) == " ".join(PROSE.split())
    assert outcome.malformed == ()


@pytest.mark.parametrize("form", sorted(FORMATS))
@pytest.mark.parametrize("as_family", ["own", "generic"])
def test_each_malformed_format_is_no_call_and_no_markup_left(form: str, as_family: str) -> None:
    family, _, broken = FORMATS[form]
    outcome = parse_tool_calls(broken, family if as_family == "own" else ToolCallFamily.GENERIC)
    assert outcome.calls == ()
    assert outcome.residual_text == "Let me try the north door first."
    assert len(outcome.malformed) == 1


def test_older_mistral_list_form_is_still_read_beside_the_new_one() -> None:
    text = (
        '[TOOL_CALLS][{"name": "look", "arguments": {"target": "hall"}, "id": "abcdefghi"}]'
        '[TOOL_CALLS]open_door[ARGS]{"door_id": "north"}'
    )
    assert calls_of(text, ToolCallFamily.MISTRAL) == [
        ("look", {"target": "hall"}),
        ("open_door", {"door_id": "north"}),
    ]


def test_gemma4_values_keep_their_types_and_raw_text() -> None:
    text = (
        '<|tool_call>call:haggle{gold:25,final:true,note:<|"|>say "please", {maybe}<|"|>,'
        "ratio:0.5,extra:null}<tool_call|>"
    )
    assert calls_of(text, ToolCallFamily.GEMMA4) == [
        (
            "haggle",
            {
                "gold": 25,
                "final": True,
                "note": 'say "please", {maybe}',
                "ratio": 0.5,
                "extra": None,
            },
        )
    ]


def test_gemma4_json_form_inside_its_tags_is_read_too() -> None:
    # What the family table writes (and the grammar forces): JSON inside Gemma 4's own tags.
    text = '<|tool_call>{"name": "look", "arguments": {"target": "hall"}}<tool_call|>'
    assert calls_of(text, ToolCallFamily.GEMMA4) == [("look", {"target": "hall"})]


def test_xml_parameters_keep_inner_lines_and_markup_in_cdata() -> None:
    text = (
        "<tool_call>\n<function=write_note>\n<parameter=text>\nline one\nline two\n</parameter>\n"
        '</function>\n</tool_call><function name="write_note"><param name="text">'
        "<![CDATA[a <b> & c]]></param></function>"
    )
    assert calls_of(text, ToolCallFamily.XML) == [
        ("write_note", {"text": "line one\nline two"}),
        ("write_note", {"text": "a <b> & c"}),
    ]


def test_xml_function_without_parameters_is_a_call_with_no_arguments() -> None:
    text = "<tool_call>\n<function=look>\n</function>\n</tool_call>"
    assert calls_of(text, ToolCallFamily.XML) == [("look", {})]
    assert parse_tool_calls(text, ToolCallFamily.XML).residual_text == ""


def test_hermes_json_is_read_under_the_xml_family() -> None:
    text = '<tool_call>{"name": "look", "arguments": {"target": "hall"}}</tool_call>'
    assert calls_of(text, ToolCallFamily.XML) == [("look", {"target": "hall"})]


# --- the real templates: a call they render is a call the family reads ------------------------


RENDERED = {
    "Mistral-Small-3.2-24B-Instruct-2506": ToolCallFamily.MISTRAL,
    "Qwen3-Coder": ToolCallFamily.XML,
    "openbmb-MiniCPM5-1B": ToolCallFamily.XML,
    "gemma4": ToolCallFamily.GEMMA4,
}


@pytest.mark.parametrize("stem", sorted(RENDERED))
def test_two_calls_rendered_by_the_real_template_read_back(stem: str) -> None:
    source = (TEMPLATES / f"{stem}.jinja").read_text(encoding="utf-8")
    assert detect_family(source) is RENDERED[stem]
    calls = [
        ("open_door", {"door_id": "north"}),
        ("look", {"target": "the hall, east side"}),
    ]
    messages = [
        {"role": "user", "content": "Open the north door and look around."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": f"c0000000{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
                for index, (name, arguments) in enumerate(calls)
            ],
        },
    ]
    tools = [OPEN_DOOR.json_schema(), LOOK.json_schema()]
    rendered = ChatTemplate(source).render(messages, tools)
    shown = rendered[rendered.rfind("Open the north door and look around.") :]
    assert calls_of(shown, RENDERED[stem]) == calls


def test_granite_template_is_detected_though_it_cannot_show_past_calls() -> None:
    source = (TEMPLATES / "ibm-granite-granite-3.3-2B-Instruct.jinja").read_text(encoding="utf-8")
    assert detect_family(source) is ToolCallFamily.GRANITE


# --- the node: read calls become events, broken markup never reaches the player -----------------


@pytest.mark.parametrize("form", sorted(FORMATS))
def test_the_node_detects_each_format(clock: tl.VirtualClock, form: str) -> None:
    family, output, _ = FORMATS[form]
    model = tl.MockModel("mock", [output], family=family)
    graph = graph_of(
        (
            "detect",
            tl.ToolCallParams(
                tools=[OPEN_DOOR, LOOK], disposition=tl.ToolCallDisposition.AwaitResult
            ),
        )
    )
    with tl.Engine(model, clock=clock) as engine:
        step = engine.create_agent(graph).send_message("Open the north door.")
    assert step.pause is not None
    assert [(call.tool_name, call.arguments) for call in step.pause.pending_calls] == EXPECTED


@pytest.mark.parametrize("form", sorted(FORMATS))
def test_broken_call_markup_is_never_the_reply(clock: tl.VirtualClock, form: str) -> None:
    family, _, broken = FORMATS[form]
    model = tl.MockModel("mock", [broken], family=family)
    graph = graph_of(("detect", tl.ToolCallParams(tools=[OPEN_DOOR, LOOK])))
    with tl.Engine(model, clock=clock) as engine:
        result = engine.create_agent(graph).send_message("Open the north door.").result
    assert result is not None
    assert result.text == "Let me try the north door first."
