"""The watch on one generation: its times, for the observers and the turn's log.

Made by a node's context only when an observer implements `generation_ended` or the turn keeps
a log; nothing at all otherwise.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from ..observers import GenerationRecord, Hooks, observer_failed
from ..results import InferenceTimeout

if TYPE_CHECKING:
    from ...inference.base import GenerationProgress, GenerationRequest, ModelBackend
    from ..turn import Turn


class GenerationWatch:
    """Times one generation for the observers that implement `generation_ended` (`hooks`) and
    the turn's log: made only when one of them is there, as the generation starts; it listens
    to the generation's `progress` until the first token (then hands it to the turn's counter
    `count` itself, so later tokens cost nothing more), and tells them when it ends."""

    __slots__ = ("count", "first_token_at", "hooks", "progress", "started", "told")

    def __init__(
        self,
        hooks: Hooks,
        agent: Any,
        turn: Turn,
        node: str,
        progress: GenerationProgress,
        count: Callable[[int], None],
    ) -> None:
        self.hooks, self.told = hooks, (agent, turn, node)
        self.progress, self.count = progress, count
        self.first_token_at: float | None = None
        progress.listener = self._first
        self.started = time.perf_counter()

    def _first(self, tokens: int) -> None:
        self.first_token_at = time.perf_counter()
        self.progress.listener = count = self.count
        count(tokens)

    def ended(
        self,
        backend: ModelBackend,
        request: GenerationRequest,
        prompt_tokens: int,
        tokens: int,
        failure: BaseException | None,
    ) -> None:
        """Tell the observers the generation's record and log it in the turn (`prompt_tokens`
        as the backend counted them, 0 if it did not say: then counted if an observer reads
        them; `failure` what ended it early, None if it finished)."""
        now = time.perf_counter()
        first = self.first_token_at
        if failure is None:
            error = ""
            if first is None and tokens:  # a backend that reports no progress
                first = now
        else:
            error = _why_not_finished(failure)
        started = self.started
        to_first = None if first is None else first - started
        agent, turn, node = self.told
        counted = prompt_tokens or None
        if self.hooks:
            counted = self._tell(backend, request, prompt_tokens, tokens, to_first, now, error)
        if (log := turn.log) is not None:
            entry = (node, backend.name, counted, tokens, to_first, now - started, error)
            log += ("generation", agent.runtime.log_time(), entry)

    def _tell(
        self,
        backend: ModelBackend,
        request: GenerationRequest,
        prompt_tokens: int,
        tokens: int,
        to_first: float | None,
        now: float,
        error: str,
    ) -> int | None:
        """Call the observers' `generation_ended` with the record; the prompt's count if one
        of them had it counted."""
        sampling = request.sampling
        record = GenerationRecord(
            backend.name,
            prompt_tokens or partial(_count_now, backend, request),
            tokens,
            to_first,
            now - self.started,
            sampling.max_tokens,
            sampling.temperature,
            error,
        )
        agent, turn, node = self.told
        for hook in self.hooks:
            try:
                hook(agent, turn, node, record)
            except Exception:
                observer_failed(hook, "generation_ended")
        return record.prompt_tokens_if_counted


def _count_now(backend: ModelBackend, request: GenerationRequest) -> int:
    try:
        return backend.count_tokens_now(request.messages, request.tools) or 0
    except Exception:  # a count is a nicety here, never a reason to fail the turn
        return 0


def _why_not_finished(failure: BaseException) -> str:
    """A generation record's `error` for what ended the generation early."""
    if isinstance(failure, asyncio.CancelledError):
        return "cancelled"
    if isinstance(failure, InferenceTimeout):
        return "timeout"
    return f"{type(failure).__name__}: {failure}"
