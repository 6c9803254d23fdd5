"""Serving engines and the `/v1/completions` request body each one takes.

Every engine speaks the OpenAI completions API, but the fields beyond it differ: where a grammar
goes, how prefix reuse is asked for, the names of the sampling knobs OpenAI does not have, and
whether a stream reports its usage. One function builds the body per declared kind, so each
shape is plain data a test can look at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ...graph.model_params import SamplingParams


class ServerKind(StrEnum):
    """The serving engine behind a base URL (it decides the request's extra fields)."""

    #: llama.cpp's `llama-server`: `grammar`, `cache_prompt`, `id_slot`, `/props`.
    LLAMA_CPP = "llama.cpp"
    #: llama-cpp-python's server (`python -m llama_cpp.server`): `grammar`; its one context
    #: keeps the previous prompt, so prefix reuse needs no field.
    LLAMA_CPP_PYTHON = "llama-cpp-python"
    #: vLLM: grammars in `structured_outputs.grammar` (vLLM ≥ 0.12; `guided_grammar` before),
    #: `repetition_penalty`; automatic prefix caching needs no field.
    VLLM = "vllm"
    #: Any other OpenAI-compatible server (Ollama, a hosted API): standard fields only, so no
    #: grammar.
    OPENAI = "openai"

    @property
    def takes_grammar(self) -> bool:
        """Whether requests to this engine can carry a GBNF grammar."""
        return self is not ServerKind.OPENAI

    @property
    def publishes_props(self) -> bool:
        """Whether the engine serves `/props` (chat template, BOS/EOS text, slot count)."""
        return self is ServerKind.LLAMA_CPP


@dataclass(frozen=True, slots=True)
class Completion:
    """One completion to ask for, before it is put in a kind's request shape."""

    prompt: str
    sampling: SamplingParams
    max_tokens: int
    stop: Sequence[str] = ()
    #: GBNF the reply must match (None: free text).
    grammar: str | None = None
    #: The server slot to run on (llama.cpp; None lets the server pick).
    slot: int | None = None
    #: Whether the reply is parsed rather than shown: control tokens that are call markup must
    #: then reach the parser (vLLM drops special tokens from its text unless told not to).
    keep_special_tokens: bool = False


def completion_body(kind: ServerKind, model: str | None, completion: Completion) -> dict[str, Any]:
    """The JSON body of a streaming `/v1/completions` request to a server of `kind`."""
    sampling = completion.sampling
    body: dict[str, Any] = {
        "prompt": completion.prompt,
        "max_tokens": completion.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "stream": True,
    }
    if model:
        body["model"] = model
    if completion.stop:
        body["stop"] = list(completion.stop)
    if sampling.seed >= 0:
        body["seed"] = sampling.seed
    if kind is not ServerKind.LLAMA_CPP_PYTHON:
        # llama-cpp-python never reports usage in a stream (tokens are counted from its chunks,
        # one per token); the others do when asked.
        body["stream_options"] = {"include_usage": True}
    if kind is ServerKind.OPENAI:
        if completion.grammar is not None:
            raise ValueError("an 'openai' server takes no grammar")
        return body
    body["top_k"] = sampling.top_k
    body["min_p"] = sampling.min_p
    if kind is ServerKind.VLLM:
        body["repetition_penalty"] = sampling.repeat_penalty
        if completion.grammar is not None:
            body["structured_outputs"] = {"grammar": completion.grammar}
        if completion.keep_special_tokens:
            body["skip_special_tokens"] = False
        return body
    body["repeat_penalty"] = sampling.repeat_penalty
    if completion.grammar is not None:
        body["grammar"] = completion.grammar
    if kind is ServerKind.LLAMA_CPP:
        # Reuse the KV cache of the slot's previous prompt; a fixed slot per agent keeps its
        # dialog there from turn to turn.
        body["cache_prompt"] = True
        if completion.slot is not None:
            body["id_slot"] = completion.slot
    return body


def tokenize_request(kind: ServerKind, model: str | None, text: str) -> tuple[str, dict[str, Any]]:
    """The endpoint and body that count the tokens of `text` on a server of `kind`.

    The count may include a BOS the server adds (llama-cpp-python's always does): callers
    subtract the count of "" to get the text's own.
    """
    named = {"model": model} if model else {}
    if kind is ServerKind.LLAMA_CPP:
        return "/tokenize", {"content": text, "add_special": False, "parse_special": True}
    if kind is ServerKind.LLAMA_CPP_PYTHON:
        return "/extras/tokenize/count", {"input": text, **named}
    # vLLM's, and the path other engines that count tokens tend to copy.
    return "/tokenize", {"prompt": text, "add_special_tokens": False, **named}


def token_count(reply: Any) -> int | None:
    """The count in a tokenize endpoint's reply (`count`, or the length of `tokens`)."""
    if not isinstance(reply, dict):
        return None
    count = reply.get("count")
    if isinstance(count, int):
        return count
    tokens = reply.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None
