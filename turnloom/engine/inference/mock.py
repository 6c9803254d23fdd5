"""The `mock` backend: a scripted, deterministic inference engine for tests and offline demos.

It is a real engine with a fixed script instead of weights: it receives the projected chat,
streams its reply token by token (yielding to the loop between tokens, so cancellation works as
with a real model) and counts tokens, reporting each in the request's `progress` as it goes.
The latest requests are kept for inspection.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..tools.families import ToolCallFamily
from .base import ChatMessage, GenerationRequest, GenerationResult, ModelBackend

#: One scripted step: a reply text, an exception to raise, or a function of the request.
ScriptItem = str | BaseException | Callable[[GenerationRequest], str]

_TOKEN = re.compile(r"\s*\S+|\s+")

#: How many of its latest requests a `MockModel` keeps in `requests`: enough for any test to
#: look back on, bounded so that a long-running `serve --mock` does not grow without end.
KEPT_REQUESTS = 1000


def split_tokens(text: str) -> list[str]:
    """Split text the way the mock 'tokenizes' it: words with their leading whitespace."""
    return _TOKEN.findall(text)


#: Tokens the mock counts for each message's role markers, as a chat template adds some.
MESSAGE_TOKENS = 2


def count_chat_tokens(messages: list[ChatMessage], tools: object = None) -> int:
    """The mock's token count of a chat: its words (`split_tokens`), `MESSAGE_TOKENS` per
    message, and the words of the tools' and calls' JSON."""
    total = 0
    for message in messages:
        total += MESSAGE_TOKENS + len(split_tokens(str(message.get("content", ""))))
        if message.get("tool_calls"):
            total += len(split_tokens(json.dumps(message["tool_calls"])))
    if tools:
        total += len(split_tokens(json.dumps(tools)))
    return total


def echo_reply(request: GenerationRequest) -> str:
    """The default reply: echo the last user message."""
    for message in reversed(request.messages):
        if message.get("role") == "user":
            return f"You said: {message.get('content', '')}"
    return "..."


class MockModel(ModelBackend):
    """A scripted model: replies come from `script` in order, then from `fallback`.

    With `n_ctx` it has a context of that many tokens, counted as `count_chat_tokens` does,
    and refuses a prompt that does not fit it, as a real model does; without, none.
    """

    def __init__(
        self,
        name: str = "mock",
        script: Iterable[ScriptItem] = (),
        *,
        fallback: Callable[[GenerationRequest], str] = echo_reply,
        renders_tools: bool = True,
        family: ToolCallFamily = ToolCallFamily.GENERIC,
        n_ctx: int | None = None,
    ) -> None:
        if n_ctx is not None and (not isinstance(n_ctx, int) or n_ctx < 1):
            raise ValueError(f"n_ctx must be an int >= 1 or None, got {n_ctx!r}")
        self.name = name
        self.n_ctx = n_ctx
        self.script: deque[ScriptItem] = deque(script)
        self.fallback = fallback
        self.renders_tools = renders_tools
        self.family = family
        #: The latest `KEPT_REQUESTS` requests, oldest first (`requests[-1]` is the last one).
        self.requests: deque[GenerationRequest] = deque(maxlen=KEPT_REQUESTS)
        self.cancelled_generations = 0
        #: When set, every reply stops after this many tokens and the generation waits there
        #: until it is cancelled, like a model stuck mid-reply (for tests of cancellation and
        #: time budgets mid-stream).
        self.hold_after: int | None = None

    def push(self, *items: ScriptItem) -> None:
        """Append replies to the script."""
        self.script.extend(items)

    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        """Play the next scripted reply, one token per loop iteration."""
        self.requests.append(request)
        if self.n_ctx is not None:
            prompt_tokens = count_chat_tokens(request.messages, request.tools)
            if prompt_tokens >= self.n_ctx:
                raise ValueError(
                    f"model '{self.name}': the prompt is {prompt_tokens} tokens, which does not "
                    f"fit its context of {self.n_ctx} tokens"
                )
        item: ScriptItem = self.script.popleft() if self.script else self.fallback
        if isinstance(item, BaseException):
            raise item
        text = item if isinstance(item, str) else item(request)
        return await self.stream(text, request, on_delta)

    async def stream(
        self,
        text: str,
        request: GenerationRequest,
        on_delta: Callable[[str], None] | None,
        delay_s: float = 0.0,
    ) -> GenerationResult:
        """Stream `text` token by token (up to `max_tokens`), `delay_s` before each (0: one
        loop iteration), counting each in the request's progress."""
        produced: list[str] = []
        try:
            for token in split_tokens(text)[: request.sampling.max_tokens]:
                await asyncio.sleep(delay_s)
                if self.hold_after is not None and len(produced) >= self.hold_after:
                    await asyncio.get_running_loop().create_future()  # until cancelled
                produced.append(token)
                request.progress.add()
                if on_delta is not None:
                    on_delta(token)
        except asyncio.CancelledError:
            self.cancelled_generations += 1
            raise
        return GenerationResult("".join(produced), len(produced))

    def context_tokens(self) -> int | None:
        """`n_ctx`."""
        return self.n_ctx

    async def count_prompt_tokens(self, request: GenerationRequest) -> int:
        """`count_chat_tokens` of the request's chat and tools."""
        return count_chat_tokens(request.messages, request.tools)

    def count_tokens_now(
        self, messages: list[ChatMessage], tools: list[dict[str, Any]] | None = None
    ) -> int | None:
        """`count_chat_tokens`: the mock counts at once."""
        return count_chat_tokens(messages, tools)

    def tool_call_family(self) -> ToolCallFamily:
        """The family the script's tool calls are written in."""
        return self.family

    def tool_support_error(self) -> str | None:
        """The mock renders tools unless told otherwise."""
        return None if self.renders_tools else f"model '{self.name}' cannot render tools"
