"""Whether a server can score by likelihood, and which scorer it gets: by its kind alone
(`unsupported_reason`), then by its answer to one small request (`probe_request`,
`probe_verdict`), asked once by `scoring.ServedScoring.scoring_error`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .errors import ServedModelError
from .kinds import ServerKind
from .logprobs import COMPLETIONS, LlamaCppPythonScorer, ServedScorer
from .logprobs_by_id import (
    LlamaCppScorer,
    VllmScorer,
    llama_cpp_results,
    llama_cpp_row,
    vllm_prompt_logprobs,
)

if TYPE_CHECKING:
    from .transport import Transport


def unsupported_reason(kind: ServerKind) -> str | None:
    """Why a server of `kind` cannot score by what it is alone, or None if it may (then
    `probe_request` says whether this one does)."""
    if kind is ServerKind.OPENAI:
        return (
            "an 'openai' server (Ollama, a hosted API) cannot score: that API has no "
            "tokenizer route and gives log-probabilities of generated tokens only"
        )
    return None


def probe_request(kind: ServerKind, model: str | None) -> tuple[str, dict[str, Any]]:
    """The request that tells whether a server of `kind` returns what scoring needs, doing
    as little as it can: llama-cpp-python gets a completion asking for log-probabilities whose
    grammar allows only the end of the text (nothing sampled, nothing sorted); llama.cpp one
    token with the top two, vLLM one token with the prompt's log-probabilities, to see the
    shape of their answers."""
    named: dict[str, Any] = {"model": model} if model else {}
    if kind is ServerKind.LLAMA_CPP:
        body = {"prompt": "Hello", "n_predict": 1, "n_probs": 2, "temperature": 0.0}
        return "/completion", {**body, "cache_prompt": False, **named}
    if kind is ServerKind.VLLM:
        body = {"prompt": "Hello there", "max_tokens": 1, "temperature": 0.0}
        return COMPLETIONS, {**body, "prompt_logprobs": 1, **named}
    body = {
        "prompt": "",
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": 1,
        "grammar": 'root ::= ""',
    }
    return COMPLETIONS, {**body, **named}


def probe_verdict(kind: ServerKind, status: int, reply: Any, message: str) -> str | None:
    """What the server lacks, from its answer to `probe_request`; None if it can score."""
    if status == 200 and kind is ServerKind.LLAMA_CPP:
        try:
            (first,) = llama_cpp_results(reply, 1)
            llama_cpp_row(first)
        except ServedModelError as exc:
            return f"its /completion does not report token ids and log-probabilities ({exc})"
        return None
    if status == 200 and kind is ServerKind.VLLM:
        try:
            (logprobs,) = vllm_prompt_logprobs(reply, 1)
        except ServedModelError as exc:
            return f"its completions return no 'prompt_logprobs' ({exc})"
        return None if len(logprobs) >= 2 else "its 'prompt_logprobs' are empty"
    if status == 200:
        choices = reply.get("choices") if isinstance(reply, Mapping) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        if isinstance(first, Mapping) and isinstance(first.get("logprobs"), Mapping):
            return None
        return "its completions carry no 'logprobs'"
    if "logits_all" in message:
        return (
            f"it returns no log-probabilities ({message}); start it with --logits_all true "
            "(the default of llama-cpp-python's server)"
        )
    return f"it refused a completion asking for log-probabilities ({status}: {message})"


def scorer_for(kind: ServerKind, transport: Transport, model: str | None) -> ServedScorer:
    """The scorer for a server of `kind` (one `unsupported_reason` passes)."""
    if kind is ServerKind.LLAMA_CPP:
        return LlamaCppScorer(transport, model)
    if kind is ServerKind.VLLM:
        return VllmScorer(transport, model)
    return LlamaCppPythonScorer(transport, model)
