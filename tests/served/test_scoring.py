"""The `score` decision on a served model: llama-cpp-python's server (see conftest) scores as
the local model does, a ToolCall node decides the same way on both, and a server that returns
no log-probabilities is found out once and the node generates instead, saying why.

Scores are compared with a tolerance: both sides run the same GGUF through llama.cpp, but its
logits depend in their last bits on how a prompt was split into batches (how much of it was
cached), and on this 270M Q4 model that moves a log-probability by up to about 0.2 nat (the
local model differs from itself that much between two cache states). Kept short: the server
runs on one thread and reads every prompt token's logits, so each test asks it little.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Iterator, Sequence

import pytest

import turnloom as tl
from tests.helpers import OPEN_DOOR, SET_TORCH
from tests.served.conftest import MODEL, LlamaServer
from tests.served.scripted import ScriptedServer, scripted_server
from turnloom.engine.inference.served.logprobs import TOP_K

#: How far a served log-probability may be from the local model's (see the module docstring).
TOLERANCE = 0.3
DOOR = "Player: Open the north door.\nAction:"
DOOR_CHOICES = [" open door\n", " talk\n", " open the door\n"]


@pytest.fixture(scope="module")
def local() -> Iterator[tl.LlamaModel]:
    """The same GGUF the server serves, in process."""
    llama = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name=MODEL, n_ctx=1024).load()
    yield llama
    llama.close()


def scores(
    model: tl.models.ModelBackend, cases: Sequence[tuple[str, list[str], bool]]
) -> list[list[float]]:
    """`score_choices` of each (prompt, choices, greedy), on one loop."""

    async def run() -> list[list[float]]:
        out = [await model.score_choices(p, c, greedy=g) for p, c, g in cases]
        if isinstance(model, tl.ServedModel):
            await model.aclose()
        return out

    return asyncio.run(run())


def test_served_scores_are_the_local_models_log_probabilities(
    served: tl.ServedModel, local: tl.LlamaModel
) -> None:
    assert served.scoring_error() is None  # the server's default loads with logits_all
    assert served.default_tool_decision() == "score"  # the catalog entry's, as locally
    cases = [
        (DOOR, DOOR_CHOICES, False),
        ('Player: Give me the old sword.\nItem: "', ['old sword"', 'sword"', 'me"'], False),
        (DOOR, DOOR_CHOICES, True),
    ]
    door, sword, greedy = scores(served, cases)
    want_door, want_sword, _ = scores(local, cases)
    assert door == pytest.approx(want_door, abs=TOLERANCE)
    assert sword == pytest.approx(want_sword, abs=TOLERANCE)
    # The partings only: " open door" and " open the door" share " open", so the three first
    # tokens' probabilities sum to at most 1.
    assert all(s < 0 for s in door)
    assert math.fsum(math.exp(s) for s in door) <= 1.0 + 1e-6
    # Greedy: the likeliest branch at each parting, the rest -inf.
    best = max(range(3), key=door.__getitem__)
    assert best == max(range(3), key=want_door.__getitem__)
    assert greedy[best] == pytest.approx(door[best], abs=TOLERANCE)
    assert [math.isinf(s) for i, s in enumerate(greedy) if i != best] == [True, True]
    record = served.scorings[-1]
    assert record.greedy and record.error is None
    assert record.partings == 2 and record.logprob_requests == 2  # one request per parting


def decide(model: tl.models.ModelBackend, line: str) -> tuple[list[tuple[str, object]], dict]:
    """The calls a score-deciding ToolCall node makes for `line`, and its diagnostics."""
    params = tl.ToolCallParams(
        tools=[OPEN_DOOR, SET_TORCH],
        disposition=tl.ToolCallDisposition.Notify,
        mode=tl.ToolCallMode.DetectOnly,
        decision="score",
        sampling=tl.SamplingParams(temperature=0.0, max_tokens=24),
    )
    graph = tl.GraphDescription().add_node("act", params).set_start_node("act")
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph.set_default_model_name(MODEL), enable_diagnostics=True)
        calls: list[tl.ToolCallEvent] = []
        agent.set_on_tool_call_event(calls.append)
        result = agent.send_message(line).final
    assert result.status is tl.TurnStatus.SUCCESS, result.error_message
    assert result.debug_info is not None
    return [(c.tool_name, c.arguments) for c in calls], result.debug_info["nodes"][0]["diagnostics"]


@pytest.mark.parametrize("line", ["Open the north door.", "What is your name?"])
def test_a_toolcall_node_decides_on_the_server_as_on_the_local_model(
    served: tl.ServedModel, local: tl.LlamaModel, line: str
) -> None:
    calls, diagnostics = decide(served, line)
    assert diagnostics["decision"] == "score" and "score_unavailable" not in diagnostics
    assert diagnostics["tokens_generated"] == 0
    local_calls, local_diagnostics = decide(local, line)
    assert calls == local_calls
    assert calls == ([("open_door", {"door": "north"})] if "door" in line else [])
    assert diagnostics["score"]["request"] == pytest.approx(
        local_diagnostics["score"]["request"], abs=2 * TOLERANCE
    )


def test_a_turn_cancelled_while_scoring_closes_its_request(server: LlamaServer) -> None:
    # A fresh model: its first decision calibrates, which keeps the server busy for seconds.
    model = tl.ServedModel(
        server.url, model=MODEL, name=MODEL, server_kind="llama-cpp-python",
        entry=tl.models.DEFAULT_MODEL, retries=0,
    )  # fmt: skip
    params = tl.ToolCallParams(tools=[OPEN_DOOR], decision="score")
    graph = tl.GraphDescription().add_node("act", params).set_start_node("act")
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph.set_default_model_name(MODEL))
        pending = agent.send_message_async("Open the north door.")
        for _ in range(600):  # until a request for log-probabilities is under way
            if any(s.logprob_requests and not s.finished for s in list(model.scorings)):
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the decision never asked the server")
        assert agent.cancel()
        assert pending.result(60).final.status is tl.TurnStatus.CANCELLED
        assert model.wait_idle(60)  # its stream closed, its record kept
        assert [s.cancelled for s in model.scorings].count(True) == 1
        assert all(s.finished and s.error is None for s in model.scorings)
    # The server is free again and the model goes on scoring.
    assert max(scores(model, [(DOOR, DOOR_CHOICES, True)])[0]) > -math.inf


def test_a_server_without_logprobs_makes_the_node_generate(blind_server: LlamaServer) -> None:
    model = tl.ServedModel(
        blind_server.url, model=MODEL, name=MODEL, server_kind="llama-cpp-python",
        entry=tl.models.DEFAULT_MODEL, retries=0,
    )  # fmt: skip
    calls, diagnostics = decide(model, "Open the north door.")
    assert diagnostics["decision"] == "generate" and diagnostics["tokens_generated"] > 0
    reason = diagnostics["score_unavailable"]
    assert f"model '{MODEL}': the llama-cpp-python server at {blind_server.url}" in reason
    assert "logits_all=False" in reason and "start it with --logits_all true" in reason
    assert [name for name, _ in calls] in (["open_door"], ["set_torch"])  # the grammar's call


def json_reply(payload: object, status: int = 200) -> tuple[int, str, bytes]:
    """A scripted JSON answer."""
    return status, "application/json", json.dumps(payload).encode()


#: What llama-cpp-python answers the probe when its model was loaded with logits_all.
PROBE_OK = json_reply({"choices": [{"text": "", "logprobs": {"tokens": []}}]})


@pytest.fixture
def scripted() -> Iterator[ScriptedServer]:
    """A scripted llama-cpp-python server (its tokenizer: one token per character)."""
    with scripted_server() as server:
        yield server


def scripted_model(server: ScriptedServer, kind: str = "llama-cpp-python") -> tl.ServedModel:
    """A served model of the default entry on `server`."""
    return tl.ServedModel(
        server.url, name=MODEL, server_kind=kind, entry="gemma3-270m", retries=1,
        tool_grammar="off" if kind == "openai" else None,
    )  # fmt: skip


def test_the_probe_is_kept_unless_the_server_was_busy(scripted: ScriptedServer) -> None:
    refusal = {"error": {"message": "logprobs is not supported for models created with X"}}
    scripted.replies = [json_reply({"error": {"message": "loading"}}, 503), PROBE_OK]
    model = scripted_model(scripted)
    assert "(503: loading)" in (model.scoring_error() or "")  # busy: asked again next time
    assert model.scoring_error() is None and model.scoring_error() is None
    probe = scripted.completions[0]
    assert len(scripted.completions) == 2  # the answer is kept
    assert probe["logprobs"] == 1 and probe["grammar"] == 'root ::= ""'
    assert probe["max_tokens"] == 1 and "stream" not in probe  # samples nothing

    scripted.replies, scripted._served = [json_reply(refusal, 500)], 0
    blind = scripted_model(scripted)
    assert "it refused a completion asking for log-probabilities (500: " in (
        blind.scoring_error() or ""
    )
    assert blind.scoring_error() and len(scripted.completions) == 3  # kept too

    other = scripted_model(scripted, "openai")
    reason = other.scoring_error() or ""
    assert "an 'openai' server (Ollama, a hosted API) cannot score" in reason
    assert len(scripted.completions) == 3  # known from the kind: nothing asked
    with pytest.raises(tl.ServedModelError, match="cannot score"):
        asyncio.run(other.score_choices(DOOR, DOOR_CHOICES))


def test_a_server_failing_while_scoring_is_4001_with_its_message(
    scripted: ScriptedServer,
) -> None:
    scripted.replies = [PROBE_OK, json_reply({"error": {"message": "out of memory"}}, 500)]
    model = scripted_model(scripted)
    params = tl.ToolCallParams(tools=[OPEN_DOOR], decision="score")
    graph = tl.GraphDescription().add_node("act", params).set_start_node("act")
    with tl.Engine(model) as engine:
        result = engine.create_agent(graph.set_default_model_name(MODEL)).send_message("Hi").final
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4001)
    assert f"model '{MODEL}': {scripted.url}/v1/completions answered 500: out of memory" in (
        result.error_message
    )
    _probe, *asked = scripted.completions
    assert len(asked) == 2  # sent once more (retries=1), nothing having arrived
    body = asked[0]
    assert body["max_tokens"] == 1 and body["temperature"] == 0.0 and body["stream"] is True
    assert body["logprobs"] == TOP_K
    # The parting's first token forced, so a token comes and its value is exact.
    # (The scripted tokenizer's tokens are code points: " request" and " talk" part at r/t.)
    ((token, bias),) = body["logit_bias"].items()
    assert bias >= 100 and chr(int(token)) in "rt"
    assert body["prompt"].endswith("Player: Hi\nKind: ")


def llama_cpp_result(sampled: int, logprob: float, top: dict[int, float]) -> dict[str, object]:
    """One prompt's result from llama.cpp's `/completion` with `n_probs` (its documented
    shape: the sampled token, then the top n by id)."""
    entries = [{"id": t, "token": chr(t), "logprob": v, "bytes": [t]} for t, v in top.items()]
    probs = {"id": sampled, "token": chr(sampled), "logprob": logprob, "bytes": [sampled]}
    return {
        "content": chr(sampled),
        "completion_probabilities": [{**probs, "top_logprobs": entries}],
    }


def test_llama_cpp_is_asked_every_parting_in_one_request_by_token_ids(
    scripted: ScriptedServer,
) -> None:
    # No llama-server runs here: the replies are its documented ones, and the requests the
    # check. The scripted tokenizer's tokens are code points after a BOS (0); the choices part
    # after " " (o/t) and after " open " (d/t).
    o, t, d = ord("o"), ord("t"), ord("d")
    scripted.replies = [
        json_reply(llama_cpp_result(ord("!"), -0.1, {ord("!"): -0.1, ord(","): -2.5})),
        json_reply(
            [
                llama_cpp_result(o, -1.0, {o: -1.0, t: -2.0, ord("x"): -3.0}),
                llama_cpp_result(d, -0.5, {d: -0.5, ord("x"): -2.0}),  # "t" not listed
            ]
        ),
        json_reply(llama_cpp_result(t, -6.0, {})),  # "t" forced alone
    ]
    model = scripted_model(scripted, "llama.cpp")
    assert model.scoring_error() is None
    got = asyncio.run(model.score_choices("Go", [" open door\n", " talk\n", " open the door\n"]))
    assert got == [-1.5, -2.0, -7.0]
    probe, both, alone = scripted.completions
    assert probe["n_probs"] == 2 and probe["n_predict"] == 1
    go = [0, ord("G"), ord("o"), ord(" ")]
    opened = [*go, *(ord(c) for c in "open ")]
    assert both["prompt"] == [go, opened] and both["n_probs"] > 2
    assert both["n_predict"] == 1 and both["post_sampling_probs"] is False
    assert both["logit_bias"] == [[d, 100.0], [o, 100.0]]  # a token after every prompt
    assert (alone["prompt"], alone["logit_bias"]) == ([opened], [[t, 100.0]])
    tokenized = [body for path, body in scripted.requests if path == "/tokenize"]
    assert all(body["parse_special"] is False for body in tokenized)  # words stay words
    record = model.scorings[-1]
    assert (record.partings, record.logprob_requests) == (2, 2)


def test_an_old_llama_cpp_without_token_ids_cannot_score(scripted: ScriptedServer) -> None:
    old = {"content": "!", "completion_probabilities": [{"content": "!", "probs": []}]}
    scripted.replies = [json_reply(old)]
    reason = scripted_model(scripted, "llama.cpp").scoring_error() or ""
    assert "its /completion does not report token ids and log-probabilities" in reason


def made_up_logprob(position: int, token: int) -> float:
    """The log-probability the scripted vLLM gives `token` at prompt `position`."""
    return -((token % 7) + 1) / 10 - position / 100


def vllm_reply(prompts: list[list[int]]) -> tuple[int, str, bytes]:
    """vLLM's completion with `prompt_logprobs` for `prompts` (its documented shape: per
    prompt token a mapping from token id to its log-probability, rank and text; None first)."""
    choices = []
    for index, prompt in enumerate(prompts):
        entries: list[object] = [None]
        for position, token in enumerate(prompt[1:], start=1):
            value = made_up_logprob(position, token)
            entries.append({str(token): {"logprob": value, "rank": 1, "decoded_token": chr(token)}})
        choices.append({"index": index, "text": "!", "prompt_logprobs": entries})
    return json_reply({"choices": choices[::-1]})  # in any order: `index` says which


def test_vllm_is_asked_once_for_the_choices_prompt_log_probabilities(
    scripted: ScriptedServer,
) -> None:
    # No vLLM runs here: the replies are its documented ones, and the requests the check. The
    # scripted tokenizer's tokens are code points after a BOS (0).
    choices = [" open door\n", " talk\n", " open the door\n"]
    prompts = [[0, *(ord(c) for c in "Go" + choice)] for choice in choices]
    scripted.replies = [
        json_reply({"choices": [{"index": 0, "prompt_logprobs": [None, {"1": {}}]}]}),
        vllm_reply(prompts),
        vllm_reply(prompts),
    ]
    model = scripted_model(scripted, "vllm")
    assert model.scoring_error() is None
    full = asyncio.run(model.score_choices("Go", choices))
    greedy = asyncio.run(model.score_choices("Go", choices, greedy=True))
    # The choices part after " " (o/t, prompt position 4) and after " open " (d/t, 9).
    o, t, d = ord("o"), ord("t"), ord("d")
    lp = made_up_logprob
    assert full == pytest.approx([lp(4, o) + lp(9, d), lp(4, t), lp(4, o) + lp(9, t)])
    assert greedy == [-math.inf, pytest.approx(lp(4, t)), -math.inf]
    probe, asked, _ = scripted.completions
    assert probe["prompt_logprobs"] == 1 and probe["max_tokens"] == 1
    assert asked["prompt"] == prompts and asked["prompt_logprobs"] == 1
    assert "stream" not in asked  # vLLM gives prompt log-probabilities in whole replies only
    assert [s.logprob_requests for s in model.scorings] == [1, 1]  # one request each
