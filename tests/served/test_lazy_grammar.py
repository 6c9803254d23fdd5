"""The lazy grammar over HTTP: free text until the model opens a call, then the stream is
closed and the call is asked for again, its head forced as prompt and the rest constrained.

The 270M model never opens a call by itself, so the server here is `scripted.ScriptedServer`
(real HTTP) streaming what a model that does would; the requests it gets are the check.
"""

from __future__ import annotations

import turnloom as tl
from tests.served.scripted import scripted_server, sse
from tests.served.test_served import CHECK_STOCK, MODEL, greedy


def test_a_call_opened_in_free_text_is_finished_under_the_grammar() -> None:
    with scripted_server() as server:
        server.replies = [
            (200, "text/event-stream", sse("Let me look. ", "<tool", "_call>", "{", "never read")),
            (200, "text/event-stream", sse('{"item": ', '"sword"}', "}</tool_call>")),
        ]
        model = tl.ServedModel(
            server.url, name=MODEL, server_kind="llama-cpp-python", entry="gemma3-270m",
            tool_grammar="lazy",
        )  # fmt: skip
        graph = (
            tl.GraphDescription()
            .add_node(
                "stock",
                tl.ToolCallParams(
                    tools=[CHECK_STOCK],
                    disposition=tl.ToolCallDisposition.Pause,
                    sampling=greedy(40),
                    decision="generate",
                ),
            )
            .set_start_node("stock")
            .set_default_model_name(MODEL)
        )
        with tl.Engine(model) as engine:
            step = engine.create_agent(graph).send_message("Any swords?")
        free, constrained = server.completions
    assert step.pause is not None
    (call,) = step.pause.pending_calls
    assert (call.tool_name, call.arguments) == ("check_stock", {"item": "sword"})
    stats = model.generations[-1]
    assert stats.grammar == "lazy-triggered"
    assert stats.text == (
        'Let me look. <tool_call>{"name": "check_stock", "arguments": {"item": "sword"}}'
        "</tool_call>"
    )
    assert "grammar" not in free and free["max_tokens"] == 40
    head = 'Let me look. <tool_call>{"name": "check_stock", "arguments": '
    assert constrained["prompt"] == free["prompt"] + head
    assert "check_stock" not in constrained["grammar"]  # the name is forced, not sampled
    assert "root ::=" in constrained["grammar"]
    # Three chunks were read before the opener showed: what is left of the budget goes on.
    assert constrained["max_tokens"] >= 40 - 3
