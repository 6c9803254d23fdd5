"""The history budget over `ServedModel`, against the real llama-cpp-python server (see
conftest): prompts are counted by the server's tokenizer, every turn of a long conversation
fits, and the oldest exchanges leave the prompt in chunks."""

from __future__ import annotations

import turnloom as tl
from tests.served.conftest import MODEL, LlamaServer

LINE = "Tell me about the old mill by the river and whether the miller still sells flour"


def test_a_long_conversation_over_a_served_model_fits_every_turn(server: LlamaServer) -> None:
    served = tl.ServedModel(
        server.url,
        model=MODEL,
        name=MODEL,
        server_kind="llama-cpp-python",
        entry=tl.models.DEFAULT_MODEL,
        n_ctx=1024,  # the server's --n_ctx; llama-cpp-python's server does not publish it
        retries=1,
    )
    local = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="local", n_ctx=1024)
    graph = (
        tl.GraphDescription()
        .add_node(
            "answer",
            tl.GenerateParams(
                system_prompt="You are Mira, a shopkeeper.",
                sampling=tl.SamplingParams(temperature=0.0, max_tokens=6),
                history=tl.HistoryParams(max_prompt_tokens=300),
            ),
        )
        .set_start_node("answer")
        .set_default_model_name(MODEL)
    )
    try:
        with tl.Engine(served) as engine:
            agent = engine.create_agent(graph, enable_diagnostics=True)
            trims = 0
            for i in range(14):
                result = agent.send_message(f"{i}: {LINE}").final
                assert result.status == tl.TurnStatus.SUCCESS, result
                history = result.debug_info["nodes"][0]["diagnostics"]["history"]
                assert history["prompt_tokens"] <= history["budget_tokens"] == 300
                trims += "newly_left_out" in history
                # Counted by the server's tokenizer, not by the one-token-per-byte fallback:
                # the same count as the GGUF's own tokenizer gives the same prompt.
                prompt = served.generations[-1].prompt
                assert abs(len(local.tokenize(prompt)) - history["prompt_tokens"]) <= 1
            assert trims >= 2
            assert len(agent.dialog) == 28
    finally:
        local.close()
