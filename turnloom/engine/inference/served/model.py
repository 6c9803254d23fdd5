"""`ServedModel`: inference on a serving engine over its OpenAI-compatible completions API.

The chat is rendered here, by the same `ChatTemplate` as a local model, and sent as a plain
prompt to `/v1/completions`, so the tool probe, the call parsers and the tool-call grammars are
the llama backend's own (docs/reference/serving.md#prompts-are-rendered-locally). The reply
streams back over SSE into the same `Reply` the local token loop feeds (stop strings, the lazy
grammar's trigger, held-back text), and each chunk counts as a token in the request's progress
as it arrives.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...support.logs import get_logger
from ...tools.families import ToolCallFamily, detect_family
from ..base import ChatMessage, GenerationRequest, GenerationResult, ModelBackend
from ..catalog import CatalogEntry, ToolGrammar, catalog_entry
from ..llama.chat_template import CHATML_FALLBACK, ChatTemplate, probe_chat_template
from ..llama.grammar import ToolCallGrammar, call_skeletons, string_caps, tool_call_grammar
from ..llama.streaming import GenerationStats, Reply
from .counting import ServedBudget
from .errors import ServedModelError, require_http
from .kinds import Completion, ServerKind, completion_body, token_count, tokenize_request
from .run import Run
from .scoring import ServedScoring
from .under_way import UnderWay

if TYPE_CHECKING:
    from .transport import Transport

log = get_logger("turnloom.served")


class ServedModel(ServedBudget, ServedScoring, ModelBackend):
    """A model served by llama.cpp, llama-cpp-python, vLLM or another OpenAI-compatible engine.

    `entry` (a `CatalogEntry` or a catalog name) supplies what a local model's GGUF would: the
    chat template, call family, grammar mode, sampling defaults and stop strings; the keyword
    arguments override it. Without a template from either, the server's own is used where it
    publishes one (llama.cpp's `/props`). Nothing is sent until it is needed, so creating one
    for a server that is not up yet is fine.

    `model` is the server's name for the model (sent in each request), `name` the one graphs
    use (default: the entry's, else `model`); `server_kind` picks the request fields (see
    `ServerKind`); `bos_token`/`eos_token` are the texts the template renders for them (default:
    the server's `/props`, else ""); `slots` is llama.cpp's slot count (default: its `/props`);
    `retries` bounds the resending of a request none of whose reply has arrived. `n_ctx` is
    the context one agent's prompt and reply share (default: llama.cpp's `/props`; elsewhere
    unknown, and then no history is left out of a prompt).

    A ToolCall node may decide by likelihood (`score`, the entry's `tool_decision`) where the
    server returns log-probabilities: llama.cpp's, vLLM and llama-cpp-python's (see
    `scoring_error`).
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        name: str | None = None,
        server_kind: ServerKind | str = ServerKind.LLAMA_CPP,
        api_key: str | None = None,
        entry: CatalogEntry | str | None = None,
        chat_template: str | None = None,
        tool_call_family: ToolCallFamily | str | None = None,
        tool_grammar: ToolGrammar | str | None = None,
        sampling: Mapping[str, Any] | None = None,
        stop: Sequence[str] | None = None,
        bos_token: str | None = None,
        eos_token: str | None = None,
        slots: int | None = None,
        n_ctx: int | None = None,
        retries: int = 2,
        connect_timeout: float = 5.0,
        read_timeout: float | None = 300.0,
        max_connections: int = 64,
    ) -> None:
        self.server_kind = ServerKind(server_kind)
        #: The model name sent in each request (the server's name for it; None: its default).
        self.model = model
        self.entry = _entry(base_url, name or model, entry)
        changes: dict[str, Any] = {}
        if chat_template is not None:  # first: a new template re-detects family and grammar
            self.entry = self.entry.replace(chat_template=chat_template)
        for key, value in (
            ("name", name),
            ("tool_call_family", tool_call_family),
            ("tool_grammar", tool_grammar),
            ("sampling", sampling),
            ("stop", None if stop is None else tuple(stop)),
        ):
            if value is not None:
                changes[key] = value
        if changes:
            self.entry = self.entry.replace(**changes)
        self.entry.check_sampling()
        if self.entry.tool_grammar is not ToolGrammar.OFF and not self.server_kind.takes_grammar:
            raise ValueError(
                f"model '{self.entry.name}': an '{self.server_kind}' server takes no grammar; "
                "pass tool_grammar='off'"
            )
        if slots is not None and (not isinstance(slots, int) or slots < 1):
            raise ValueError(f"slots must be an int >= 1, got {slots!r}")
        if n_ctx is not None and (not isinstance(n_ctx, int) or n_ctx < 1):
            raise ValueError(f"n_ctx must be an int >= 1, got {n_ctx!r}")
        self._n_ctx = n_ctx
        self._counts_tokens: bool | None = None
        self.name = self.entry.name
        #: Grammar-constrained tool calls; may be changed between generations.
        self.tool_grammar = self.entry.tool_grammar
        #: The most recent generations, newest last (`instance` is the server slot asked for).
        self.generations: deque[GenerationStats] = deque(maxlen=128)
        require_http()
        from .transport import Transport  # here: `import turnloom` must not need httpx

        self._transport: Transport = Transport(
            base_url,
            api_key=api_key,
            retries=retries,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            max_connections=max_connections,
        )
        self._tokens = {"bos_token": bos_token, "eos_token": eos_token}
        self._slots = slots
        self._lock = threading.Lock()
        # Generations and scorings under way (a cancelled one until its stream is closed), for
        # `wait_idle`.
        self._under_way = UnderWay(self._lock)
        self._props: Mapping[str, Any] | None = None
        self._template: ChatTemplate | None = None
        self._grammars: dict[tuple[Any, ...], ToolCallGrammar] = {}
        self._skeleton_counts: dict[str, dict[str, int]] = {}
        self._support_error: tuple[str | None] | None = None
        self._init_scoring()

    def __repr__(self) -> str:
        return (
            f"ServedModel(name={self.name!r}, base_url={self.base_url!r}, "
            f"server_kind={self.server_kind.value!r})"
        )

    @property
    def base_url(self) -> str:
        """The server's address (without a trailing slash)."""
        return self._transport.base_url

    # --- what the server says about itself ---

    def _needs_props(self) -> bool:
        return self.server_kind.publishes_props and self._props is None

    def _keep_props(self, props: Any) -> Mapping[str, Any]:
        with self._lock:
            if self._props is None:
                self._props = props if isinstance(props, Mapping) else {}
            return self._props

    def server_props(self) -> Mapping[str, Any]:
        """What the server publishes about its model (llama.cpp's `/props`; {} for an engine
        without it), read once, blocking. `ServedModelError` if the server cannot be reached.

        Call it before creating agents to fail early when the template comes from the server.
        """
        if not self._needs_props():
            return self._props or {}
        return self._keep_props(self._transport.get_json_blocking("/props"))

    async def _server_props_async(self) -> Mapping[str, Any]:
        if not self._needs_props():
            return self._props or {}
        return self._keep_props(await self._transport.get_json("/props"))

    # --- templates and tools ---

    def template_source(self) -> str | None:
        """The Jinja chat template prompts are rendered with: the entry's, else the server's
        (which may read `/props`, blocking, once)."""
        if self.entry.chat_template is not None:
            return self.entry.chat_template
        template = self.server_props().get("chat_template")
        return template if isinstance(template, str) and template else None

    def chat_template(self) -> ChatTemplate:
        """The template used to render chats (the ChatML fallback when there is none)."""
        with self._lock:
            if self._template is not None:
                return self._template
        props = self._props or {}
        special = {
            key: value if value is not None else str(props.get(key) or "")
            for key, value in self._tokens.items()
        }
        template = ChatTemplate(self.template_source() or CHATML_FALLBACK, **special)
        with self._lock:
            if self._template is None:
                self._template = template
            return self._template

    def render_prompt(
        self, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> str:
        """The prompt text sent for this chat.

        A leading BOS is left to the server, which adds one as its tokenizer says (llama.cpp,
        llama-cpp-python and vLLM all do): sent as text too, the model would see two.
        """
        template = self.chat_template()
        prompt = template.render(messages, tools)
        if template.bos_token and prompt.startswith(template.bos_token):
            prompt = prompt[len(template.bos_token) :]
        return prompt

    def tool_call_family(self) -> ToolCallFamily:
        """The entry's family, else the one detected from the chat template."""
        if self.entry.tool_call_family is not None:
            return self.entry.tool_call_family
        try:
            return detect_family(self.template_source())
        except ServedModelError:  # the server is down: any parser will do, generation says so
            return ToolCallFamily.GENERIC

    def tool_support_error(self) -> str | None:
        """Why its template cannot serve tool calls, or None. A server that cannot be
        reached for its template is a reason too, not remembered (it may come up later)."""
        if self._support_error is not None:
            return self._support_error[0]
        try:
            source = self.template_source()
        except ServedModelError as exc:
            return f"model '{self.name}': its chat template could not be read: {exc}"
        reason = probe_chat_template(source, self.tool_call_family())
        self._support_error = (None if reason is None else f"model '{self.name}': {reason}",)
        return self._support_error[0]

    async def _skeleton_tokens(
        self, tools: Sequence[Mapping[str, Any]], family: ToolCallFamily
    ) -> Callable[[str], int]:
        """Token counts of the calls' fixed text, by the server's tokenizer (asked once per
        tool set); one token per character, the worst case, where it has no tokenize route."""
        key = json.dumps([list(tools), family.value], sort_keys=True)
        counts = self._skeleton_counts.get(key)
        if counts is None:
            counts = {}
            texts = ["", *(text for text, _ in call_skeletons(tools, family))]
            for text in texts:
                path, body = tokenize_request(self.server_kind, self.model, text)
                count = token_count(await self._transport.get_json(path, body))
                if count is None:
                    counts = {}
                    break
                counts[text] = count
            self._skeleton_counts[key] = counts
        if not counts:
            return len
        base = counts[""]  # a BOS the server's count may include
        return lambda text: counts[text] - base

    async def _grammar_for(
        self, tools: Sequence[Mapping[str, Any]], max_tokens: int
    ) -> ToolCallGrammar:
        family = self.tool_call_family()
        caps = string_caps(tools, family, max_tokens, await self._skeleton_tokens(tools, family))
        key = (json.dumps(list(tools), sort_keys=True), family, tuple(caps))
        with self._lock:
            cached = self._grammars.get(key)
        if cached is None:
            cached = tool_call_grammar(tools, family, caps)
            with self._lock:
                self._grammars[key] = cached
        return cached

    def slot_for(self, agent_id: int) -> int | None:
        """The server slot an agent's generations ask for (llama.cpp), so its dialog stays in
        that slot's cache from turn to turn; None lets the server choose."""
        if self.server_kind is not ServerKind.LLAMA_CPP:
            return None
        slots = self._slots or (self._props or {}).get("total_slots")
        return agent_id % slots if isinstance(slots, int) and slots > 0 else None

    # --- generation ---

    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        """Stream a completion of the rendered chat from the server (4001 on its failures)."""
        stats = GenerationStats(agent_id=request.agent_id, instance=0)
        self._under_way.begin()
        stats.started = started = time.perf_counter()
        try:
            await self._server_props_async()
            await self._generate(request, on_delta, stats)
        except asyncio.CancelledError:
            stats.cancelled = True
            stats.tokens_at_cancel = stats.tokens
            raise
        except ServedModelError as exc:
            stats.error = str(exc)
            raise ServedModelError(f"model '{self.name}': {exc}") from None
        finally:
            stats.seconds = time.perf_counter() - started
            self.generations.append(stats)
            self._under_way.end()
            log.debug(
                "served.generated", model=self.name, slot=stats.instance, **stats.log_fields()
            )
        return GenerationResult(stats.text, stats.tokens, stats.prompt_tokens)

    async def _generate(
        self,
        request: GenerationRequest,
        on_delta: Callable[[str], None] | None,
        stats: GenerationStats,
    ) -> None:
        tools = request.tools or None
        stats.prompt = prompt = self.render_prompt(request.messages, tools)
        slot = self.slot_for(request.agent_id)
        stats.instance = slot or 0
        sampling = self.entry.sampling_for(request.sampling)
        run = Run(
            self._transport,
            self.completion,
            request,
            stats,
            sampling,
            slot,
            self.entry.stop,
            bool(tools),
        )
        budget = sampling.max_tokens

        mode = ToolGrammar(self.tool_grammar) if tools else ToolGrammar.OFF
        stats.grammar = mode.value
        spec = None
        if tools and mode is not ToolGrammar.OFF:
            spec = await self._grammar_for(tools, budget)
        # Tool-call replies are parsed whole, so they are not streamed piece by piece.
        trigger: str | bool | None = False
        if spec is not None and mode is ToolGrammar.LAZY:
            trigger = spec.trigger
        reply = Reply(self.entry.stop, None if tools else on_delta, trigger)

        if spec is not None and mode is ToolGrammar.REQUIRED:
            # The call's fixed head is prompt, not sampled (as for a local model).
            reply.text = (spec.trigger or "") + spec.forced
            await run.stream(prompt + reply.text, reply, max(budget, spec.max_tokens), spec.gbnf)
        else:
            sampled = await run.stream(prompt, reply, budget, None)
            if reply.cut is not None and tools and not stats.cancelled:
                # The model opened a call: keep what it wrote up to the opener, force the
                # call's fixed head, and constrain only the rest.
                stats.grammar = "lazy-triggered"
                budget -= sampled
                spec = await self._grammar_for(tools, budget)
                reply.text = reply.text[: reply.cut] + spec.forced
                reply.trigger = False
                await run.stream(
                    prompt + reply.text, reply, max(budget, spec.max_tokens), spec.gbnf
                )
        stats.text = reply.finish()
        if tools and on_delta is not None and stats.text:
            on_delta(stats.text)

    def completion(self, completion: Completion) -> dict[str, Any]:
        """The request body of `completion` for this model's server kind."""
        return completion_body(self.server_kind, self.model, completion)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no generation or scoring is under way (a cancelled one counts until its
        stream is closed and its record kept); False if `timeout` seconds passed first."""
        return self._under_way.wait_idle(timeout)

    async def aclose(self) -> None:
        """Close the pooled connections of the running loop's client."""
        await self._transport.aclose()


def _entry(base_url: str, name: str | None, entry: CatalogEntry | str | None) -> CatalogEntry:
    """The entry a served model starts from (a catalog name is looked up)."""
    if isinstance(entry, str):
        entry = catalog_entry(entry)
    if entry is None:
        # The weights live on the server: `path` only says where, for humans.
        return CatalogEntry(name=name or "served", path=base_url)
    if not isinstance(entry, CatalogEntry):
        raise TypeError(f"entry must be a CatalogEntry or a name, got {type(entry).__name__}")
    return entry
