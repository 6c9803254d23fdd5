"""A `required` tool-call grammar never truncates a call: whatever `max_tokens` says, the
constrained call gets the tokens its grammar may need to reach its closer.

Checked on the real embedded default model (Gemma 3 270M, which defaults to `required`) with
three tools at every `max_tokens` from 1 to 40. Greedy sampling makes a generation a function of
its prompt, grammar and budget; since the budget of a constrained call is at least the grammar's
bound, the output depends only on the grammar, so one generation per distinct grammar (the
string caps `max_tokens` gives) stands for every `max_tokens` that builds it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import turnloom as tl
from turnloom.engine.inference.llama import string_caps, tool_call_grammar
from turnloom.engine.inference.llama.grammar import call_token_bound

MODEL = "gemma"
FAMILY = tl.models.ToolCallFamily.HERMES

TOOLS = [
    tl.ToolDefinition(
        name="open_door",
        description="Open a door of the tavern.",
        parameters=[tl.ToolParamDefinition("door_id", "string", "Which door, e.g. 'north'.")],
    ),
    tl.ToolDefinition(
        name="check_stock",
        description="Look up how many of an item the shop has.",
        parameters=[tl.ToolParamDefinition("item", "string", "The item, e.g. 'sword'.")],
    ),
    tl.ToolDefinition(
        name="haggle",
        description="Offer a price for an item.",
        parameters=[
            tl.ToolParamDefinition("gold", "integer", "The offer."),
            tl.ToolParamDefinition("final", "boolean", "Is it the last offer?"),
        ],
    ),
]
SCHEMAS = [tool.json_schema() for tool in TOOLS]
PYTHON_TYPES = {"string": str, "integer": int, "boolean": bool}


@pytest.fixture(scope="module")
def model() -> Iterator[tl.LlamaModel]:
    """The catalog's default model with its own defaults (the `required` grammar)."""
    llama = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name=MODEL, n_ctx=512).load()
    assert llama.tool_grammar is tl.models.ToolGrammar.REQUIRED
    yield llama
    llama.close()


def call_graph(max_tokens: int) -> tl.GraphDescription:
    params = tl.ToolCallParams(
        tools=TOOLS,
        disposition=tl.ToolCallDisposition.AwaitResult,
        mode=tl.ToolCallMode.DetectOnly,
        system_prompt="Use a tool for what the player asks.",
        decision="generate",  # the grammar under test (the model's default is to score)
        sampling=tl.SamplingParams(temperature=0.0, max_tokens=max_tokens),
        tool_called_exit="done",
        no_tool_called_exit="done",
    )
    done = tl.GenerateParams(sampling=tl.SamplingParams(temperature=0.0, max_tokens=1))
    return (
        tl.GraphDescription()
        .add_node("call", params)
        .add_node("done", done)
        .set_start_node("call")
        .set_default_model_name(MODEL)
    )


def test_every_max_tokens_gives_a_complete_schema_valid_call(model: tl.LlamaModel) -> None:
    def count(text: str) -> int:
        return len(model.tokenize(text))

    by_caps: dict[tuple[int, ...], list[int]] = {}
    for max_tokens in range(1, 41):
        caps = tuple(string_caps(SCHEMAS, FAMILY, max_tokens, count))
        by_caps.setdefault(caps, []).append(max_tokens)
    results = {}
    with tl.Engine(model) as engine:
        for caps, budgets in by_caps.items():
            max_tokens = budgets[0]
            agent = engine.create_agent(call_graph(max_tokens), enable_diagnostics=True)
            step = agent.send_message("Open the north door, please.")
            generation = model.generations[-1]
            results[max_tokens] = generation.text
            assert generation.grammar == "required"
            assert generation.text.endswith("}}</tool_call>"), (max_tokens, generation.text)
            assert generation.tokens <= max(
                max_tokens, tool_call_grammar(SCHEMAS, FAMILY, caps).max_tokens
            )
            assert step.pause is not None, (max_tokens, generation.text)
            (call,) = step.pause.pending_calls
            (tool,) = [t for t in TOOLS if t.name == call.tool_name]
            assert set(call.arguments) == {p.name for p in tool.parameters}
            for param in tool.parameters:
                value = call.arguments[param.name]
                assert type(value) is PYTHON_TYPES[param.type], (max_tokens, call.arguments)
                if param.type == "string":
                    index = TOOLS.index(tool)
                    assert 1 <= len(value) <= caps[index], (max_tokens, value)
    assert min(results) == 1 and len(results) == len(by_caps)


@pytest.mark.parametrize("cap", [1, 7, 200])
def test_call_token_bound_covers_the_longest_call_the_grammar_allows(cap: int) -> None:
    # Each value at its longest, each string character a 6-byte escape, every optional space.
    longest = {
        "door_id": "\\u00e9" * cap,
        "item": "\\u00e9" * cap,
        "gold": "-" + "9" * 16,
        "final": "false",
    }
    bound = call_token_bound(SCHEMAS, FAMILY, [cap, cap, cap])
    for tool in TOOLS:
        # The grammar allows one space after "{", each key, ":", "," and each value.
        args = ", ".join(
            f'"{p.name}" : {_quoted(p.type, longest[p.name])} ' for p in tool.parameters
        )
        call = f'{{"name": {json.dumps(tool.name)}, "arguments": {{ {args}}} }}</tool_call>'
        assert len(call.encode("utf-8")) <= bound, (tool.name, bound, call)


def _quoted(kind: str, value: str) -> str:
    return f'"{value}"' if kind == "string" else value
