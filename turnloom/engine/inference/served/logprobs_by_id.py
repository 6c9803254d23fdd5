"""Likelihood scoring on the servers whose prompts can be token ids, several per request:
llama.cpp's `llama-server` (`LlamaCppScorer`) and vLLM (`VllmScorer`); how each is asked is
in `logprobs`' docstring. The reply readers are also the probe's (`probe.probe_verdict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .choices import ChoiceTrie, Parting, choice_tails
from .errors import ServedModelError
from .logprobs import COMPLETIONS, FORCE, ScoringStats, ServedScorer, token_list

#: llama.cpp sends each listed token's text and bytes: 512 keeps a reply near 50 kB per parting.
LLAMA_CPP_TOP_N = 512


class LlamaCppScorer(ServedScorer):
    """Scores choices on llama.cpp's `llama-server` (see the module docstring)."""

    async def scores(
        self, prompt: str, choices: Sequence[str], greedy: bool, stats: ScoringStats
    ) -> list[float]:
        """See `ModelBackend.score_choices`."""
        prefix, tails = await choice_tails(
            prompt, choices, lambda text, whole: self._tokenize(text, whole, stats)
        )

        async def fetch(partings: Sequence[Parting]) -> list[Mapping[int, float]]:
            return await self._rows(prefix, partings, stats)

        return await ChoiceTrie(tails).scores(fetch, greedy=greedy)

    async def _tokenize(self, text: str, special: bool, stats: ScoringStats) -> list[int]:
        stats.requests += 1
        # parse_special off: the player's words never become control tokens (as locally).
        body = {"content": text, "add_special": special, "parse_special": False}
        reply = await self.transport.get_json("/tokenize", body)
        return token_list(reply, f"{self.transport.base_url}/tokenize")

    async def _complete(
        self,
        prompts: list[list[int]],
        top_n: int,
        bias: Sequence[int],
        stats: ScoringStats,
    ) -> list[tuple[int, float, dict[int, float]]]:
        """Per prompt: the sampled token, its log-probability, the top `top_n` tokens'."""
        body = {
            "prompt": prompts,
            "n_predict": 1,
            "n_probs": top_n,
            "post_sampling_probs": False,  # the raw logits' probabilities
            "temperature": 0.0,
            "logit_bias": [[token, FORCE] for token in bias],
            "cache_prompt": True,
            **self.named,
        }
        stats.requests += 1
        stats.logprob_requests += 1
        reply = await self.transport.get_json("/completion", body)
        if reply is None:
            raise ServedModelError(f"{self.transport.base_url} has no /completion route")
        return [llama_cpp_row(result) for result in llama_cpp_results(reply, len(prompts))]

    async def _rows(
        self, prefix: list[int], partings: Sequence[Parting], stats: ScoringStats
    ) -> list[Mapping[int, float]]:
        stats.partings += len(partings)
        prompts = [[*prefix, *p.path] for p in partings]
        # Each parting's first token biased, so that a token is sampled after every prompt (its
        # own or another parting's, never the end of the text) and reported.
        answers = await self._complete(
            prompts, LLAMA_CPP_TOP_N, sorted({p.tokens[0] for p in partings}), stats
        )
        rows: list[Mapping[int, float]] = []
        for parting, text, (sampled, value, top) in zip(partings, prompts, answers, strict=True):
            row: dict[int, float] = {t: top[t] for t in parting.tokens if t in top}
            if sampled in parting.tokens:
                row[sampled] = value
            for token in parting.tokens:
                if token not in row:  # not among the top n: asked for alone, forced
                    ((got, alone, _),) = await self._complete([text], 1, [token], stats)
                    if got != token:
                        raise ServedModelError(
                            f"{self.transport.base_url}/completion did not take logit_bias "
                            f"(forced token {token}, got {got})"
                        )
                    row[token] = alone
            rows.append(row)
        return rows


def llama_cpp_results(reply: Any, count: int) -> list[Any]:
    """The per-prompt results of a `/completion` reply (one object, or a list of them)."""
    results = reply if isinstance(reply, list) else [reply]
    if len(results) != count:
        raise ServedModelError(f"{count} prompts sent, {len(results)} results came back")
    return results


def llama_cpp_row(result: Any) -> tuple[int, float, dict[int, float]]:
    """The sampled token, its log-probability and the top tokens' by id, from one result."""
    try:
        (first, *_rest) = result["completion_probabilities"]
        top = {int(item["id"]): float(item["logprob"]) for item in first["top_logprobs"]}
        return int(first["id"]), float(first["logprob"]), top
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ServedModelError(
            f"no token ids and log-probabilities in the reply: {result!r:.300}"
        ) from None


class VllmScorer(ServedScorer):
    """Scores choices on vLLM (see the module docstring)."""

    async def scores(
        self, prompt: str, choices: Sequence[str], greedy: bool, stats: ScoringStats
    ) -> list[float]:
        """See `ModelBackend.score_choices`."""
        prefix, tails = await choice_tails(
            prompt, choices, lambda text, whole: self._tokenize(text, whole, stats)
        )
        trie = ChoiceTrie(tails)
        partings = trie.partings()
        # For each token a parting can take, a choice whose tokens go through it.
        through: dict[tuple[int, ...], int] = {}
        for parting in partings:
            for token in parting.tokens:
                step = (*parting.path, token)
                through[step] = next(
                    i for i, tail in enumerate(tails) if tuple(tail[: len(step)]) == step
                )
        asked = sorted(set(through.values()))
        stats.partings += len(partings)
        values: dict[int, list[Any]] = {}
        if asked:
            logprobs = await self._prompt_logprobs([[*prefix, *tails[i]] for i in asked], stats)
            values = dict(zip(asked, logprobs, strict=True))

        def value(step: tuple[int, ...]) -> float:
            index = through[step]
            entry = values[index][len(prefix) + len(step) - 1]
            token = step[-1]
            found = entry.get(str(token)) if isinstance(entry, Mapping) else None
            if not isinstance(found, Mapping) or not isinstance(found.get("logprob"), int | float):
                raise ServedModelError(
                    f"{self.transport.base_url}{COMPLETIONS}: no log-probability for prompt "
                    f"token {token}: {entry!r:.200}"
                )
            return float(found["logprob"])

        rows = {p.path: {t: value((*p.path, t)) for t in p.tokens} for p in partings}

        async def fetch(wanted: Sequence[Parting]) -> list[Mapping[int, float]]:
            return [rows[p.path] for p in wanted]

        return await trie.scores(fetch, greedy=greedy)

    async def _tokenize(self, text: str, special: bool, stats: ScoringStats) -> list[int]:
        stats.requests += 1
        body = {"prompt": text, "add_special_tokens": special, **self.named}
        reply = await self.transport.get_json("/tokenize", body)
        return token_list(reply, f"{self.transport.base_url}/tokenize")

    async def _prompt_logprobs(
        self, prompts: list[list[int]], stats: ScoringStats
    ) -> list[list[Any]]:
        body = {
            "prompt": prompts,
            "max_tokens": 1,
            "temperature": 0.0,
            "prompt_logprobs": 1,  # the prompt token's own, and the likeliest
            **self.named,
        }
        stats.requests += 1
        stats.logprob_requests += 1
        reply = await self.transport.get_json(COMPLETIONS, body)
        return vllm_prompt_logprobs(reply, len(prompts))


def vllm_prompt_logprobs(reply: Any, count: int) -> list[list[Any]]:
    """Each prompt's `prompt_logprobs` (one entry per prompt token, the first None), in the
    order the prompts were sent."""
    choices = reply.get("choices") if isinstance(reply, Mapping) else None
    if not isinstance(choices, list) or len(choices) != count:
        raise ServedModelError(f"{count} prompts sent, not as many choices back: {reply!r:.200}")
    ordered = sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, Mapping) else 0)
    out = []
    for choice in ordered:
        logprobs = choice.get("prompt_logprobs") if isinstance(choice, Mapping) else None
        if not isinstance(logprobs, list):
            raise ServedModelError(f"no 'prompt_logprobs' in the reply: {choice!r:.200}")
        out.append(logprobs)
    return out
