"""Streaming in the llama backend: the token loop on a worker thread and where its text goes.

A generation runs on its instance's worker thread: `sample` feeds tokens into a `Reply` (which
applies stop strings and the lazy call trigger and streams what is safe to show), a
`DeltaRelay` carries those pieces to the engine loop, and the `Job`'s `GenerationStats` records
what the generation did and cost.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..base import GenerationRequest

if TYPE_CHECKING:
    pass


@dataclass(slots=True)
class GenerationStats:
    """What one generation did and cost (for tests, benchmarks and diagnostics)."""

    agent_id: int
    instance: int
    #: The rendered prompt, as the model saw it.
    prompt: str = ""
    #: Tokens fed as prompt (a call head forced by the grammar included).
    prompt_tokens: int = 0
    #: Prompt tokens llama.cpp actually evaluated: fewer than `prompt_tokens` when the
    #: instance's cache already held a prefix of the prompt (e.g. the agent's previous turn).
    prompt_tokens_evaluated: int = 0
    #: Sampled tokens (forced call text is prompt, not counted).
    tokens: int = 0
    text: str = ""
    #: "off", "required", "lazy" (no call opened) or "lazy-triggered".
    grammar: str = "off"
    cancelled: bool = False
    #: Tokens sampled when the awaiting task was cancelled (the worker stops at its next check).
    tokens_at_cancel: int | None = None
    error: str | None = None
    #: `time.perf_counter()` when the worker started it (to see generations overlap).
    started: float = 0.0
    seconds_to_first_token: float = 0.0
    seconds: float = 0.0

    def log_fields(self) -> dict[str, object]:
        """What a backend logs about each generation when it ends."""
        return {
            "agent_id": self.agent_id,
            "prompt_tokens": self.prompt_tokens,
            "evaluated": self.prompt_tokens_evaluated,
            "tokens": self.tokens,
            "grammar": self.grammar,
            "cancelled": self.cancelled,
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }


class DeltaRelay:
    """Carries text pieces from the worker thread to a callback on the engine loop.

    One loop wake-up per piece while the loop keeps up; when it lags (a busy host, a starved
    core), pieces that piled up are joined into one delta instead of queueing a callback each.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        callback: Callable[[str], None],
        cancelled: threading.Event,
    ) -> None:
        self._loop = loop
        self._callback = callback
        self._cancelled = cancelled
        self._lock = threading.Lock()
        self._pending: list[str] = []
        self._scheduled = False

    def emit(self, text: str) -> None:
        """Queue a piece (worker thread)."""
        with self._lock:
            self._pending.append(text)
            if self._scheduled:
                return
            self._scheduled = True
        self._loop.call_soon_threadsafe(self._flush)

    def _flush(self) -> None:
        with self._lock:
            text = "".join(self._pending)
            self._pending.clear()
            self._scheduled = False
        # Pieces still queued when the generation was cancelled must not reach a turn that
        # has ended. Flushes run before the result is delivered (both go through the loop's
        # FIFO), so a finished reply always arrives whole.
        if text and not self._cancelled.is_set():
            self._callback(text)


@dataclass(slots=True)
class Job:
    """One generation on its way through a worker: what was asked, where deltas go, its record."""

    request: GenerationRequest
    emit: Callable[[str], None] | None
    stats: GenerationStats
    #: Set by the engine loop when the awaiting task is cancelled; the worker checks it per token.
    cancelled: threading.Event = field(default_factory=threading.Event)


class Reply:
    """The reply text as it grows: stop strings, the lazy call trigger, streaming."""

    def __init__(
        self,
        stops: Sequence[str],
        emit: Callable[[str], None] | None,
        trigger: str | bool | None,
    ) -> None:
        self.text = ""
        self.stops = [s for s in stops if s]
        self.emit = emit
        # False: no trigger; None: bare JSON at the start; str: an opener anywhere.
        self.trigger = trigger
        self.cut: int | None = None
        self._sent = 0

    def add(self, piece: str) -> bool:
        """Append generated text; True when generation must stop here."""
        start = max(0, len(self.text) - max((len(s) for s in self.stops), default=0))
        self.text += piece
        for stop in self.stops:
            at = self.text.find(stop, start)
            if at != -1:
                self.text = self.text[:at]
                return True
        if self.trigger is not False and self._triggered():
            return True
        self._flush(self._held_back())
        return False

    def _triggered(self) -> bool:
        if self.trigger is None:
            stripped = self.text.lstrip()
            if stripped.startswith("{"):
                self.cut = len(self.text) - len(stripped)
                return True
            return False
        assert isinstance(self.trigger, str)
        at = self.text.find(self.trigger)
        if at == -1:
            return False
        self.cut = at + len(self.trigger)
        return True

    def _held_back(self) -> int:
        # Keep back a tail that may be the start of a stop string, so it is never streamed.
        longest = 0
        for stop in self.stops:
            for size in range(min(len(stop) - 1, len(self.text)), longest, -1):
                if self.text.endswith(stop[:size]):
                    longest = size
                    break
        return longest

    def _flush(self, hold: int = 0) -> None:
        end = len(self.text) - hold
        if self.emit is not None and end > self._sent:
            self.emit(self.text[self._sent : end])
            self._sent = end

    def finish(self) -> str:
        """Send what is left; the final text."""
        self._flush()
        return self.text
