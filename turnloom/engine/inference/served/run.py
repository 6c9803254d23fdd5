"""One generation's requests to a serving engine: one stream, or two when a lazy grammar
triggers (free text up to the call's opener, then the constrained call)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...graph.model_params import SamplingParams
from ..base import GenerationRequest
from ..llama.streaming import GenerationStats, Reply
from .kinds import Completion

if TYPE_CHECKING:
    from .transport import Transport

_COMPLETIONS = "/v1/completions"


class Run:
    """Streams completions into a `Reply`, counting tokens in the request's progress."""

    def __init__(
        self,
        transport: Transport,
        body: Callable[[Completion], dict[str, Any]],
        request: GenerationRequest,
        stats: GenerationStats,
        sampling: SamplingParams,
        slot: int | None,
        stop: Sequence[str],
        parsed: bool,
    ) -> None:
        self.transport = transport
        self.body = body
        self.request = request
        self.stats = stats
        self.sampling = sampling
        self.slot = slot
        self.stop = stop
        self.parsed = parsed
        self._first = True

    async def stream(self, prompt: str, reply: Reply, budget: int, grammar: str | None) -> int:
        """Stream up to `budget` tokens after `prompt` into `reply`; the count sampled.

        Leaving early (a stop string, the lazy trigger, a cancelled task) closes the
        connection, which is how a serving engine is told to stop generating.
        """
        stats = self.stats
        completion = Completion(
            prompt, self.sampling, budget, self.stop, grammar, self.slot, self.parsed
        )
        first, self._first = self._first, False
        started = time.perf_counter()
        count, usage = 0, None
        async with self.transport.stream(_COMPLETIONS, self.body(completion)) as chunks:
            async for chunk in chunks:
                if chunk.usage is not None:
                    usage = chunk.usage
                if first and chunk.timings is not None:
                    evaluated = chunk.timings.get("prompt_n")
                    if isinstance(evaluated, int):
                        stats.prompt_tokens_evaluated = evaluated
                if not chunk.text:
                    continue
                if count == 0 and first:
                    stats.seconds_to_first_token = time.perf_counter() - started
                # A server that reports no usage in its stream (llama-cpp-python) sends one
                # chunk per token; the usage, when it comes, has the last word.
                count += 1
                stats.tokens += 1
                self.request.progress.reach(stats.tokens)
                if reply.add(chunk.text):
                    break
        if usage is not None:
            reported = usage.get("completion_tokens")
            if isinstance(reported, int) and reported >= 0:
                stats.tokens += reported - count
                count = reported
                self.request.progress.reach(stats.tokens)
            prompt_tokens = usage.get("prompt_tokens")
            if first and isinstance(prompt_tokens, int):
                stats.prompt_tokens = prompt_tokens
        return count
