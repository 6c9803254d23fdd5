"""`ServedModel` against a real llama-cpp-python server (see conftest): streaming, a pause with a
param change before the Generate, an AwaitResult tool call under the grammar, cancel, the time
budget, a server killed mid-stream, and a server that is not there.

Nothing is mocked. Replies are short and greedy; the model is a small base model, so the tests
assert on what the engine does with its output, never on the wording.
"""

from __future__ import annotations

import threading

import pytest

import turnloom as tl
from tests.helpers import Recorder
from tests.served.conftest import MODEL, LlamaServer, free_port

CHECK_STOCK = tl.ToolDefinition(
    name="check_stock",
    description="Look up how many of an item the shop has, and its price.",
    parameters=[tl.ToolParamDefinition("item", "string", "The item, e.g. 'sword'.")],
)
#: A prompt the model answers at length (for the tests that stop a reply midway).
LONG = "Count from one to one hundred: one, two, three,"


def greedy(max_tokens: int, **more: int) -> tl.SamplingParams:
    """Deterministic sampling with a short reply."""
    return tl.SamplingParams(temperature=0.0, max_tokens=max_tokens, **more)


def generate_graph(max_tokens: int = 6, **sampling: int) -> tl.GraphDescription:
    """One streaming Generate node 'say'."""
    params = tl.GenerateParams(sampling=greedy(max_tokens, **sampling), stream=True)
    return (
        tl.GraphDescription()
        .add_node("say", params)
        .set_start_node("say")
        .set_default_model_name(MODEL)
    )


def deltas_until(agent: tl.Agent, count: int) -> tuple[list[str], threading.Event]:
    """Record the agent's reply deltas; the event is set once `count` have come."""
    deltas: list[str] = []
    reached = threading.Event()

    def on_text(text: str, is_delta: bool, is_final: bool) -> None:
        if is_delta and not is_final:
            deltas.append(text)
            if len(deltas) >= count:
                reached.set()

    agent.set_on_answer_text(on_text)
    return deltas, reached


def test_a_turn_streams_deltas_from_the_server(
    served_engine: tl.Engine, served: tl.ServedModel
) -> None:
    agent = served_engine.create_agent(generate_graph(max_tokens=8))
    rec = Recorder(agent)
    result = agent.send_message("Tell me about the old castle on the hill.").final
    assert result.status is tl.TurnStatus.SUCCESS
    deltas = [e[1] for e in rec.events if e[0] == "text" and e[2] and not e[3]]
    stats = served.generations[-1]
    assert len(deltas) >= 2  # streamed piece by piece, not in one block
    assert "".join(deltas) == result.text == stats.text
    assert 1 <= result.tokens_generated == stats.tokens <= 8
    assert rec.finals() == [result.text]
    # Rendered by the catalog's template here; the server adds the BOS itself.
    assert stats.prompt == (
        "<start_of_turn>user\nTell me about the old castle on the hill.<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_pause_change_params_then_resume_into_generate(
    served_engine: tl.Engine, served: tl.ServedModel
) -> None:
    graph = (
        tl.GraphDescription()
        .add_node("listen", tl.PauseParams(default_exit="answer"))
        .add_node("answer", tl.GenerateParams(system_prompt="You are Mira.", sampling=greedy(4)))
        .set_start_node("listen")
        .set_default_model_name(MODEL)
    )
    agent = served_engine.create_agent(graph)
    step = agent.send_message("Do you sell swords?")
    assert step.pause is not None and step.pause.node_name == "listen"
    agent.change_params("answer", {"system_prompt": "You are Mira. The player is trusted."})
    result = agent.resume().final
    assert result.status is tl.TurnStatus.SUCCESS and result.text
    prompt = served.generations[-1].prompt
    assert "The player is trusted." in prompt and "Do you sell swords?" in prompt


def test_await_result_tool_call_round_trip_under_the_grammar(
    served_engine: tl.Engine, served: tl.ServedModel
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
                sampling=greedy(24),
                decision="generate",  # the entry's default (score) is test_scoring.py's
                tool_called_exit="answer",
                no_tool_called_exit="answer",
            ),
        )
        .add_node("answer", tl.GenerateParams(sampling=greedy(4)))
        .set_start_node("stock")
        .set_default_model_name(MODEL)
    )
    agent = served_engine.create_agent(graph, enable_diagnostics=True)
    step = agent.send_message("Do you have any swords?")
    call_stats = served.generations[-1]
    # The catalog entry's grammar mode: the call's head is prompt, the rest constrained by the
    # GBNF sent in llama-cpp-python's `grammar` field.
    assert call_stats.grammar == "required"
    assert call_stats.prompt.endswith("<start_of_turn>model\n")
    assert call_stats.text.startswith('<tool_call>{"name": "check_stock", "arguments": ')
    assert step.pause is not None and step.pause.awaits_results
    (call,) = step.pause.pending_calls
    assert call.tool_name == "check_stock" and isinstance(call.arguments["item"], str)
    assert call.arguments["item"]  # the grammar's minLength: never an empty answer
    step = agent.resume(tool_results=[(call.call_id, "LEDGER: 3 swords at 40 gold")])
    assert step.final.status is tl.TurnStatus.SUCCESS
    answer_prompt = served.generations[-1].prompt
    assert "LEDGER: 3 swords at 40 gold" in answer_prompt
    assert answer_prompt.index('"name": "check_stock"') < answer_prompt.index("LEDGER")
    assert answer_prompt.endswith("<start_of_turn>model\n")


def test_cancel_mid_stream_closes_it_and_the_model_serves_on(
    served_engine: tl.Engine, served: tl.ServedModel
) -> None:
    agent = served_engine.create_agent(generate_graph(max_tokens=300, repeat_penalty=1))
    deltas, started = deltas_until(agent, 3)
    pending = agent.send_message_async(LONG)
    assert started.wait(60), "no tokens streamed"
    assert agent.cancel()
    seen = len(deltas)
    result = pending.result(30).final
    assert result.status is tl.TurnStatus.CANCELLED
    assert served.wait_idle(30)
    stats = served.generations[-1]
    assert stats.cancelled and stats.error is None
    assert stats.tokens_at_cancel is not None and seen <= stats.tokens_at_cancel < 300
    assert len(deltas) == seen  # nothing reached the host after the cancel
    again = served_engine.create_agent(generate_graph(max_tokens=2)).send_message("Hi").final
    assert again.status is tl.TurnStatus.SUCCESS


def test_time_budget_gives_4002_and_the_agent_goes_on(
    served_engine: tl.Engine, served: tl.ServedModel
) -> None:
    agent = served_engine.create_agent(generate_graph(max_tokens=300, timeout_ms=300))
    result = agent.send_message(LONG).final
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4002)
    assert served.wait_idle(30)
    assert served.generations[-1].cancelled
    agent.change_params("say", {"sampling": greedy(2)})
    assert agent.send_message("Hi").final.status is tl.TurnStatus.SUCCESS


def test_server_killed_mid_stream_gives_4001_and_the_agent_goes_on(
    served_engine: tl.Engine, server: LlamaServer
) -> None:
    agent = served_engine.create_agent(generate_graph(max_tokens=300, repeat_penalty=1))
    _, started = deltas_until(agent, 2)
    pending = agent.send_message_async(LONG)
    assert started.wait(60), "no tokens streamed"
    server.kill()
    result = pending.result(30).final
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4001)
    assert f"{server.url}/v1/completions" in result.error_message
    assert "mid-reply" in result.error_message or "without [DONE]" in result.error_message
    # Down: the next turn fails the same way, at once, naming the server.
    down = agent.send_message("Hi").final
    assert (down.status, down.error_code) == (tl.TurnStatus.ERROR, 4001)
    assert f"cannot connect to {server.url}" in down.error_message
    # Back up (same port): the same agent carries on.
    server.start()
    agent.change_params("say", {"sampling": greedy(2)})
    assert agent.send_message("Hi").final.status is tl.TurnStatus.SUCCESS


def test_no_server_at_the_first_turn_is_a_clear_4001() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    model = tl.ServedModel(url, name=MODEL, entry=tl.models.DEFAULT_MODEL, retries=2)
    with tl.Engine(model) as engine:
        agent = engine.create_agent(generate_graph())  # nothing asked of the server yet
        result = agent.send_message("Hello?").final
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4001)
    assert f"model '{MODEL}': cannot connect to {url} (3 attempts)" in result.error_message


def test_no_server_at_agent_creation_when_the_template_comes_from_it() -> None:
    # No catalog entry: the chat template is the server's (llama.cpp's /props), so a ToolCall
    # graph cannot be checked without it.
    url = f"http://127.0.0.1:{free_port()}"
    model = tl.ServedModel(url, name=MODEL, server_kind="llama.cpp", retries=0)
    graph = (
        tl.GraphDescription()
        .add_node("act", tl.ToolCallParams(tools=[CHECK_STOCK]))
        .set_start_node("act")
        .set_default_model_name(MODEL)
    )
    with tl.Engine(model) as engine, pytest.raises(tl.GraphCompilationFailed) as caught:
        engine.create_agent(graph)
    assert caught.value.code == 3003
    assert "its chat template could not be read" in str(caught.value)
    assert f"cannot connect to {url}" in str(caught.value)
