"""Tests for turnloom.engine.tools.parsing: call formats of real chat-template families."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnloom.engine.tools.arguments import arguments_as_strings, coerce_arguments
from turnloom.engine.tools.families import ToolCallFamily, detect_family
from turnloom.engine.tools.parsing import ParsedCall, ParseOutcome, parse_tool_calls

HERMES = ToolCallFamily.HERMES
LLAMA3 = ToolCallFamily.LLAMA3
MISTRAL = ToolCallFamily.MISTRAL
GENERIC = ToolCallFamily.GENERIC

# The real templates shipped in llama-cpp-python's vendored llama.cpp (see the README.md there).
TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "chat_templates"


def names_and_args(outcome: ParseOutcome) -> list[tuple[str, dict[str, object]]]:
    return [(call.name, call.arguments) for call in outcome.calls]


def check_invariants(text: str, outcome: ParseOutcome) -> None:
    """What must hold for any input, however broken."""
    assert isinstance(outcome, ParseOutcome)
    assert outcome.residual_text == outcome.residual_text.strip()
    assert len(outcome.residual_text) <= len(text)
    for call in outcome.calls:
        assert isinstance(call, ParsedCall)
        assert isinstance(call.name, str)
        assert call.name
        assert call.name == call.name.strip()
        assert isinstance(call.arguments, dict)
        assert call.raw in text
    for span in outcome.malformed:
        assert isinstance(span, str)
        assert span in text


# --- Hermes (Qwen 2.5, Qwen 3, Hermes 2 Pro) ---------------------------------------------------


def test_hermes_single_call_keeps_whole_block_as_raw() -> None:
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
    outcome = parse_tool_calls(text, HERMES)
    assert outcome == ParseOutcome(
        calls=(ParsedCall("get_weather", {"city": "Paris"}, text),),
        residual_text="",
        malformed=(),
    )


def test_hermes_several_calls_in_order() -> None:
    text = (
        '<tool_call>\n{"name": "a", "arguments": {"x": 1}}\n</tool_call>\n'
        '<tool_call>\n{"name": "b", "arguments": {"y": [1, 2], "z": null}}\n</tool_call>'
    )
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("a", {"x": 1}), ("b", {"y": [1, 2], "z": None})]
    assert outcome.calls[1].raw == (
        '<tool_call>\n{"name": "b", "arguments": {"y": [1, 2], "z": null}}\n</tool_call>'
    )
    assert outcome.residual_text == ""
    assert outcome.malformed == ()


def test_hermes_calls_plus_residual_text() -> None:
    text = (
        "I'll look that up for you.\n"
        '<tool_call>\n{"name": "search", "arguments": {"q": "turnloom"}}\n</tool_call>\n'
        "One moment."
    )
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("search", {"q": "turnloom"})]
    assert outcome.residual_text == "I'll look that up for you.\n\nOne moment."


def test_hermes_qwen3_think_block_is_dropped_and_never_parsed() -> None:
    text = (
        "<think>\nShould I call "
        '<tool_call>{"name": "wrong", "arguments": {}}</tool_call>? No, the other one.\n'
        "</think>\n\n"
        '<tool_call>\n{"name": "right", "arguments": {"n": 2}}\n</tool_call>'
    )
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("right", {"n": 2})]
    assert outcome.residual_text == ""
    assert outcome.malformed == ()


def test_think_block_dropped_from_plain_answer_in_every_family() -> None:
    text = '<think>\nthe user wants {"name": "x", "arguments": {}}\n</think>\n\nHello there!'
    for family in ToolCallFamily:
        assert parse_tool_calls(text, family) == ParseOutcome((), "Hello there!", ())


def test_qwen3_empty_think_block_from_disabled_thinking() -> None:
    text = '<think>\n\n</think>\n\n<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call>'
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("f", {})]
    assert outcome.residual_text == ""


def test_unclosed_think_block_swallows_the_rest() -> None:
    text = 'Hi.<think>maybe <tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert parse_tool_calls(text, HERMES) == ParseOutcome((), "Hi.", ())


def test_think_closer_without_opener_marks_leading_reasoning() -> None:
    # Templates that open <think> in the prompt leave only the closer in the output.
    text = 'reasoning here\n</think>\n\n<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("f", {})]
    assert outcome.residual_text == ""


def test_hermes_missing_closing_tag_at_end_of_output() -> None:
    text = 'Sure.\n<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}\n'
    outcome = parse_tool_calls(text, HERMES)
    assert outcome.calls == (
        ParsedCall(
            "get_time",
            {"tz": "UTC"},
            '<tool_call>\n{"name": "get_time", "arguments": {"tz": "UTC"}}',
        ),
    )
    assert outcome.residual_text == "Sure."
    assert outcome.malformed == ()


def test_hermes_missing_closing_tag_then_prose() -> None:
    text = '<tool_call>{"name": "f", "arguments": {}}\nI called it.'
    outcome = parse_tool_calls(text, HERMES)
    assert outcome.calls == (ParsedCall("f", {}, '<tool_call>{"name": "f", "arguments": {}}'),)
    assert outcome.residual_text == "I called it."
    assert outcome.malformed == ()


@pytest.mark.parametrize("between", ["", "\n"])
def test_hermes_missing_closing_tag_between_blocks(between: str) -> None:
    text = (
        '<tool_call>{"name": "a", "arguments": {}}'
        + between
        + '<tool_call>{"name": "b", "arguments": {}}</tool_call>'
    )
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("a", {}), ("b", {})]
    assert outcome.malformed == ()
    assert outcome.residual_text == ""


def test_hermes_whitespace_and_newlines_inside_tags() -> None:
    text = (
        '<tool_call>  \n\n\t{\n  "name" : "f",\n  "arguments" : {\n    "k": true\n  }\n}'
        "\n\n  </tool_call>"
    )
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("f", {"k": True})]
    assert outcome.calls[0].raw == text
    assert outcome.residual_text == ""


def test_hermes_stringified_arguments_are_decoded() -> None:
    text = '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1, \\"b\\": \\"x\\"}"}</tool_call>'
    assert names_and_args(parse_tool_calls(text, HERMES)) == [("f", {"a": 1, "b": "x"})]


def test_doubly_stringified_arguments_are_decoded() -> None:
    twice = json.dumps(json.dumps(json.dumps({"a": 1})))
    text = '<tool_call>{"name": "f", "arguments": ' + twice + "}</tool_call>"
    assert names_and_args(parse_tool_calls(text, HERMES)) == [("f", {"a": 1})]


def test_empty_string_arguments_mean_no_arguments() -> None:
    text = '[TOOL_CALLS][{"name": "now", "arguments": "", "id": "abcdefghi"}]'
    assert names_and_args(parse_tool_calls(text, MISTRAL)) == [("now", {})]


def test_hermes_closing_tag_inside_a_string_argument() -> None:
    text = '<tool_call>{"name": "write", "arguments": {"s": "</tool_call>"}}</tool_call> ok'
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("write", {"s": "</tool_call>"})]
    assert outcome.residual_text == "ok"


@pytest.mark.parametrize(
    "block",
    [
        '<tool_call>{"name": "f", "arguments": {"a": 1</tool_call>',  # bad JSON
        "<tool_call>{'name': 'f', 'arguments': {}}</tool_call>",  # Python, not JSON
        '<tool_call>{"arguments": {"a": 1}}</tool_call>',  # no name
        '<tool_call>{"name": 7, "arguments": {}}</tool_call>',  # non-string name
        '<tool_call>{"name": "  ", "arguments": {}}</tool_call>',  # blank name
        '<tool_call>{"name": "f", "arguments": [1, 2]}</tool_call>',  # non-object arguments
        '<tool_call>{"name": "f", "arguments": null}</tool_call>',  # non-object arguments
        '<tool_call>{"name": "f", "arguments": "Paris"}</tool_call>',  # string, not JSON
        '<tool_call>{"name": "f", "arguments": "[1, 2]"}</tool_call>',  # string, not an object
        "<tool_call>call f please</tool_call>",  # no JSON at all
        "<tool_call></tool_call>",  # empty
        '<tool_call>["f", {}]</tool_call>',  # array of non-objects
    ],
)
def test_hermes_malformed_block_is_recorded_not_called(block: str) -> None:
    outcome = parse_tool_calls(f"Before. {block} After.", HERMES)
    assert outcome.calls == ()
    assert outcome.malformed == (block,)
    assert outcome.residual_text == "Before.  After."


def test_hermes_malformed_block_does_not_hide_the_next_one() -> None:
    bad = '<tool_call>{"name": "a", "arguments": {</tool_call>'
    good = '<tool_call>{"name": "b", "arguments": {"k": "v"}}</tool_call>'
    outcome = parse_tool_calls(f"{bad}\n{good}", HERMES)
    assert outcome.calls == (ParsedCall("b", {"k": "v"}, good),)
    assert outcome.malformed == (bad,)
    assert outcome.residual_text == ""


def test_hermes_truncated_call_is_malformed() -> None:
    text = 'Working.\n<tool_call>\n{"name": "f", "arguments": {"text": "half a sent'
    outcome = parse_tool_calls(text, HERMES)
    assert outcome.calls == ()
    assert outcome.malformed == ('<tool_call>\n{"name": "f", "arguments": {"text": "half a sent',)
    assert outcome.residual_text == "Working."


def test_hermes_junk_after_call_inside_block_is_recorded() -> None:
    text = '<tool_call>{"name": "f", "arguments": {}} trailing junk</tool_call>'
    outcome = parse_tool_calls(text, HERMES)
    assert outcome.calls == (ParsedCall("f", {}, '{"name": "f", "arguments": {}}'),)
    assert outcome.malformed == ("trailing junk",)
    assert outcome.residual_text == ""


def test_hermes_call_without_arguments_key_gets_empty_arguments() -> None:
    outcome = parse_tool_calls('<tool_call>{"name": "now"}</tool_call>', HERMES)
    assert names_and_args(outcome) == [("now", {})]


def test_hermes_stray_closing_tag_is_hidden() -> None:
    text = '{"name": "f", "arguments": {"a": 1}}\n</tool_call>'
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("f", {"a": 1})]
    assert outcome.residual_text == ""


def test_hermes_tags_win_over_json_quoted_in_prose() -> None:
    text = (
        'The format is {"name": "example", "arguments": {}}.\n'
        '<tool_call>{"name": "real", "arguments": {}}</tool_call>'
    )
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("real", {})]
    assert outcome.residual_text == 'The format is {"name": "example", "arguments": {}}.'


def test_hermes_falls_back_to_bare_json_when_tags_are_absent() -> None:
    text = 'Calling now: {"name": "f", "arguments": {"a": "b"}}'
    outcome = parse_tool_calls(text, HERMES)
    assert names_and_args(outcome) == [("f", {"a": "b"})]
    assert outcome.residual_text == "Calling now:"


# --- Llama 3.x ---------------------------------------------------------------------------------


def test_llama3_single_bare_call_with_parameters() -> None:
    text = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
    assert parse_tool_calls(text, LLAMA3) == ParseOutcome(
        calls=(ParsedCall("get_weather", {"city": "Paris", "days": 3}, text),),
        residual_text="",
        malformed=(),
    )


def test_llama3_accepts_arguments_key_too() -> None:
    text = '{"name": "f", "arguments": {"a": 1}}'
    assert names_and_args(parse_tool_calls(text, LLAMA3)) == [("f", {"a": 1})]


def test_llama3_python_tag_prefix() -> None:
    text = '<|python_tag|>{"name": "f", "parameters": {"q": "x"}}'
    outcome = parse_tool_calls(text, LLAMA3)
    assert outcome.calls == (ParsedCall("f", {"q": "x"}, text),)
    assert outcome.residual_text == ""


def test_llama3_python_tag_with_several_calls_separated_by_semicolons() -> None:
    text = '<|python_tag|>{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"n": 1}}'
    outcome = parse_tool_calls(text, LLAMA3)
    assert outcome.calls == (
        ParsedCall("a", {}, '{"name": "a", "parameters": {}}'),
        ParsedCall("b", {"n": 1}, '{"name": "b", "parameters": {"n": 1}}'),
    )
    assert outcome.residual_text == ""


@pytest.mark.parametrize("separator", [";", "; ", "\n", ";\n", "\n\n"])
def test_llama3_several_bare_calls(separator: str) -> None:
    text = separator.join(
        [
            '{"name": "a", "parameters": {"x": 1}}',
            '{"name": "b", "parameters": {"y": "2"}}',
            '{"name": "c", "parameters": {}}',
        ]
    )
    outcome = parse_tool_calls(text, LLAMA3)
    assert names_and_args(outcome) == [("a", {"x": 1}), ("b", {"y": "2"}), ("c", {})]
    assert outcome.residual_text == ""


def test_llama3_fenced_json() -> None:
    text = 'Here you go:\n```json\n{"name": "f", "parameters": {"k": [1, 2]}}\n```\nDone.'
    outcome = parse_tool_calls(text, LLAMA3)
    assert outcome.calls == (
        ParsedCall("f", {"k": [1, 2]}, '```json\n{"name": "f", "parameters": {"k": [1, 2]}}\n```'),
    )
    assert outcome.residual_text == "Here you go:\n\nDone."


def test_llama3_fence_with_several_calls_is_removed_whole() -> None:
    text = '```\n{"name": "a", "parameters": {}}\n{"name": "b", "parameters": {}}\n```'
    outcome = parse_tool_calls(text, LLAMA3)
    assert names_and_args(outcome) == [("a", {}), ("b", {})]
    assert outcome.residual_text == ""


def test_llama3_call_plus_residual_text() -> None:
    text = 'Let me check the weather.\n{"name": "get_weather", "parameters": {"city": "Oslo"}}'
    outcome = parse_tool_calls(text, LLAMA3)
    assert names_and_args(outcome) == [("get_weather", {"city": "Oslo"})]
    assert outcome.residual_text == "Let me check the weather."


def test_llama3_stringified_parameters() -> None:
    text = '{"name": "f", "parameters": "{\\"city\\": \\"Rome\\"}"}'
    assert names_and_args(parse_tool_calls(text, LLAMA3)) == [("f", {"city": "Rome"})]


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "f", "parameters": {"city": "Par',  # truncated generation
        '{"name": "f", "parameters": {"city": Paris}}',  # bad JSON, balanced
        '{"arguments": {"city": "Paris"}}',  # no name
        '{"name": 3, "parameters": {}}',  # non-string name
        '{"name": "f", "parameters": [1]}',  # non-object parameters
        '{"name": "f", "parameters": "not json"}',  # string that is not JSON
    ],
)
def test_llama3_malformed_span_is_recorded_not_called(text: str) -> None:
    outcome = parse_tool_calls(text, LLAMA3)
    assert outcome == ParseOutcome(calls=(), residual_text="", malformed=(text,))


def test_own_markup_is_read_before_other_families_markup() -> None:
    # The Hermes tag inside the string must not be read as markup when Llama's own tag holds it.
    text = '<|python_tag|>{"name": "write", "parameters": {"text": "<tool_call>"}}'
    outcome = parse_tool_calls(text, LLAMA3)
    assert outcome == ParseOutcome((ParsedCall("write", {"text": "<tool_call>"}, text),), "", ())


def test_llama3_python_tag_without_json_is_malformed() -> None:
    # Llama 3.1 built-in tools use Python call syntax, which this parser does not execute.
    text = 'Searching.<|python_tag|>brave_search.call(query="weather")'
    outcome = parse_tool_calls(text, LLAMA3)
    assert outcome.calls == ()
    assert outcome.malformed == ('<|python_tag|>brave_search.call(query="weather")',)
    assert outcome.residual_text == "Searching."


def test_llama3_broken_call_keeps_prose_after_it() -> None:
    text = '{"name": "f", "parameters": {"a": 1,}}\nSorry, let me retry.'
    outcome = parse_tool_calls(text, LLAMA3)
    assert outcome.calls == ()
    assert outcome.malformed == ('{"name": "f", "parameters": {"a": 1,}}',)
    assert outcome.residual_text == "Sorry, let me retry."


# --- Mistral Nemo ------------------------------------------------------------------------------


def test_mistral_single_call_drops_id() -> None:
    text = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lyon"}, "id": "abcDEF123"}]'
    assert parse_tool_calls(text, MISTRAL) == ParseOutcome(
        calls=(ParsedCall("get_weather", {"city": "Lyon"}, text),),
        residual_text="",
        malformed=(),
    )


def test_mistral_several_calls() -> None:
    first = '{"name": "a", "arguments": {"x": 1}, "id": "aaaaaaaaa"}'
    second = '{"name": "b", "arguments": {"y": false}, "id": "bbbbbbbbb"}'
    text = f"[TOOL_CALLS][{first}, {second}]"
    outcome = parse_tool_calls(text, MISTRAL)
    assert outcome.calls == (
        ParsedCall("a", {"x": 1}, first),
        ParsedCall("b", {"y": False}, second),
    )
    assert outcome.residual_text == ""


def test_mistral_stringified_arguments_as_the_template_renders_them() -> None:
    # The Nemo template writes tool_call.function|tojson, so OpenAI-style string arguments stay
    # strings in the history the model learns from.
    text = '[TOOL_CALLS][{"name": "f", "arguments": "{\\"a\\": [1, 2]}", "id": "123456789"}]'
    assert names_and_args(parse_tool_calls(text, MISTRAL)) == [("f", {"a": [1, 2]})]


def test_mistral_calls_plus_residual_text() -> None:
    text = 'Let me check.[TOOL_CALLS][{"name": "f", "arguments": {}, "id": "abcdefghi"}]'
    outcome = parse_tool_calls(text, MISTRAL)
    assert names_and_args(outcome) == [("f", {})]
    assert outcome.residual_text == "Let me check."


def test_mistral_bad_element_does_not_spoil_good_ones() -> None:
    good = '{"name": "a", "arguments": {}, "id": "aaaaaaaaa"}'
    nameless = '{"arguments": {}, "id": "bbbbbbbbb"}'
    scalar_args = '{"name": "c", "arguments": 5, "id": "ccccccccc"}'
    outcome = parse_tool_calls(f"[TOOL_CALLS][{good}, {nameless}, {scalar_args}]", MISTRAL)
    assert outcome.calls == (ParsedCall("a", {}, good),)
    assert outcome.malformed == (nameless, scalar_args)
    assert outcome.residual_text == ""


@pytest.mark.parametrize(
    "text",
    [
        '[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}',  # truncated
        '[TOOL_CALLS][{"name": "f", "arguments": {"a": 1},]',  # bad JSON
        "[TOOL_CALLS][]",  # no calls at all
        "[TOOL_CALLS]",  # nothing after the marker
        '[TOOL_CALLS][{"name": "f", "arguments": "x", "id": "abcdefghi"}]',  # non-object args
    ],
)
def test_mistral_malformed_span_is_recorded_not_called(text: str) -> None:
    assert parse_tool_calls(text, MISTRAL) == ParseOutcome((), "", (text,))


def test_mistral_without_marker_falls_back_to_bare_array() -> None:
    text = '[{"name": "f", "arguments": {"a": 1}, "id": "abcdefghi"}]'
    outcome = parse_tool_calls(text, MISTRAL)
    assert outcome.calls == (ParsedCall("f", {"a": 1}, text),)
    assert outcome.residual_text == ""


# --- Generic fallback --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>{"name": "f", "arguments": {"a": 1}}</tool_call>',
        '[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}, "id": "abcdefghi"}]',
        '<|python_tag|>{"name": "f", "parameters": {"a": 1}}',
        '{"name": "f", "parameters": {"a": 1}}',
        '{"name": "f", "arguments": {"a": 1}}',
        '```json\n{"name": "f", "arguments": {"a": 1}}\n```',
        '[{"name": "f", "arguments": {"a": 1}}]',
    ],
)
def test_every_family_understands_every_shape(text: str) -> None:
    for family in ToolCallFamily:
        outcome = parse_tool_calls(text, family)
        assert outcome == ParseOutcome((ParsedCall("f", {"a": 1}, text),), "", ()), family


def test_fence_closer_before_a_call_is_not_taken_as_its_opener() -> None:
    text = '```\nprint("hi")\n```\n{"name": "f", "arguments": {}}'
    outcome = parse_tool_calls(text, GENERIC)
    assert outcome.calls == (ParsedCall("f", {}, '{"name": "f", "arguments": {}}'),)
    assert outcome.residual_text == '```\nprint("hi")\n```'


def test_generic_json_object_in_the_middle_of_prose() -> None:
    text = 'OK, I will run {"name": "roll", "arguments": {"sides": 20}} and report back.'
    outcome = parse_tool_calls(text, GENERIC)
    assert names_and_args(outcome) == [("roll", {"sides": 20})]
    assert outcome.residual_text == "OK, I will run  and report back."


@pytest.mark.parametrize(
    "text",
    [
        "In Python, {} is an empty dict and {'a': 1} has one key.",
        'Set the config to {"key": "value", "nested": {"n": 1}}.',
        'A person: {"name": "Bob", "age": 31}',  # "name" without arguments is data
        'People: [{"name": "Bob"}, {"name": "Al", "role": "admin"}]',
        'Curly {braces} and [brackets] and {"unfinished":',
        'Template: {"name": <function-name>, "arguments": <args-json-object>}',
        # An echoed tool definition has name and parameters, but it is not a call.
        '{"name": "get_weather", "description": "Weather.", "parameters": {"type": "object"}}',
        "function f() { return [1, 2]; }",
    ],
)
def test_plain_chat_text_with_braces_is_not_a_call(text: str) -> None:
    for family in ToolCallFamily:
        assert parse_tool_calls(text, family) == ParseOutcome((), text, ()), family


@pytest.mark.parametrize("text", ["", "   ", "\n\t\n"])
def test_empty_text(text: str) -> None:
    for family in ToolCallFamily:
        assert parse_tool_calls(text, family) == ParseOutcome((), "", ())


def test_non_string_input_is_no_call() -> None:
    assert parse_tool_calls(cast(str, None)) == ParseOutcome((), "", ())


def test_family_may_be_given_as_its_string_value() -> None:
    text = '<tool_call>{"name": "f", "arguments": {}}</tool_call>'
    assert parse_tool_calls(text, cast(ToolCallFamily, "hermes")).calls[0].name == "f"
    assert parse_tool_calls(text, cast(ToolCallFamily, "nonsense")).calls[0].name == "f"


def test_outcomes_are_immutable() -> None:
    outcome = parse_tool_calls('{"name": "f", "arguments": {}}')
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.calls[0].name = "g"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.residual_text = "x"  # type: ignore[misc]


def test_call_name_is_stripped() -> None:
    outcome = parse_tool_calls('<tool_call>{"name": " f\\n", "arguments": {}}</tool_call>')
    assert names_and_args(outcome) == [("f", {})]


# --- detect_family on the real templates ---------------------------------------------------------


EXPECTED_FAMILIES = {
    "Qwen-Qwen2.5-7B-Instruct.jinja": HERMES,
    "Qwen-Qwen3-0.6B.jinja": HERMES,
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja": HERMES,
    "meta-llama-Llama-3.2-3B-Instruct.jinja": LLAMA3,
    "mistralai-Mistral-Nemo-Instruct-2407.jinja": MISTRAL,
    "google-gemma-2-2b-it.jinja": GENERIC,
    "microsoft-Phi-3.5-mini-instruct.jinja": GENERIC,
    "Mistral-Small-3.2-24B-Instruct-2506.jinja": MISTRAL,
    "Qwen3-Coder.jinja": ToolCallFamily.XML,
    "openbmb-MiniCPM5-1B.jinja": ToolCallFamily.XML,
    "gemma4.jinja": ToolCallFamily.GEMMA4,
    "ibm-granite-granite-3.3-2B-Instruct.jinja": ToolCallFamily.GRANITE,
}


def test_the_real_templates_are_all_covered() -> None:
    assert sorted(path.name for path in TEMPLATES.glob("*.jinja")) == sorted(EXPECTED_FAMILIES)


@pytest.mark.parametrize(("filename", "family"), sorted(EXPECTED_FAMILIES.items()))
def test_detect_family_on_real_template(filename: str, family: ToolCallFamily) -> None:
    template = (TEMPLATES / filename).read_text(encoding="utf-8")
    assert detect_family(template) is family


@pytest.mark.parametrize("template", [None, "", "{{ messages }}"])
def test_detect_family_without_markers_is_generic(template: str | None) -> None:
    assert detect_family(template) is GENERIC


def test_detect_family_llama3_headers_without_tools_is_generic() -> None:
    template = (
        "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
        "{{ m.content }}<|eot_id|>{% endfor %}"
    )
    assert detect_family(template) is GENERIC


def test_detect_family_parameters_without_llama3_headers_is_generic() -> None:
    assert detect_family('<|im_start|>Respond with {"name": ..., "parameters": ...}') is GENERIC


def test_detect_family_llama3_ipython_role() -> None:
    template = "<|start_header_id|>ipython<|end_header_id|>\n\n{{ message.content }}"
    assert detect_family(template) is LLAMA3


def test_detect_family_llama3_python_tag() -> None:
    template = "<|start_header_id|>assistant<|end_header_id|>\n\n<|python_tag|>{{ call }}"
    assert detect_family(template) is LLAMA3


# --- arguments_as_strings ----------------------------------------------------------------------


def test_arguments_as_strings() -> None:
    arguments: dict[str, object] = {
        "s": "plain",
        "empty": "",
        "t": True,
        "f": False,
        "none": None,
        "i": 42,
        "neg": -7,
        "fl": 2.5,
        "list": [1, "two", None, True],
        "obj": {"k": "v", "n": [1, 2]},
        "uni": ["é"],
    }
    assert arguments_as_strings(arguments) == {
        "s": "plain",
        "empty": "",
        "t": "true",
        "f": "false",
        "none": "null",
        "i": "42",
        "neg": "-7",
        "fl": "2.5",
        "list": '[1,"two",null,true]',
        "obj": '{"k":"v","n":[1,2]}',
        "uni": '["é"]',
    }


def test_arguments_as_strings_never_raises_on_non_json_values() -> None:
    assert arguments_as_strings({"x": {1}, "y": object}) == {"x": "{1}", "y": str(object)}


# --- coerce_arguments --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "value", "expected"),
    [
        ("string", "hi", "hi"),
        ("string", 3, "3"),
        ("string", 2.5, "2.5"),
        ("string", True, "true"),
        ("string", [1, "a"], '[1,"a"]'),
        ("string", {"a": 1}, '{"a":1}'),
        ("boolean", True, True),
        ("boolean", "true", True),
        ("boolean", " TRUE ", True),
        ("boolean", "yes", True),
        ("boolean", "1", True),
        ("boolean", "false", False),
        ("boolean", "No", False),
        ("boolean", "0", False),
        ("boolean", 1, True),
        ("boolean", 0, False),
        ("integer", 5, 5),
        ("integer", "42", 42),
        ("integer", " -3 ", -3),
        ("integer", "+8", 8),
        ("integer", 4.0, 4),
        ("integer", "4.0", 4),
        ("integer", "1e3", 1000),
        ("number", 5, 5),
        ("number", 2.5, 2.5),
        ("number", "2.5", 2.5),
        ("number", "-0.5e1", -5.0),
        ("number", "7", 7),
        ("number", ".5", 0.5),
        ("array", [1, 2], [1, 2]),
        ("array", (1, 2), [1, 2]),
        ("array", "[1, 2]", [1, 2]),
        ("array", '["a", {"b": null}]', ["a", {"b": None}]),
        ("object", {"a": 1}, {"a": 1}),
        ("object", '{"a": [1]}', {"a": [1]}),
        ("Integer", "3", 3),  # declared types are case-insensitive
    ],
)
def test_coerce_each_type(declared: str, value: object, expected: object) -> None:
    result = coerce_arguments({"p": value}, {"p": declared})
    assert result == {"p": expected}
    assert type(result["p"]) is type(expected)


@pytest.mark.parametrize(
    ("declared", "value"),
    [
        ("string", None),
        ("boolean", "maybe"),
        ("boolean", 2),
        ("boolean", None),
        ("boolean", [True]),
        ("integer", "4.5"),
        ("integer", 4.5),
        ("integer", "four"),
        ("integer", "1_000"),
        ("integer", "١٢"),  # non-ASCII digits that int() would accept
        ("integer", True),
        ("integer", "9" * 5000),  # beyond int()'s digit limit
        ("integer", float("inf")),
        ("integer", None),
        ("number", "nan"),
        ("number", "inf"),
        ("number", "1e999"),
        ("number", "3 apples"),
        ("number", False),
        ("number", [1]),
        ("array", "not json"),
        ("array", '{"a": 1}'),
        ("array", 5),
        ("object", "[1, 2]"),
        ("object", "{bad"),
        ("object", 3),
        ("mystery", "x"),  # unknown declared type
    ],
)
def test_coerce_uncoercible_value_is_kept(declared: str, value: object) -> None:
    assert coerce_arguments({"p": value}, {"p": declared})["p"] is value


def test_coerce_keeps_undeclared_params_and_does_not_mutate_input() -> None:
    arguments: dict[str, object] = {"n": "5", "extra": "7", "flag": "yes"}
    declared = {"n": "integer", "flag": "boolean", "missing": "string"}
    assert coerce_arguments(arguments, declared) == {"n": 5, "extra": "7", "flag": True}
    assert arguments == {"n": "5", "extra": "7", "flag": "yes"}


def test_coerce_ignores_non_string_declared_types() -> None:
    odd: dict[str, object] = {"p": ["integer", "null"]}
    assert coerce_arguments({"p": "5"}, cast(dict[str, str], odd)) == {"p": "5"}


# --- properties --------------------------------------------------------------------------------

_MARKERS = ("think>", "tool_call>", "[TOOL_CALLS]", "<|python_tag|>")
safe_text = st.text().filter(lambda s: not any(marker in s for marker in _MARKERS))
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | safe_text,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(safe_text, children, max_size=3)
    ),
    max_leaves=8,
)
call_names = safe_text.filter(lambda s: s != "" and s == s.strip())
calls_strategy = st.lists(
    st.tuples(call_names, st.dictionaries(safe_text, json_values, max_size=4)),
    min_size=1,
    max_size=3,
)


def render(family_shape: str, calls: list[tuple[str, dict[str, object]]]) -> str:
    if family_shape == "hermes":
        return "\n".join(
            "<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>"
            for n, a in calls
        )
    if family_shape == "mistral":
        objects = [{"name": n, "arguments": a, "id": "abcdefghi"} for n, a in calls]
        return "[TOOL_CALLS]" + json.dumps(objects)
    if family_shape == "python_tag":
        return "<|python_tag|>" + "; ".join(
            json.dumps({"name": n, "parameters": a}) for n, a in calls
        )
    return "\n".join(json.dumps({"name": n, "parameters": a}) for n, a in calls)


SHAPES = {"hermes": HERMES, "mistral": MISTRAL, "python_tag": LLAMA3, "bare": LLAMA3}


@settings(database=None, deadline=None)
@given(st.sampled_from(sorted(SHAPES)), calls_strategy)
def test_valid_calls_round_trip(shape: str, calls: list[tuple[str, dict[str, object]]]) -> None:
    text = render(shape, calls)
    for family in (SHAPES[shape], GENERIC):
        outcome = parse_tool_calls(text, family)
        assert names_and_args(outcome) == calls
        assert outcome.malformed == ()
        assert outcome.residual_text == ""
        check_invariants(text, outcome)


@settings(database=None, deadline=None)
@given(st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    for family in ToolCallFamily:
        check_invariants(text, parse_tool_calls(text, family))


_FRAGMENTS = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        '"',
        "\\",
        ",",
        ":",
        ";",
        "\n",
        "```",
        "```json\n",
        "<tool_call>",
        "</tool_call>",
        "<think>",
        "</think>",
        "[TOOL_CALLS]",
        "<|python_tag|>",
        '"name"',
        '"arguments"',
        '"parameters"',
        '{"name": "x", "arguments": ',
    ]
)


@st.composite
def mutated_calls(draw: st.DrawFn) -> str:
    text = render(draw(st.sampled_from(sorted(SHAPES))), draw(calls_strategy))
    for _ in range(draw(st.integers(1, 4))):
        if not text:
            break
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "duplicate"]))
        insert = draw(_FRAGMENTS | st.text(max_size=4))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + insert + text[i:]
        elif op == "replace":
            text = text[:i] + insert + text[j:]
        elif op == "truncate":
            text = text[:i]
        else:
            text = text[:j] + text[i:]
    return text


@settings(database=None, deadline=None, max_examples=300)
@given(mutated_calls())
def test_never_raises_on_mutated_call_strings(text: str) -> None:
    for family in ToolCallFamily:
        check_invariants(text, parse_tool_calls(text, family))
