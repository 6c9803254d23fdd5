"""The history budget of a served model: its context, the reply's reserve, prompt token counts.

Tokens are counted by the server's own tokenizer (`tokenize_request`: llama.cpp's `/tokenize`,
llama-cpp-python's `/extras/tokenize/count`, vLLM's `/tokenize`). A server with no such route
(Ollama, a hosted API) is taken to spend one token per byte of UTF-8: no tokenizer makes more,
so a prompt counted that way always fits, but about a third of the history that would fit
(English runs 3-4 bytes a token) is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...tools.families import ToolCallFamily
from ..base import ChatMessage, GenerationRequest
from ..catalog import CatalogEntry, ToolGrammar
from ..llama.grammar import ToolCallGrammar
from .errors import ServedModelError
from .kinds import ServerKind, token_count, tokenize_request

if TYPE_CHECKING:
    from .transport import Transport


class ServedBudget:
    """The history-budget half of `ServedModel` (a mixin, so that module keeps to generation)."""

    name: str
    entry: CatalogEntry
    server_kind: ServerKind
    model: str | None
    tool_grammar: ToolGrammar
    _transport: Transport
    _n_ctx: int | None
    _props: Mapping[str, Any] | None
    #: Whether the server answered a tokenize request (None: not asked yet).
    _counts_tokens: bool | None

    if TYPE_CHECKING:  # ServedModel's own, which these methods use

        def render_prompt(
            self,
            messages: Sequence[ChatMessage],
            tools: Sequence[Mapping[str, Any]] | None = None,
        ) -> str: ...
        def tool_call_family(self) -> ToolCallFamily: ...
        async def _server_props_async(self) -> Mapping[str, Any]: ...
        async def _grammar_for(
            self, tools: Sequence[Mapping[str, Any]], max_tokens: int
        ) -> ToolCallGrammar: ...

    def context_tokens(self) -> int | None:
        """`n_ctx` if given, else the per-slot context llama.cpp's `/props` report (once
        read); None where neither says."""
        if self._n_ctx is not None:
            return self._n_ctx
        settings = (self._props or {}).get("default_generation_settings")
        n_ctx = settings.get("n_ctx") if isinstance(settings, Mapping) else None
        return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None

    async def _count(self, text: str) -> int:
        if self._counts_tokens is not False:
            path, body = tokenize_request(self.server_kind, self.model, text)
            count = token_count(await self._transport.get_json(path, body))
            self._counts_tokens = count is not None
            if count is not None:
                return count
        return len(text.encode("utf-8")) + 1  # one token per byte, and a BOS

    async def count_prompt_tokens(self, request: GenerationRequest) -> int:
        """The rendered prompt's tokens, by the server's tokenizer (see the module's note)."""
        prompt = self.render_prompt(request.messages, request.tools or None)
        try:
            return await self._count(prompt)
        except ServedModelError as exc:
            raise ServedModelError(f"model '{self.name}': {exc}") from None

    async def reply_room(self, request: GenerationRequest) -> int | None:
        """The context less the reply's reserve: `max_tokens`, or with a tool grammar the
        call head it forces plus the longer of `max_tokens` and what the call needs."""
        try:
            return await self._reply_room(request)
        except ServedModelError as exc:
            raise ServedModelError(f"model '{self.name}': {exc}") from None

    async def _reply_room(self, request: GenerationRequest) -> int | None:
        if self._n_ctx is None:
            await self._server_props_async()
        context = self.context_tokens()
        if context is None:
            return None
        max_tokens = self.entry.sampling_for(request.sampling).max_tokens
        tools = request.tools or None
        if not tools or ToolGrammar(self.tool_grammar) is ToolGrammar.OFF:
            return context - max_tokens
        spec = await self._grammar_for(tools, max_tokens)
        head = (spec.trigger or "") + spec.forced
        base = await self._count("")
        reserve = await self._count(head) - base + max(max_tokens, spec.max_tokens)
        return context - reserve
