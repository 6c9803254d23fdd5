"""Counting a llama model's prompt tokens for the history budget, without its weights.

The counter loads the GGUF's vocabulary only (about 0.4 s for Gemma's 262k tokens, once) and
tokenizes on a thread of its own: a 4,000-token prompt takes about 10 ms, which would stall the
engine loop, and on an instance's worker thread it would wait behind other agents' generations.
llama.cpp's tokenizer only reads the vocabulary, so this thread and the instances' never touch
the same state.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ...graph.model_params import SamplingParams
from ...tools.families import ToolCallFamily
from ..base import ChatMessage, GenerationRequest
from ..catalog import CatalogEntry, ToolGrammar
from .grammar import string_caps, tool_call_grammar
from .native import _LOG_ROUTE

_T = TypeVar("_T")


class TokenCounter:
    """Token counts of texts by one GGUF's tokenizer (special tokens parsed)."""

    def __init__(self, model_name: str, path: Callable[[], Path]) -> None:
        self._path = path
        self._executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"turnloom-count-{model_name}"
        )
        self._lock = threading.Lock()
        self._native: Any = None

    @property
    def loaded(self) -> bool:
        """Whether the vocabulary is loaded, so that `tokens` returns at once."""
        return self._native is not None

    def _vocabulary(self) -> Any:
        with self._lock:
            if self._native is None:
                import llama_cpp
                from llama_cpp._internals import LlamaModel as _NativeModel

                params = llama_cpp.llama_model_default_params()
                params.vocab_only = True
                with _LOG_ROUTE.borrowed():
                    self._native = _NativeModel(
                        path_model=str(self._path()), params=params, verbose=False
                    )
            return self._native

    def tokens(self, text: str, add_bos: bool) -> int:
        """How many tokens `text` is (blocking; loads the vocabulary on first use)."""
        return len(self._vocabulary().tokenize(text.encode("utf-8"), add_bos, True))

    async def run(self, work: Callable[[], _T]) -> _T:
        """Run `work` (which counts with `tokens`) on the counter's thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, work)

    def close(self) -> None:
        """Stop the thread and free the vocabulary."""
        self._executor.shutdown(wait=True)
        with self._lock:
            if self._native is not None:
                self._native.close()
                self._native = None


class PromptBudget:
    """The history-budget half of `LlamaModel` (a mixin, so that module keeps to generation):
    its context, the reply's reserve and prompt token counts."""

    entry: CatalogEntry
    tool_grammar: ToolGrammar
    _counter: TokenCounter
    _reserves: dict[tuple[str, int], int]

    if TYPE_CHECKING:  # LlamaModel's own, which these methods use

        def render_prompt(
            self,
            messages: Sequence[ChatMessage],
            tools: Sequence[Mapping[str, Any]] | None = None,
        ) -> str: ...
        def tool_call_family(self) -> ToolCallFamily: ...
        def _adds_bos(self, prompt: str) -> bool: ...
        def _effective_sampling(self, requested: SamplingParams) -> SamplingParams: ...

    def context_tokens(self) -> int | None:
        """`n_ctx`: the context each agent's prompt and reply share."""
        return self.entry.n_ctx

    def _prompt_tokens(self, messages: Sequence[ChatMessage], tools: Any = None) -> int:
        prompt = self.render_prompt(messages, tools)
        return self._counter.tokens(prompt, self._adds_bos(prompt))

    async def count_prompt_tokens(self, request: GenerationRequest) -> int:
        """The tokens of the rendered prompt, counted off the loop by the GGUF's tokenizer."""
        return await self._counter.run(
            lambda: self._prompt_tokens(request.messages, request.tools or None)
        )

    def count_tokens_now(
        self, messages: list[ChatMessage], tools: list[dict[str, Any]] | None = None
    ) -> int | None:
        """The prompt's tokens once the tokenizer is loaded (by a first count), else None."""
        return self._prompt_tokens(messages, tools) if self._counter.loaded else None

    async def reply_room(self, request: GenerationRequest) -> int | None:
        """`n_ctx` less the reply's reserve: `max_tokens`, or with a tool grammar the call
        head it forces plus the longer of `max_tokens` and what the call needs to close."""
        max_tokens = self._effective_sampling(request.sampling).max_tokens
        tools = request.tools or None
        if not tools or ToolGrammar(self.tool_grammar) is ToolGrammar.OFF:
            return self.entry.n_ctx - max_tokens
        key = (json.dumps(tools, sort_keys=True), max_tokens)
        reserve = self._reserves.get(key)
        if reserve is None:
            reserve = await self._counter.run(lambda: self._call_reserve(tools, max_tokens))
            self._reserves[key] = reserve
        return self.entry.n_ctx - reserve

    def _call_reserve(self, tools: Sequence[Mapping[str, Any]], max_tokens: int) -> int:
        family = self.tool_call_family()

        def count(text: str) -> int:
            return self._counter.tokens(text, False)

        spec = tool_call_grammar(tools, family, string_caps(tools, family, max_tokens, count))
        return count((spec.trigger or "") + spec.forced) + max(max_tokens, spec.max_tokens)
