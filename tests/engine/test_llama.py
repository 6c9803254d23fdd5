"""The `llama` backend on the real embedded default model (Gemma 3 270M Q4_K_M), through the
public API: streaming, a grammar-constrained tool call with an AwaitResult pause and its answer,
cancellation, budgets, prefix reuse, instance pools, the template probe on a real GGUF.

Outputs are kept short (a few tokens, greedy) so the file runs in well under a minute on two
cores. The model is a small base model: tests assert on what the engine does with its output,
never on the wording.
"""

from __future__ import annotations

import asyncio
import re
import threading
import uuid
from collections.abc import Iterator

import pytest

import turnloom as tl
from tests.helpers import Recorder

MODEL = "gemma"

CHECK_STOCK = tl.ToolDefinition(
    name="check_stock",
    description="Look up how many of an item the shop has, and its price.",
    parameters=[tl.ToolParamDefinition("item", "string", "The item, e.g. 'sword'.")],
)


def greedy(max_tokens: int, **more: int) -> tl.SamplingParams:
    """Deterministic sampling with a short reply."""
    return tl.SamplingParams(temperature=0.0, max_tokens=max_tokens, **more)


def generate_graph(
    max_tokens: int = 6, system_prompt: str = "", **sampling: int
) -> tl.GraphDescription:
    """One streaming Generate node 'say'."""
    params = tl.GenerateParams(
        system_prompt=system_prompt, sampling=greedy(max_tokens, **sampling), stream=True
    )
    return (
        tl.GraphDescription()
        .add_node("say", params)
        .set_start_node("say")
        .set_default_model_name(MODEL)
    )


@pytest.fixture(scope="module")
def model() -> Iterator[tl.LlamaModel]:
    """The catalog's default model, loaded once for the module; tool calls grammar-required."""
    llama = tl.LlamaModel.from_catalog(
        tl.models.DEFAULT_MODEL, name=MODEL, n_ctx=1024, tool_grammar=tl.models.ToolGrammar.REQUIRED
    ).load()
    yield llama
    llama.close()


@pytest.fixture
def llama_engine(model: tl.LlamaModel) -> Iterator[tl.Engine]:
    """An embedded engine (real clock) over the shared model."""
    with tl.Engine(model) as eng:
        yield eng


def test_engine_without_models_uses_the_catalog_default_lazily() -> None:
    with tl.Engine() as engine:
        (default,) = engine.models.values()
        assert isinstance(default, tl.LlamaModel)
        assert default.name == tl.models.DEFAULT_MODEL
        assert not default.loaded
        assert default.tool_support_error() is None  # the shipped template, no weights needed


def test_generate_streams_token_deltas(llama_engine: tl.Engine, model: tl.LlamaModel) -> None:
    agent = llama_engine.create_agent(generate_graph(max_tokens=8))
    rec = Recorder(agent)
    result = agent.send_message("Tell me about the old castle on the hill.").result
    assert result is not None and result.status is tl.TurnStatus.SUCCESS
    deltas = [e[1] for e in rec.events if e[0] == "text" and e[2] and not e[3]]
    stats = model.generations[-1]
    assert len(deltas) >= 2  # streamed piece by piece, not in one block
    assert "".join(deltas) == result.text == stats.text
    assert 1 <= result.tokens_generated == stats.tokens <= 8
    assert rec.finals() == [result.text]
    assert stats.prompt.endswith(
        "Tell me about the old castle on the hill.<end_of_turn>\n<start_of_turn>model\n"
    )


def test_prompt_has_exactly_one_bos(model: tl.LlamaModel) -> None:
    messages = [{"role": "user", "content": "Hello"}]
    assert model.render_prompt(messages).startswith("<bos>")
    ids = model.prompt_token_ids(messages)
    (bos,) = model.tokenize("<bos>")
    assert ids[0] == bos and ids.count(bos) == 1


def test_tool_call_pauses_for_the_result_and_the_answer_sees_it(
    llama_engine: tl.Engine, model: tl.LlamaModel
) -> None:
    graph = (
        tl.GraphDescription()
        .add_node(
            "stock",
            tl.ToolCallParams(
                tools=[CHECK_STOCK],
                disposition=tl.ToolCallDisposition.AwaitResult,
                mode=tl.ToolCallMode.DetectOnly,
                system_prompt="Call check_stock when the customer asks about an item.",
                decision="generate",  # the model writes the call (its default is to score)
                sampling=greedy(24),
                tool_called_exit="answer",
                no_tool_called_exit="answer",
            ),
        )
        .add_node("answer", tl.GenerateParams(sampling=greedy(4)))
        .set_start_node("stock")
        .set_default_model_name(MODEL)
    )
    agent = llama_engine.create_agent(graph, enable_diagnostics=True)
    step = agent.send_message("Do you sell swords?")
    assert step.pause is not None and step.pause.node_name == "stock"
    (call,) = step.pause.pending_calls
    assert call.tool_name == "check_stock"
    item = call.arguments["item"]
    assert isinstance(item, str) and item  # the grammar allows no empty string
    tool_gen = model.generations[-1]
    assert tool_gen.grammar == "required"
    assert tool_gen.text.startswith('<tool_call>{"name": "check_stock", "arguments": {"item": ')
    assert '"name": "check_stock"' in tool_gen.prompt  # the tool was offered by the template

    step = agent.resume(tool_results=[(call.call_id, "LEDGER: 3 steel swords at 40 gold")])
    assert step.result is not None and step.result.status is tl.TurnStatus.SUCCESS
    answer_prompt = model.generations[-1].prompt
    rendered_call = f'<tool_call>{{"name": "check_stock", "arguments": {{"item": "{item}"}}}}'
    assert rendered_call in answer_prompt
    assert "<tool_response>LEDGER: 3 steel swords at 40 gold</tool_response>" in answer_prompt
    assert answer_prompt.index(rendered_call) < answer_prompt.index("LEDGER")
    assert answer_prompt.endswith("<start_of_turn>model\n")
    nodes = step.result.debug_info["nodes"]  # type: ignore[index]
    assert [n["exit_route"] for n in nodes] == ["tool_called", "default"]


def test_cancel_mid_generation_stops_the_worker(
    llama_engine: tl.Engine, model: tl.LlamaModel
) -> None:
    agent = llama_engine.create_agent(generate_graph(max_tokens=300, repeat_penalty=1))
    deltas: list[str] = []
    started = threading.Event()

    def on_text(text: str, is_delta: bool, is_final: bool) -> None:
        if is_delta and not is_final:
            deltas.append(text)
            if len(deltas) == 3:
                started.set()

    agent.set_on_answer_text(on_text)
    pending = agent.send_message_async("Count from one to one hundred: one, two, three,")
    assert started.wait(30), "no tokens streamed"
    assert agent.cancel()
    seen = len(deltas)
    result = pending.result(30).result
    assert result is not None and result.status is tl.TurnStatus.CANCELLED
    assert model.wait_idle(30)
    stats = model.generations[-1]
    assert stats.cancelled and stats.error is None
    # The worker stops at its next token check, a token or two past the cancel.
    assert stats.tokens_at_cancel is not None
    assert seen <= stats.tokens_at_cancel <= stats.tokens <= stats.tokens_at_cancel + 2
    assert stats.tokens < 300
    assert len(deltas) == seen  # nothing reached the host after the cancel


def test_time_budget_ends_generation_with_4002_and_stops_the_worker(
    llama_engine: tl.Engine, model: tl.LlamaModel
) -> None:
    agent = llama_engine.create_agent(
        generate_graph(max_tokens=400, timeout_ms=400, repeat_penalty=1)
    )
    result = agent.send_message("Count from one to one hundred: one, two, three,").result
    assert result is not None
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4002)
    assert model.wait_idle(30)
    assert model.generations[-1].cancelled
    assert model.generations[-1].tokens < 400
    # The agent is still usable (4002 is turn-local), here with the budget lifted.
    params = agent.get_params("say")
    assert isinstance(params, tl.GenerateParams)
    params.sampling = greedy(3)
    agent.change_params("say", params)
    again = agent.send_message("Hi").result
    assert again is not None and again.status is tl.TurnStatus.SUCCESS


def test_prompt_beyond_the_context_fails_with_4001(llama_engine: tl.Engine) -> None:
    # A message that alone passes the context: nothing the history budget leaves out helps,
    # and the error names both sizes.
    agent = llama_engine.create_agent(generate_graph())
    result = agent.send_message("word " * 1500).result
    assert result is not None
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4001)
    assert re.search(
        r"the prompt is 1[0-9]{3} tokens .* over its budget of 1018 tokens \(the context of "
        r"1024 less the reply's room\)",
        result.error_message,
    ), result.error_message
    # With trimming off, the model itself refuses it, as before the budget existed.
    graph = generate_graph()
    graph.nodes[0][1].history.trim = False
    result = llama_engine.create_agent(graph).send_message("word " * 1500).result
    assert result is not None
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4001)
    assert "does not fit its context of 1024 tokens" in result.error_message


def test_second_turn_reuses_the_prompt_prefix(
    llama_engine: tl.Engine, model: tl.LlamaModel
) -> None:
    # A fresh system prompt, so the first turn cannot lean on an earlier test's cache.
    system = f"Session {uuid.uuid4()}. You are Mira, who keeps a shop of arms and armour. " * 3
    agent = llama_engine.create_agent(generate_graph(max_tokens=4, system_prompt=system))
    agent.send_message("Good morning!")
    first = model.generations[-1]
    agent.send_message("What do you sell?")
    second = model.generations[-1]
    assert second.prompt.startswith(first.prompt)
    assert second.prompt_tokens > first.prompt_tokens
    assert first.prompt_tokens_evaluated > first.prompt_tokens - 8
    assert second.prompt_tokens_evaluated < first.prompt_tokens_evaluated
    assert second.prompt_tokens_evaluated < second.prompt_tokens - first.prompt_tokens + 8


def test_instance_pool_runs_agents_in_parallel_and_keeps_each_on_its_instance() -> None:
    pool = tl.LlamaModel.from_catalog(name=MODEL, n_ctx=256, instances=2).load()

    async def scenario() -> tuple[int, int]:
        async with tl.AsyncEngine(pool) as engine:
            one = await engine.create_agent(generate_graph(max_tokens=6))
            two = await engine.create_agent(generate_graph(max_tokens=6))
            await asyncio.gather(one.send_message("Hello"), two.send_message("Hi there"))
            await one.send_message("And again")
            return one.agent_id, two.agent_id

    try:
        one, two = asyncio.run(scenario())
        by_agent: dict[int, list[tl.models.GenerationStats]] = {}
        for stats in pool.generations:
            by_agent.setdefault(stats.agent_id, []).append(stats)
        (a1, a2), (b,) = by_agent[one], by_agent[two]
        assert a1.instance == a2.instance != b.instance
        # The two agents' first generations overlapped in time on their two threads.
        assert a1.started < b.started + b.seconds and b.started < a1.started + a1.seconds
        assert a2.prompt_tokens_evaluated < a2.prompt_tokens  # its own cache survived
    finally:
        pool.close()


def test_gguf_without_template_is_refused_for_tool_calls(model: tl.LlamaModel) -> None:
    # The embedded GGUF carries no chat template: without the catalog's, tools cannot render.
    bare = tl.LlamaModel(model.model_path(), name="bare")
    graph = (
        tl.GraphDescription()
        .add_node("ask", tl.ToolCallParams(tools=[CHECK_STOCK]))
        .set_start_node("ask")
        .set_default_model_name("bare")
    )
    with tl.Engine(bare) as engine, pytest.raises(tl.TurnloomError) as info:
        engine.create_agent(graph)
    assert info.value.code == tl.ErrorCode.GraphCompilationFailed
    assert "'ask'" in info.value.message and "'bare'" in info.value.message
    assert "no chat template" in info.value.message
    assert not bare.loaded  # read from the GGUF's vocabulary, weights untouched


def test_demo_runs_on_the_real_model(model: tl.LlamaModel) -> None:
    from turnloom.demo import run_demo

    lines: list[str] = []
    run_demo(lines.append, model)
    text = "\n".join(lines)
    # The model's own decisions (scored by likelihood): the item the player named, or none.
    assert 'the model asks the game: check_stock(item="sword")' in text
    assert 'the model asks the game: check_stock(item="shield")' in text
    assert "DECIDE  the model chose no tool: small talk goes to 'chat'" in text
    assert "nobody resumed 'offer' within 1500 ms: its timeout exit goes to 'shrug'" in text
    assert text.count("END     success after 3 pauses") == 2
    assert "<tool_call>" not in text and "<start_of_turn>" not in text  # no raw markup shown
