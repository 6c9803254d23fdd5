"""The tool probe reads back the call a template renders, and a template override re-detects the
family and grammar, so the probe checks itself; no GGUF is read."""

from __future__ import annotations

import pytest

import turnloom as tl
from tests.engine.test_templates import ACCEPTS, no_gguf, template, tool_graph
from turnloom.engine.inference.catalog import packaged_template
from turnloom.engine.inference.llama import probe_chat_template

Family = tl.models.ToolCallFamily
ToolGrammar = tl.models.ToolGrammar

# A template that offers tools, shows calls and results, but writes calls in a markup no family
# reads: accepting it would give a model whose every call is ignored.
_TURNS = (
    "{% for m in messages %}<|{{ m.role }}|>"
    "{% if m.tool_calls %}{% for c in m.tool_calls %}{CALL_BODY}{% endfor %}"
    "{% else %}{{ m.content }}{% endif %}<|end|>{% endfor %}"
    "{% if tools %}<|tools|>{% for t in tools %}{{ t.function.name }} {% endfor %}{% endif %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def _with_call_body(body: str) -> str:
    return _TURNS.replace("{CALL_BODY}", body)


UNREADABLE = _with_call_body(
    "<<{{ c.function.name }} :: {% for k, v in c.function.arguments.items() %}"
    "{{ k }} = {{ v }}{% endfor %}>>"
)
# Hermes markup, but the arguments reach the call under another key: read, but wrongly.
MISREAD = _with_call_body(
    '<tool_call>{"name": "{{ c.function.name }}", '
    '"arguments": {"q": "{{ c.function.arguments.query }}"}}</tool_call>'
)
# The same, with the arguments the call was given: read back exactly.
READABLE = _with_call_body(
    '<tool_call>{"name": "{{ c.function.name }}", '
    '"arguments": {{ c.function.arguments | tojson }}}</tool_call>'
)


# --- the probe reads back the call it renders -------------------------------------------------


@pytest.mark.parametrize(("stem", "family"), sorted(ACCEPTS.items()))
def test_accepted_templates_render_calls_their_family_reads_back(stem: str, family: Family) -> None:
    assert probe_chat_template(template(stem)) is None
    assert probe_chat_template(template(stem), family) is None


def test_the_default_template_round_trips() -> None:
    assert probe_chat_template(packaged_template("gemma3-tools.jinja"), Family.HERMES) is None


def test_a_readable_synthetic_template_passes() -> None:
    assert probe_chat_template(READABLE) is None


def test_a_call_no_parser_reads_is_refused_naming_the_family() -> None:
    reason = probe_chat_template(UNREADABLE)
    assert reason is not None
    assert "the generic tool-call parser finds no call" in reason
    assert "<<turnloom_probe_tool :: query = turnloom-probe-argument>>" in reason
    reason = probe_chat_template(UNREADABLE, Family.MISTRAL)
    assert reason is not None and "the mistral tool-call parser" in reason


def test_a_call_read_wrongly_is_refused() -> None:
    reason = probe_chat_template(MISREAD, Family.HERMES)
    assert reason is not None
    assert "the hermes tool-call parser misreads" in reason
    assert "{'q': 'turnloom-probe-argument'}" in reason


def test_a_call_shown_after_its_result_is_refused() -> None:
    # Renders tool results first, then the assistant's calls: no call precedes its result.
    backwards = (
        "{% for m in messages %}{% if m.role == 'tool' %}{{ m.content }}{% endif %}{% endfor %}"
        "{% for m in messages %}{% if m.role != 'tool' %}"
        "{% for c in m.tool_calls or [] %}<tool_call>{{ c.function | tojson }}</tool_call>"
        "{% endfor %}{{ m.content }}{% endif %}{% endfor %}"
        "{% for t in tools or [] %}{{ t.function.name }}{% endfor %}"
    )
    reason = probe_chat_template(backwards)
    assert reason == (
        "its chat template does not render the assistant's tool call before its result"
    )


def test_an_unreadable_template_is_refused_at_agent_creation() -> None:
    model = tl.LlamaModel(no_gguf, name="deaf", chat_template=UNREADABLE)
    with tl.Engine(model) as engine, pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(tool_graph("deaf"))
    assert info.value.code == tl.ErrorCode.GraphCompilationFailed
    assert "'ask'" in info.value.message
    assert "model 'deaf'" in info.value.message
    assert "generic tool-call parser finds no call" in info.value.message


def test_a_family_given_against_the_template_is_probed_with_that_family() -> None:
    model = tl.LlamaModel(no_gguf, chat_template=MISREAD, tool_call_family=Family.HERMES)
    reason = model.tool_support_error()
    assert reason is not None and "hermes tool-call parser misreads" in reason


# --- a template override re-detects -----------------------------------------------------------


def test_a_catalog_template_override_re_detects_family_and_grammar() -> None:
    default = tl.LlamaModel.from_catalog()
    assert default.tool_call_family() is Family.HERMES
    assert default.tool_grammar is ToolGrammar.REQUIRED

    model = tl.LlamaModel.from_catalog(
        tl.models.DEFAULT_MODEL, chat_template=template("mistralai-Mistral-Nemo-Instruct-2407")
    )
    assert model.entry.tool_call_family is None
    assert model.tool_call_family() is Family.MISTRAL
    assert model.tool_grammar is ToolGrammar.OFF
    assert model.tool_support_error() is None
    assert not model.loaded

    llama3 = tl.LlamaModel.from_catalog(
        chat_template=template("meta-llama-Llama-3.2-3B-Instruct"), name="g-llama3"
    )
    assert (llama3.name, llama3.tool_call_family()) == ("g-llama3", Family.LLAMA3)


def test_an_overridden_template_the_family_cannot_read_is_refused() -> None:
    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, chat_template=UNREADABLE)
    assert model.tool_call_family() is Family.GENERIC
    reason = model.tool_support_error()
    assert reason is not None and "generic tool-call parser finds no call" in reason


def test_explicit_family_and_grammar_survive_a_template_override() -> None:
    model = tl.LlamaModel.from_catalog(
        tl.models.DEFAULT_MODEL,
        chat_template=template("Qwen-Qwen3-0.6B"),
        tool_call_family=Family.MISTRAL,
        tool_grammar="lazy",
    )
    assert model.tool_call_family() is Family.MISTRAL
    assert model.tool_grammar is ToolGrammar.LAZY


def test_the_entrys_own_template_keeps_its_family_and_grammar() -> None:
    entry = tl.models.catalog_entry(tl.models.DEFAULT_MODEL)
    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, chat_template=entry.chat_template)
    assert model.tool_call_family() is Family.HERMES
    assert model.tool_grammar is ToolGrammar.REQUIRED
    # Other overrides leave the template, and so the family and grammar, alone.
    assert tl.LlamaModel.from_catalog(n_ctx=256).tool_grammar is ToolGrammar.REQUIRED


def test_entry_replace_and_registered_entries_re_detect() -> None:
    entry = tl.models.catalog_entry(tl.models.DEFAULT_MODEL)
    copy = entry.replace(chat_template=template("Qwen-Qwen2.5-7B-Instruct"))
    assert (copy.tool_call_family, copy.tool_grammar) == (None, ToolGrammar.OFF)
    assert entry.tool_call_family is Family.HERMES  # the catalog's entry is unchanged

    tl.register_model(copy.replace(name="qwen-on-gemma"), replace=True)
    model = tl.LlamaModel.from_catalog("qwen-on-gemma")
    assert (model.tool_call_family(), model.tool_grammar) == (Family.HERMES, ToolGrammar.OFF)

    direct = tl.LlamaModel(no_gguf, chat_template=template("meta-llama-Llama-3.2-3B-Instruct"))
    assert (direct.tool_call_family(), direct.tool_grammar) == (Family.LLAMA3, ToolGrammar.OFF)
