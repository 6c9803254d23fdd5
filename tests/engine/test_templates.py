"""Chat templates without weights: the tool-support probe, family detection, rendering of
tool traffic and tool-call grammars, against real templates of real model families."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnloom as tl
from turnloom.engine.inference.catalog import packaged_template
from turnloom.engine.inference.llama import (
    ChatTemplate,
    probe_chat_template,
    string_caps,
    tool_call_grammar,
)
from turnloom.engine.tools.families import FAMILIES
from turnloom.engine.tools.parsing import parse_tool_calls
from turnloom.engine.turns.exchanges import call_message, result_message

TEMPLATES = Path(__file__).resolve().parent.parent / "data" / "chat_templates"


def no_gguf() -> str:
    """A GGUF path given as a resolver: it is not run (nor the file read) when the template
    is given, so none needs to exist (a plain missing path is refused when the model is made)."""
    return "/nonexistent/model.gguf"


ACCEPTS = {
    "Qwen-Qwen2.5-7B-Instruct": tl.models.ToolCallFamily.HERMES,
    "Qwen-Qwen3-0.6B": tl.models.ToolCallFamily.HERMES,
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use": tl.models.ToolCallFamily.HERMES,
    "meta-llama-Llama-3.2-3B-Instruct": tl.models.ToolCallFamily.LLAMA3,
    "mistralai-Mistral-Nemo-Instruct-2407": tl.models.ToolCallFamily.MISTRAL,
    "Mistral-Small-3.2-24B-Instruct-2506": tl.models.ToolCallFamily.MISTRAL,
    "Qwen3-Coder": tl.models.ToolCallFamily.XML,
    "openbmb-MiniCPM5-1B": tl.models.ToolCallFamily.XML,
    "gemma4": tl.models.ToolCallFamily.GEMMA4,
}
# Granite 3.3's template renders only a message's content, never its tool calls.
REJECTS = [
    "google-gemma-2-2b-it",
    "microsoft-Phi-3.5-mini-instruct",
    "ibm-granite-granite-3.3-2B-Instruct",
]

CHECK_STOCK = tl.ToolDefinition(
    name="check_stock",
    description="How many of an item the shop has.",
    parameters=[tl.ToolParamDefinition("item", "string", "The item.")],
)
HAGGLE = tl.ToolDefinition(
    name="haggle",
    description="Offer a price.",
    parameters=[
        tl.ToolParamDefinition("gold", "integer", "The offer."),
        tl.ToolParamDefinition("final", "boolean", "Last offer?"),
    ],
)


def template(stem: str) -> str:
    """The text of a real template from tests/data/chat_templates."""
    return (TEMPLATES / f"{stem}.jinja").read_text(encoding="utf-8")


def tool_graph(model_name: str) -> tl.GraphDescription:
    """One ToolCall node 'ask' on `model_name`."""
    return (
        tl.GraphDescription()
        .add_node("ask", tl.ToolCallParams(tools=[CHECK_STOCK]))
        .set_start_node("ask")
        .set_default_model_name(model_name)
    )


def projected_exchange() -> list[dict[str, object]]:
    """A chat as the engine projects it after an AwaitResult resume: call, then its result."""
    event = tl.ToolCallEvent(
        call_id="c0000002a",
        tool_name="check_stock",
        arguments_json=json.dumps({"item": "oak shield"}),
        node_name="ask",
        disposition="AwaitResult",
        arguments={"item": "oak shield"},
    )
    return [
        {"role": "system", "content": "You are Mira, a shopkeeper."},
        {"role": "user", "content": "Any shields?"},
        call_message([event]),
        result_message(event, "LEDGER-7: 1 oak shield at 25 gold"),
    ]


# --- the probe, through the public API (docs/reference/tools.md#creation-probe) -------------


@pytest.mark.parametrize("stem", sorted(ACCEPTS))
def test_tool_capable_templates_pass_the_probe(stem: str) -> None:
    tl.register_model(
        tl.CatalogEntry(name=f"probe-{stem}", path=no_gguf, chat_template=template(stem)),
        replace=True,
    )
    model = tl.LlamaModel.from_catalog(f"probe-{stem}")
    assert model.tool_support_error() is None
    with tl.Engine(model) as engine:
        agent = engine.create_agent(tool_graph(model.name))
        assert agent.agent_id > 0
    assert not model.loaded  # the probe never needed the weights


@pytest.mark.parametrize("stem", REJECTS)
def test_tool_less_templates_are_refused_at_agent_creation(stem: str) -> None:
    model = tl.LlamaModel(no_gguf, name=f"probe-{stem}", chat_template=template(stem))
    with tl.Engine(model) as engine, pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(tool_graph(model.name))
    assert info.value.code == tl.ErrorCode.GraphCompilationFailed
    assert "'ask'" in info.value.message
    assert f"probe-{stem}" in info.value.message
    assert "render" in info.value.message


def test_tool_less_model_still_serves_generate_nodes() -> None:
    model = tl.LlamaModel(no_gguf, name="phi", chat_template=template(REJECTS[1]))
    graph = (
        tl.GraphDescription()
        .add_node("say", tl.GenerateParams())
        .set_start_node("say")
        .set_default_model_name("phi")
    )
    with tl.Engine(model) as engine:
        engine.create_agent(graph)


def test_probe_reasons() -> None:
    assert probe_chat_template(None) == "it has no chat template"
    broken = probe_chat_template("{% for m in messages %}")
    assert broken is not None and "failed to render" in broken
    raising = probe_chat_template("{{ raise_exception('no tools here') }}")
    assert raising is not None and "no tools here" in raising
    offers_only = probe_chat_template("{% for t in tools %}{{ t | tojson }}{% endfor %}")
    assert offers_only == "its chat template does not render the assistant's tool calls"


# --- family detection -------------------------------------------------------------------------


@pytest.mark.parametrize(("stem", "family"), sorted(ACCEPTS.items()))
def test_family_is_detected_from_the_template(stem: str, family: tl.models.ToolCallFamily) -> None:
    model = tl.LlamaModel(no_gguf, chat_template=template(stem))
    assert model.tool_call_family() is family


def test_catalog_family_override_wins() -> None:
    model = tl.LlamaModel(
        no_gguf,
        chat_template=template("Qwen-Qwen2.5-7B-Instruct"),
        tool_call_family=tl.models.ToolCallFamily.MISTRAL,
    )
    assert model.tool_call_family() is tl.models.ToolCallFamily.MISTRAL


# --- rendering tool traffic ---------------------------------------------------------------------


@pytest.mark.parametrize("stem", sorted(ACCEPTS))
def test_real_templates_render_the_engines_call_and_result(stem: str) -> None:
    prompt = ChatTemplate(template(stem), bos_token="<s>", eos_token="</s>").render(
        projected_exchange(), [CHECK_STOCK.json_schema()]
    )
    # Arguments reach templates as objects, so they render in the family's own form (JSON, or
    # Gemma 4's / XML's), never as a quoted string: the family's parser reads them back.
    shown = prompt[prompt.index("Any shields?") : prompt.index("LEDGER-7")]
    calls = parse_tool_calls(shown, ACCEPTS[stem]).calls
    assert [(call.name, call.arguments) for call in calls] == [
        ("check_stock", {"item": "oak shield"})
    ]
    assert '\\"item\\"' not in prompt
    assert "LEDGER-7: 1 oak shield at 25 gold" in prompt
    assert prompt.index("oak shield") < prompt.index("LEDGER-7")


def test_default_template_renders_gemma_turns_with_tools() -> None:
    text = packaged_template("gemma3-tools.jinja")
    assert probe_chat_template(text) is None
    assert tl.LlamaModel.from_catalog().tool_call_family() is tl.models.ToolCallFamily.HERMES
    chat = ChatTemplate(text, bos_token="<bos>", eos_token="<eos>")

    offered = chat.render(projected_exchange()[:2], [CHECK_STOCK.json_schema()])
    assert offered.startswith("<bos><start_of_turn>user\nYou are Mira, a shopkeeper.\n\n")
    assert '"name": "check_stock"' in offered
    assert "between <tool_call> and </tool_call>" in offered  # the instruction...
    assert "<tool name>" not in offered  # ...without a placeholder call a small model copies
    assert offered.endswith("Any shields?<end_of_turn>\n<start_of_turn>model\n")

    answered = chat.render(projected_exchange())
    assert answered == (
        "<bos><start_of_turn>user\nYou are Mira, a shopkeeper.\n\nAny shields?<end_of_turn>\n"
        "<start_of_turn>model\n"
        '<tool_call>{"name": "check_stock", "arguments": {"item": "oak shield"}}</tool_call>'
        "<end_of_turn>\n"
        "<start_of_turn>user\n<tool_response>LEDGER-7: 1 oak shield at 25 gold</tool_response>"
        "<end_of_turn>\n<start_of_turn>model\n"
    )
    # What the model is shown as a past call is what the HERMES parser reads back.
    past_call = answered.split("<start_of_turn>model\n")[1].split("<end_of_turn>")[0]
    (parsed,) = parse_tool_calls(past_call, tl.models.ToolCallFamily.HERMES).calls
    assert parsed.arguments == {"item": "oak shield"}


def test_default_template_groups_consecutive_results_in_one_user_turn() -> None:
    chat = ChatTemplate(packaged_template("gemma3-tools.jinja"), bos_token="<bos>")
    messages = [
        *projected_exchange()[1:],
        {"role": "tool", "tool_call_id": "c0000002b", "content": "second"},
        {"role": "assistant", "content": "Here you go."},
        {"role": "user", "content": "Thanks"},
    ]
    prompt = chat.render(messages)
    assert prompt.count("<start_of_turn>user") == 3
    assert "</tool_response>\n<tool_response>second</tool_response><end_of_turn>" in prompt
    assert "<start_of_turn>model\nHere you go.<end_of_turn>" in prompt


# --- grammars ---------------------------------------------------------------------------------


@pytest.mark.parametrize("family", list(tl.models.ToolCallFamily))
@pytest.mark.parametrize("tools", [[CHECK_STOCK], [CHECK_STOCK, HAGGLE]], ids=["one", "two"])
def test_grammar_head_and_tail_make_a_call_the_family_parser_reads(
    family: tl.models.ToolCallFamily, tools: list[tl.ToolDefinition]
) -> None:
    spec = tool_call_grammar([t.json_schema() for t in tools], family)
    assert "root ::=" in spec.gbnf
    for tool in tools:
        assert json.dumps(tool.name) in spec.forced + spec.gbnf.replace('\\"', '"')
    # Completing the forced head the way the grammar allows must parse as that call.
    key = "parameters" if family is tl.models.ToolCallFamily.LLAMA3 else "arguments"
    body = '{"item": "sword"}}'
    if len(tools) > 1:
        body = f'"check_stock", "{key}": ' + body
    text = (spec.trigger or "") + spec.forced + body + FAMILIES[family].tail
    (call,) = parse_tool_calls(text, family).calls
    assert (call.name, call.arguments) == ("check_stock", {"item": "sword"})


def test_grammar_bounds_strings_and_keeps_declared_types() -> None:
    spec = tool_call_grammar([HAGGLE.json_schema(), CHECK_STOCK.json_schema()], "hermes")
    rules = dict(line.split(" ::= ", 1) for line in spec.gbnf.splitlines())
    assert rules["args-0-gold-kv"].endswith(" integer")
    assert rules["args-0-final-kv"].endswith(" boolean")
    assert rules["root"] == '(tool-0 | tool-1) "}" "</tool_call>"'
    # A string argument holds 1 to 200 characters: never "" (a small model's greedy pick).
    assert rules["args-1-item"].count("char") == 200


@pytest.mark.parametrize("max_tokens", [24, 48, 100])
def test_string_caps_let_the_longest_call_close_within_the_budget(max_tokens: int) -> None:
    tools = [CHECK_STOCK.json_schema(), HAGGLE.json_schema()]
    for chosen in ([tools[0]], tools):
        caps = string_caps(chosen, tl.models.ToolCallFamily.HERMES, max_tokens)  # 1 token per char
        spec = tool_call_grammar(chosen, tl.models.ToolCallFamily.HERMES, caps)
        # The longest completion the grammar allows for check_stock, counted as len() counts.
        longest = '{"item": "' + "0" * caps[0] + '"}}</tool_call>'
        if len(chosen) > 1:
            longest = '"check_stock", "arguments": ' + longest
        assert len(longest) <= max_tokens or caps[0] == 1
        assert spec.gbnf.count("char") >= caps[0]
    assert string_caps([HAGGLE.json_schema()], tl.models.ToolCallFamily.HERMES, 10) == [
        200
    ]  # no str


@pytest.mark.parametrize("family", list(tl.models.ToolCallFamily))
def test_parser_and_grammar_read_the_same_family_table(family: tl.models.ToolCallFamily) -> None:
    markup = FAMILIES[family]
    arguments: dict[str, object] = {"item": "oak shield", "count": 2}
    written = markup.write("check_stock", arguments)
    # What the table writes, the parser reads back, from the opener and from any marker.
    for text in [written, *(m + written[len(markup.opener) :] for m in markup.markers)]:
        (call,) = parse_tool_calls(text, family).calls
        assert (call.name, call.arguments) == ("check_stock", arguments)
    # The grammar forces the table's opener and call head, and closes with the table's tail.
    spec = tool_call_grammar([CHECK_STOCK.json_schema()], family)
    head = (spec.trigger or "") + spec.forced
    assert head.startswith(markup.opener)
    assert written.startswith(head)
    root = dict(line.split(" ::= ", 1) for line in spec.gbnf.splitlines())["root"]
    assert root.endswith(json.dumps(markup.tail) if markup.tail else '"}"')
