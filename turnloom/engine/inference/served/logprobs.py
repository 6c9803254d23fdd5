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
- An `openai` server (Ollama, a hosted API): cannot (`probe.unsupported_reason`).

This module holds what they share and llama-cpp-python's scorer; `logprobs_by_id` the two
that send token ids; `probe` which one a server gets, and whether it can score at all.
"""

from __future__ import annotations

import asyncio
import math
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .choices import ChoiceTrie, Parting, choice_tails
from .errors import ServedModelError

if TYPE_CHECKING:
    from .transport import Transport

COMPLETIONS = "/v1/completions"
#: How many of the likeliest next tokens a reply lists: enough that the tokens a parting can
#: take are nearly always among them (each one missing costs a request of its own).
TOP_K = 4096
#: Added to a forced token's logit: far past any gap between two logits.
FORCE = 100.0
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


class ServedScorer(ABC):
    """Scores choices on one kind of server: its transport, and the model name its requests
    carry (when the server serves several)."""

    def __init__(self, transport: Transport, model: str | None) -> None:
        self.transport = transport
        self.named: dict[str, Any] = {"model": model} if model else {}

    @abstractmethod
    async def scores(
        self, prompt: str, choices: Sequence[str], greedy: bool, stats: ScoringStats
    ) -> list[float]:
        """See `ModelBackend.score_choices`; what it cost goes in `stats`."""


class LlamaCppPythonScorer(ServedScorer):
    """Scores choices on llama-cpp-python's server (see the module docstring)."""

    def __init__(self, transport: Transport, model: str | None) -> None:
        super().__init__(transport, model)
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
        lead = self._lead

        async def tokenize(text: str, whole: bool) -> list[int]:
            tokens = await self._tokenize(text, stats)  # always with its lead: drop it if not
            return tokens[len(lead) :] if not whole and tokens[: len(lead)] == lead else tokens

        _, tails = await choice_tails(prompt, choices, tokenize)
        trie = ChoiceTrie(tails)

        async def fetch(partings: Sequence[Parting]) -> list[Mapping[int, float]]:
            # One at a time: the server runs one request at a time anyway.
            return [await self._row(prompt, parting, greedy, stats) for parting in partings]

        return await trie.scores(fetch, greedy=greedy)

    async def _tokenize(self, text: str, stats: ScoringStats) -> list[int]:
        stats.requests += 1
        reply = await self.transport.get_json("/extras/tokenize", {"input": text, **self.named})
        return token_list(reply, f"{self.transport.base_url}/extras/tokenize")

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
            "logit_bias": {str(forced): FORCE},
            "stream": True,
            **self.named,
        }
        stats.requests += 1
        stats.logprob_requests += 1
        url = f"{self.transport.base_url}{COMPLETIONS}"
        found: Mapping[str, Any] | None = None
        async with self.transport.stream(COMPLETIONS, body) as chunks:
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


def token_list(reply: Any, url: str) -> list[int]:
    """The `tokens` of a tokenizer's reply, checked."""
    tokens = reply.get("tokens") if isinstance(reply, Mapping) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
        raise ServedModelError(f"{url} gave no token list: {reply!r:.200}")
    return tokens
