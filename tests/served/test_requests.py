"""The request each serving engine gets: grammar in its own field, prefix reuse where it offers
one, its names for the sampling knobs.

The llama-cpp-python shape is also exercised against the real server by test_served.py; no
llama.cpp or vLLM server runs here, so their shapes are checked as the bodies built.
"""

from __future__ import annotations

import pytest

import turnloom as tl
from turnloom.engine.inference.served import Completion, completion_body
from turnloom.engine.inference.served.kinds import token_count, tokenize_request

GBNF = 'root ::= "{" [a-z]+ "}"'
SAMPLING = tl.SamplingParams(temperature=0.2, top_k=12, min_p=0.1, repeat_penalty=1.3, seed=7)


def body(kind: str, **more: object) -> dict[str, object]:
    completion = Completion("PROMPT", SAMPLING, 32, ("<stop>",), **more)  # type: ignore[arg-type]
    return completion_body(tl.ServerKind(kind), "m", completion)


def test_llama_cpp_takes_grammar_cache_prompt_and_the_agents_slot() -> None:
    assert body("llama.cpp", grammar=GBNF, slot=3) == {
        "model": "m",
        "prompt": "PROMPT",
        "max_tokens": 32,
        "temperature": 0.2,
        "top_p": 0.95,
        "top_k": 12,
        "min_p": 0.1,
        "repeat_penalty": 1.3,
        "seed": 7,
        "stop": ["<stop>"],
        "stream": True,
        "stream_options": {"include_usage": True},
        "grammar": GBNF,
        "cache_prompt": True,
        "id_slot": 3,
    }
    assert "id_slot" not in body("llama.cpp")  # slots unknown: the server picks


def test_llama_cpp_python_takes_grammar_and_nothing_for_prefix_reuse() -> None:
    shape = body("llama-cpp-python", grammar=GBNF, slot=3)
    assert shape["grammar"] == GBNF and shape["repeat_penalty"] == 1.3
    for absent in ("cache_prompt", "id_slot", "stream_options", "structured_outputs"):
        assert absent not in shape


def test_vllm_takes_the_grammar_in_structured_outputs() -> None:
    shape = body("vllm", grammar=GBNF, slot=3, keep_special_tokens=True)
    assert shape["structured_outputs"] == {"grammar": GBNF}
    assert shape["repetition_penalty"] == 1.3 and shape["top_k"] == 12
    assert shape["skip_special_tokens"] is False  # call markup may be special tokens
    assert shape["stream_options"] == {"include_usage": True}
    for absent in ("grammar", "guided_grammar", "repeat_penalty", "cache_prompt", "id_slot"):
        assert absent not in shape
    assert "skip_special_tokens" not in body("vllm")  # replies shown as text keep the default


def test_a_plain_openai_server_gets_standard_fields_only() -> None:
    shape = body("openai")
    assert set(shape) == {
        "model", "prompt", "max_tokens", "temperature", "top_p", "seed", "stop", "stream",
        "stream_options",
    }  # fmt: skip
    with pytest.raises(ValueError, match="takes no grammar"):
        body("openai", grammar=GBNF)


def test_an_openai_server_model_refuses_a_grammar_mode() -> None:
    with pytest.raises(ValueError, match="takes no grammar; pass tool_grammar='off'"):
        tl.ServedModel("http://127.0.0.1:9", server_kind="openai", entry=tl.models.DEFAULT_MODEL)
    model = tl.ServedModel(
        "http://127.0.0.1:9", server_kind="openai", entry="gemma3-270m", tool_grammar="off"
    )
    assert model.tool_grammar is tl.models.ToolGrammar.OFF


def test_a_random_seed_is_left_out() -> None:
    completion = Completion("P", tl.SamplingParams(seed=-1), 4)
    assert "seed" not in completion_body(tl.ServerKind.LLAMA_CPP, None, completion)
    assert "model" not in completion_body(tl.ServerKind.LLAMA_CPP, None, completion)


def test_token_counting_routes() -> None:
    assert tokenize_request(tl.ServerKind.LLAMA_CPP, "m", "x") == (
        "/tokenize",
        {"content": "x", "add_special": False, "parse_special": True},
    )
    assert tokenize_request(tl.ServerKind.LLAMA_CPP_PYTHON, "m", "x") == (
        "/extras/tokenize/count",
        {"input": "x", "model": "m"},
    )
    assert tokenize_request(tl.ServerKind.VLLM, "m", "x") == (
        "/tokenize",
        {"prompt": "x", "add_special_tokens": False, "model": "m"},
    )
    assert token_count({"count": 4}) == 4
    assert token_count({"tokens": [1, 2]}) == 2
    assert token_count({"nothing": 1}) is None


def test_catalog_overrides_and_slots() -> None:
    model = tl.ServedModel(
        "http://127.0.0.1:9/",
        name="npc",
        entry=tl.models.DEFAULT_MODEL,
        sampling={"top_k": 5},
        stop=["END"],
        slots=4,
    )
    assert model.base_url == "http://127.0.0.1:9"
    assert (model.name, model.entry.stop, dict(model.entry.sampling)) == (
        "npc",
        ("END",),
        {"top_k": 5},
    )
    assert model.tool_support_error() is None  # the catalog's template: no server needed
    assert [model.slot_for(agent) for agent in (1, 2, 5)] == [1, 2, 1]
    with pytest.raises(ValueError, match="unknown sampling field"):
        tl.ServedModel("http://127.0.0.1:9", sampling={"temprature": 0.1})
    with pytest.raises(ValueError, match="slots must be"):
        tl.ServedModel("http://127.0.0.1:9", slots=0)
