"""Likelihood scoring on a serving engine, one class per kind of server that can do it.

What a server must give: its tokenizer (to find where the choices part ways, in its own
tokens) and the log-probabilities of given next tokens after a given text. How each gets them:

- llama-cpp-python (`LlamaCppPythonScorer`): its completions return `logprobs` (when the model
  was loaded with `logits_all`, its server's default) for the sampled token and the top k, by
  text. One streamed request per parting, with the parting's first token forced by
  `logit_bias` (so a token comes even where the model would end the text, and its value is
  exact); the other tokens are read by their text from the top k, and any not among them is
  forced in a request of its own. Its echo of prompt log-probabilities is not used: the server
  sorts the whole vocabulary in Python for every token it reports (about a second per token
  with Gemma's 262k), which only one reported token per request keeps bearable.
- llama.cpp's `llama-server` (`LlamaCppScorer`): `/completion` takes prompts as token ids,
  several in one request, and with `n_probs` reports the top n next tokens by id, their
  log-probabilities taken from the raw logits, and the sampled token's own. So every parting
  of a scoring goes in one request (one per parting on the way for a greedy one), the first
  token of each parting biased so that a token is sampled; a token not among the top n is
  asked for alone, forced. It returns no log-probabilities of prompt tokens, so each parting
  is a prompt of its own (its cached prefix makes that cheap).
- vLLM (`VllmScorer`): its completions take prompts as token ids, several per request, and
  with `prompt_logprobs` return the log-probability of every prompt token by id. So a scoring
  is one request whatever its partings: the prompt followed by each choice that some parting's
  token needs, every parting's row read from those sequences (a greedy scoring too: it only
  reads fewer of them).
- An `openai` server (Ollama, a hosted API): cannot (`unsupported_reason`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .choices import ChoiceTrie, Parting
from .errors import ServedModelError
from .kinds import ServerKind

if TYPE_CHECKING:
    from .transport import Transport

_COMPLETIONS = "/v1/completions"
#: How many of the likeliest next tokens a reply lists: enough that the tokens a parting can
#: take are nearly always among them (each one missing costs a request of its own).
TOP_K = 4096
#: Added to a forced token's logit: far past any gap between two logits.
_FORCE = 100.0
#: At most this many token texts are kept (a vocabulary's worth is a few MB at most).
_PIECES_KEPT = 65536


@dataclass(slots=True)
class ScoringStats:
    """What one `score_choices` call cost (`ServedModel.scorings`)."""

    choices: int = 0
    greedy: bool = False
    #: Partings whose next-token log-probabilities were asked for.
    partings: int = 0
    #: HTTP requests made (tokenizer ones included).
    requests: int = 0
    #: Requests that returned log-probabilities (the costly ones).
    logprob_requests: int = 0
    seconds: float = 0.0
    error: str | None = None
    #: Whether it was over (kept from its start, so one under way can be seen).
    finished: bool = False
    #: Whether its task was cancelled (its request's stream closed).
    cancelled: bool = False


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
        return _COMPLETIONS, {**body, "prompt_logprobs": 1, **named}
    body = {
        "prompt": "",
        "max_tokens": 1,
        "temperature": 0.0,
        "logprobs": 1,
        "grammar": 'root ::= ""',
    }
    return _COMPLETIONS, {**body, **named}


def probe_verdict(kind: ServerKind, status: int, reply: Any, message: str) -> str | None:
    """What the server lacks, from its answer to `probe_request`; None if it can score."""
    if status == 200 and kind is ServerKind.LLAMA_CPP:
        try:
            (first,) = _llama_cpp_results(reply, 1)
            _llama_cpp_row(first)
        except ServedModelError as exc:
            return f"its /completion does not report token ids and log-probabilities ({exc})"
        return None
    if status == 200 and kind is ServerKind.VLLM:
        try:
            (logprobs,) = _vllm_prompt_logprobs(reply, 1)
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


def scorer_for(
    kind: ServerKind, transport: Transport, model: str | None
) -> LlamaCppPythonScorer | LlamaCppScorer | VllmScorer:
    """The scorer for a server of `kind` (one `unsupported_reason` passes)."""
    if kind is ServerKind.LLAMA_CPP:
        return LlamaCppScorer(transport, model)
    if kind is ServerKind.VLLM:
        return VllmScorer(transport, model)
    return LlamaCppPythonScorer(transport, model)


class LlamaCppPythonScorer:
    """Scores choices on llama-cpp-python's server (see the module docstring)."""

    def __init__(self, transport: Transport, model: str | None) -> None:
        self.transport = transport
        self.named: dict[str, Any] = {"model": model} if model else {}
        #: The server's text of each token asked about (None: not a whole UTF-8 text).
        self._pieces: dict[int, str | None] = {}
        #: What the server's tokenizer puts before any text (its BOS), once known.
        self._lead: list[int] | None = None

    async def scores(
        self, prompt: str, choices: Sequence[str], greedy: bool, stats: ScoringStats
    ) -> list[float]:
        """See `ModelBackend.score_choices`."""
        if self._lead is None:
            self._lead = await self._tokenize("", stats)
        texts = [prompt, *(prompt + choice for choice in choices)]
        prefix, *wholes = await asyncio.gather(*(self._tokenize(t, stats) for t in texts))
        if not prefix:
            raise ValueError("scoring needs a prompt of at least one token")
        tails = []
        for choice, whole in zip(choices, wholes, strict=True):
            if whole[: len(prefix)] == prefix and len(whole) > len(prefix):
                tails.append(whole[len(prefix) :])
            else:  # the boundary merged into one token: take the choice's own tokens
                own = await self._tokenize(choice, stats)
                lead = len(self._lead) if own[: len(self._lead)] == self._lead else 0
                tails.append(own[lead:])
        trie = ChoiceTrie(tails)

        async def fetch(partings: Sequence[Parting]) -> list[Mapping[int, float]]:
            # One at a time: the server runs one request at a time anyway.
            return [await self._row(prompt, parting, greedy, stats) for parting in partings]

        return await trie.scores(fetch, greedy=greedy)

    async def _tokenize(self, text: str, stats: ScoringStats) -> list[int]:
        stats.requests += 1
        reply = await self.transport.get_json("/extras/tokenize", {"input": text, **self.named})
        tokens = reply.get("tokens") if isinstance(reply, Mapping) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ServedModelError(
                f"{self.transport.base_url}/extras/tokenize gave no token list: {reply!r:.200}"
            )
        return tokens

    async def _learn_pieces(self, tokens: Sequence[int], stats: ScoringStats) -> None:
        unknown = sorted({t for t in tokens if t not in self._pieces})
        if not unknown:
            return
        if len(self._pieces) + len(unknown) > _PIECES_KEPT:
            self._pieces.clear()

        async def learn(token: int) -> None:
            stats.requests += 1
            try:
                # Not retried: a token that is part of a character makes the server fail.
                reply = await self.transport.get_json(
                    "/extras/detokenize", {"tokens": [token], **self.named}, retries=0
                )
            except ServedModelError:
                reply = None
            text = reply.get("text") if isinstance(reply, Mapping) else None
            self._pieces[token] = text if isinstance(text, str) else None

        await asyncio.gather(*(learn(token) for token in unknown))

    async def _path_text(self, path: tuple[int, ...], stats: ScoringStats) -> str:
        pieces = [self._pieces.get(token) for token in path]
        if all(piece is not None for piece in pieces):
            return "".join(piece or "" for piece in pieces)
        stats.requests += 1
        try:
            reply = await self.transport.get_json(
                "/extras/detokenize", {"tokens": list(path), **self.named}, retries=0
            )
        except ServedModelError as exc:
            raise ServedModelError(
                f"the choices part ways inside a character, which a server taking text "
                f"prompts cannot be asked about: {exc}"
            ) from None
        text = reply.get("text") if isinstance(reply, Mapping) else None
        if not isinstance(text, str):
            raise ServedModelError(f"/extras/detokenize gave no text: {reply!r:.200}")
        return text

    async def _row(
        self, prompt: str, parting: Parting, greedy: bool, stats: ScoringStats
    ) -> dict[int, float]:
        """The log-probability of each token that can come next at `parting`."""
        stats.partings += 1
        await self._learn_pieces((*parting.path, *parting.tokens), stats)
        text = prompt + await self._path_text(parting.path, stats)
        forced, *others = parting.tokens
        value, top = await self._next(text, forced, TOP_K, stats)
        row = {forced: value}
        missing = []
        for token in others:
            piece = self._pieces.get(token)
            if piece and piece in top:
                row[token] = top[piece]
            else:
                missing.append(token)
        if not missing:
            return row
        if greedy:
            # A token not among the top k is no likelier than any that is: where one of this
            # parting's tokens is, the likeliest is known without asking about the rest.
            listed = [v for k, v in top.items() if k != self._pieces.get(forced)]
            if listed and max(row.values()) >= min(listed):
                row.update(dict.fromkeys(missing, -math.inf))
                return row
        for token in missing:
            row[token], _ = await self._next(text, token, 1, stats)
        return row

    async def _next(
        self, text: str, forced: int, top_k: int, stats: ScoringStats
    ) -> tuple[float, dict[str, float]]:
        """The log-probability of token `forced` after `text`, and the top `top_k` next
        tokens' by their text."""
        body = {
            "prompt": text,
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": top_k,
            "logit_bias": {str(forced): _FORCE},
            "stream": True,
            **self.named,
        }
        stats.requests += 1
        stats.logprob_requests += 1
        url = f"{self.transport.base_url}{_COMPLETIONS}"
        found: Mapping[str, Any] | None = None
        async with self.transport.stream(_COMPLETIONS, body) as chunks:
            async for chunk in chunks:
                if chunk.logprobs is not None and found is None:
                    found = chunk.logprobs
        if found is None:
            raise ServedModelError(f"{url}: the reply carries no log-probabilities")
        try:
            (piece,) = found["tokens"]
            (value,) = found["token_logprobs"]
            (top,) = found["top_logprobs"]
            value = float(value)
            top = {str(k): float(v) for k, v in top.items()}
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ServedModelError(f"{url}: malformed log-probabilities: {found!r:.300}") from None
        expected = self._pieces.get(forced)
        if expected and piece != expected:
            raise ServedModelError(
                f"{url}: the server did not take logit_bias (asked for {expected!r}, got {piece!r})"
            )
        return value, top


#: llama.cpp sends each listed token's text and bytes: 512 keeps a reply near 50 kB per parting.
LLAMA_CPP_TOP_N = 512


class LlamaCppScorer:
    """Scores choices on llama.cpp's `llama-server` (see the module docstring)."""

    def __init__(self, transport: Transport, model: str | None) -> None:
        self.transport = transport
        self.named: dict[str, Any] = {"model": model} if model else {}

    async def scores(
        self, prompt: str, choices: Sequence[str], greedy: bool, stats: ScoringStats
    ) -> list[float]:
        """See `ModelBackend.score_choices`."""
        texts = [prompt, *(prompt + choice for choice in choices)]
        prefix, *wholes = await asyncio.gather(*(self._tokenize(t, True, stats) for t in texts))
        if not prefix:
            raise ValueError("scoring needs a prompt of at least one token")
        tails = []
        for choice, whole in zip(choices, wholes, strict=True):
            if whole[: len(prefix)] == prefix and len(whole) > len(prefix):
                tails.append(whole[len(prefix) :])
            else:  # the boundary merged into one token: take the choice's own tokens
                tails.append(await self._tokenize(choice, False, stats))

        async def fetch(partings: Sequence[Parting]) -> list[Mapping[int, float]]:
            return await self._rows(prefix, partings, stats)

        return await ChoiceTrie(tails).scores(fetch, greedy=greedy)

    async def _tokenize(self, text: str, special: bool, stats: ScoringStats) -> list[int]:
        stats.requests += 1
        # parse_special off: the player's words never become control tokens (as locally).
        body = {"content": text, "add_special": special, "parse_special": False}
        reply = await self.transport.get_json("/tokenize", body)
        tokens = reply.get("tokens") if isinstance(reply, Mapping) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ServedModelError(
                f"{self.transport.base_url}/tokenize gave no token list: {reply!r:.200}"
            )
        return tokens

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
            "logit_bias": [[token, _FORCE] for token in bias],
            "cache_prompt": True,
            **self.named,
        }
        stats.requests += 1
        stats.logprob_requests += 1
        reply = await self.transport.get_json("/completion", body)
        if reply is None:
            raise ServedModelError(f"{self.transport.base_url} has no /completion route")
        return [_llama_cpp_row(result) for result in _llama_cpp_results(reply, len(prompts))]

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


def _llama_cpp_results(reply: Any, count: int) -> list[Any]:
    """The per-prompt results of a `/completion` reply (one object, or a list of them)."""
    results = reply if isinstance(reply, list) else [reply]
    if len(results) != count:
        raise ServedModelError(f"{count} prompts sent, {len(results)} results came back")
    return results


def _llama_cpp_row(result: Any) -> tuple[int, float, dict[int, float]]:
    """The sampled token, its log-probability and the top tokens' by id, from one result."""
    try:
        (first, *_rest) = result["completion_probabilities"]
        top = {int(item["id"]): float(item["logprob"]) for item in first["top_logprobs"]}
        return int(first["id"]), float(first["logprob"]), top
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ServedModelError(
            f"no token ids and log-probabilities in the reply: {result!r:.300}"
        ) from None


class VllmScorer:
    """Scores choices on vLLM (see the module docstring)."""

    def __init__(self, transport: Transport, model: str | None) -> None:
        self.transport = transport
        self.named: dict[str, Any] = {"model": model} if model else {}

    async def scores(
        self, prompt: str, choices: Sequence[str], greedy: bool, stats: ScoringStats
    ) -> list[float]:
        """See `ModelBackend.score_choices`."""
        texts = [prompt, *(prompt + choice for choice in choices)]
        prefix, *wholes = await asyncio.gather(*(self._tokenize(t, True, stats) for t in texts))
        if not prefix:
            raise ValueError("scoring needs a prompt of at least one token")
        tails: list[list[int]] = []
        for choice, whole in zip(choices, wholes, strict=True):
            if whole[: len(prefix)] == prefix and len(whole) > len(prefix):
                tails.append(whole[len(prefix) :])
            else:  # the boundary merged into one token: take the choice's own tokens
                tails.append(await self._tokenize(choice, False, stats))
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
                    f"{self.transport.base_url}{_COMPLETIONS}: no log-probability for prompt "
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
        tokens = reply.get("tokens") if isinstance(reply, Mapping) else None
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise ServedModelError(
                f"{self.transport.base_url}/tokenize gave no token list: {reply!r:.200}"
            )
        return tokens

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
        reply = await self.transport.get_json(_COMPLETIONS, body)
        return _vllm_prompt_logprobs(reply, len(prompts))


def _vllm_prompt_logprobs(reply: Any, count: int) -> list[list[Any]]:
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
