"""The `llama` backend: real inference on a GGUF model with llama-cpp-python.

A `LlamaModel` renders each chat through the model's own Jinja chat template (or the catalog's
override), generates on a worker thread — one per loaded llama.cpp instance, since a context is
not thread-safe — streams token deltas back to the engine loop, stops within a token when its
awaiting task is cancelled, and can constrain tool calls with a GBNF grammar built from the
declared tools. Nothing is loaded until the first generation (or an explicit `load()`), so
creating an engine over it stays cheap.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import wait as wait_futures
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...graph.model_params import SamplingParams
from ...support.logs import get_logger
from ...tools.families import ToolCallFamily, detect_family
from ..base import ChatMessage, GenerationRequest, GenerationResult, ModelBackend
from ..catalog import DEFAULT_MODEL, CatalogEntry, PathSource, ToolGrammar, catalog_entry
from .batching import DEFAULT_SEQUENCES, MAX_SEQUENCES, BatchedDecoder
from .chat_template import (
    CHATML_FALLBACK,
    TEMPLATE_KEY,
    TOOL_USE_TEMPLATE_KEY,
    ChatTemplate,
    probe_chat_template,
    uses_tools,
)
from .counting import PromptBudget, TokenCounter
from .generation import Replies, drive_alone
from .grammar import ToolCallGrammar, string_caps, tool_call_grammar
from .kept import DEFAULT_KEPT_MB
from .native import Instance, Vocab, check_gguf, load_llama, read_vocab_only, require_llama_cpp
from .scoring import LikelihoodScoring
from .streaming import DeltaRelay, GenerationStats, Job

if TYPE_CHECKING:
    from llama_cpp import Llama

log = get_logger("turnloom.llama")


class LlamaModel(Replies, PromptBudget, LikelihoodScoring, ModelBackend):
    """A GGUF model run by llama-cpp-python, loaded lazily.

    By default one context decodes up to `sequences` (4) agents' generations together
    (continuous batching, see `batching`): each agent may use the whole `n_ctx`, the context
    holds `sequences x n_ctx` KV cells, and an agent's cached prompt stays while there is room.
    `instances=N` (with `sequences=1`, its default then) runs N contexts of one sequence each on
    N worker threads instead. `kept_prompts_mb` caps the host memory that keeps the cached
    prompts of agents whose sequence went to another (0: none kept). A path that is not a
    readable GGUF is refused here, not at the first turn (see `check_gguf`).
    """

    def __init__(
        self,
        model_path: PathSource,
        *,
        name: str | None = None,
        n_ctx: int = 4096,
        chat_template: str | None = None,
        tool_call_family: ToolCallFamily | None = None,
        tool_grammar: ToolGrammar | str = ToolGrammar.OFF,
        sampling: Mapping[str, Any] | None = None,
        stop: Sequence[str] = (),
        llama_options: Mapping[str, Any] | None = None,
        instances: int = 1,
        sequences: int | None = None,
        kept_prompts_mb: int = DEFAULT_KEPT_MB,
    ) -> None:
        if name is None:
            name = Path(model_path).stem if isinstance(model_path, str | Path) else "llama"
        entry = CatalogEntry(
            name=name,
            path=model_path,
            n_ctx=n_ctx,
            chat_template=chat_template,
            tool_call_family=tool_call_family,
            sampling=sampling or {},
            tool_grammar=ToolGrammar(tool_grammar),
            stop=tuple(stop),
            llama_options=llama_options or {},
        )
        self._setup(entry, instances, sequences, kept_prompts_mb)

    @classmethod
    def from_catalog(
        cls,
        catalog_name: str = DEFAULT_MODEL,
        /,
        *,
        instances: int = 1,
        sequences: int | None = None,
        kept_prompts_mb: int = DEFAULT_KEPT_MB,
        **overrides: Any,
    ) -> LlamaModel:
        """The catalog's model `catalog_name`, with `CatalogEntry` fields overridden (`name=`
        renames it for graphs; `chat_template=` re-detects family and grammar, as `replace`)."""
        entry = catalog_entry(catalog_name)
        if overrides:
            entry = entry.replace(**overrides)
        model = cls.__new__(cls)
        model._setup(entry, instances, sequences, kept_prompts_mb)
        return model

    def _setup(
        self, entry: CatalogEntry, instances: int, sequences: int | None, kept_prompts_mb: int
    ) -> None:
        if not isinstance(instances, int) or instances < 1:
            raise ValueError(f"instances must be an int >= 1, got {instances!r}")
        if sequences is None:  # several instances are the one-sequence-per-context path
            sequences = DEFAULT_SEQUENCES if instances == 1 else 1
        if not isinstance(sequences, int) or not 1 <= sequences <= MAX_SEQUENCES:
            raise ValueError(f"sequences must be an int in 1 … {MAX_SEQUENCES}, got {sequences!r}")
        if sequences > 1 and instances > 1:
            raise ValueError(
                f"sequences={sequences} decodes agents together in one context; instances="
                f"{instances} gives each its own: pick one (sequences=1 for instances)"
            )
        if not isinstance(kept_prompts_mb, int) or kept_prompts_mb < 0:
            raise ValueError(f"kept_prompts_mb must be an int >= 0, got {kept_prompts_mb!r}")
        require_llama_cpp()
        entry.check_sampling()
        self.entry = entry
        self.name = entry.name
        #: Grammar-constrained tool calls; may be changed between generations.
        self.tool_grammar = entry.tool_grammar
        #: The most recent generations, newest last.
        self.generations: deque[GenerationStats] = deque(maxlen=128)
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._vocab: Vocab | None = None
        self._templates: dict[bool, ChatTemplate] = {}
        self._grammars: dict[tuple[Any, ...], ToolCallGrammar] = {}
        self._support_error: tuple[str | None] | None = None
        # Each instance keeps the prompts of the agents it serves, within its share of the cap.
        kept = (kept_prompts_mb << 20) // instances
        self._instances = [Instance(self.name, i, self._load_llama, kept) for i in range(instances)]
        #: With `sequences` > 1, every generation is decoded in one batched context.
        self._batcher = (
            BatchedDecoder(
                self.name, self._instances[0], sequences, entry.n_ctx, kept, self._generation
            )
            if sequences > 1
            else None
        )
        self._counter = TokenCounter(self.name, self.model_path)
        self._reserves: dict[tuple[str, int], int] = {}
        if not callable(entry.path):  # a resolver (the default model's) may write a file: later
            self.model_path()

    def __repr__(self) -> str:
        return (
            f"LlamaModel(name={self.name!r}, instances={len(self._instances)}, "
            f"loaded={self.loaded})"
        )

    # --- loading ---

    @property
    def loaded(self) -> bool:
        """Whether every instance has its weights loaded."""
        return all(inst.llama is not None for inst in self._instances)

    @property
    def instances(self) -> int:
        """How many llama.cpp instances (worker threads) this model runs on."""
        return len(self._instances)

    def model_path(self) -> Path:
        """The GGUF file (running the catalog's resolver on first call), checked readable."""
        with self._lock:
            if self._path is None:
                path = self.entry.resolve_path()
                check_gguf(path, self.name)
                self._path = path
            return self._path

    def load(self) -> LlamaModel:
        """Load every instance now (blocking), instead of on first use; returns self."""
        futures = [inst.executor.submit(inst.ensure_loaded) for inst in self._instances]
        for future in futures:
            future.result()
        return self

    def close(self) -> None:
        """Stop the worker threads and free the models (the object is unusable after)."""
        if self._batcher is not None:
            self._batcher.close()
        for inst in self._instances:
            inst.close()
        self._counter.close()

    def _load_llama(self, inst: Instance) -> Llama:
        llm, vocab = load_llama(inst, self.model_path(), self.entry)
        with self._lock:
            if self._vocab is None:
                self._vocab = vocab
        return llm

    def _vocab_info(self) -> Vocab:
        with self._lock:
            if self._vocab is not None:
                return self._vocab
        vocab = read_vocab_only(self.model_path())
        with self._lock:
            if self._vocab is None:
                self._vocab = vocab
            return self._vocab

    # --- templates and tools ---

    def template_source(self, with_tools: bool = True) -> str | None:
        """The Jinja chat template this model renders with (the catalog's, else the GGUF's).

        Without a catalog template this reads the GGUF's vocabulary (not its weights) once.
        """
        if self.entry.chat_template is not None:
            return self.entry.chat_template
        templates = self._vocab_info().templates
        if with_tools and TOOL_USE_TEMPLATE_KEY in templates:
            return templates[TOOL_USE_TEMPLATE_KEY]
        return templates.get(TEMPLATE_KEY)

    def chat_template(self, with_tools: bool = True) -> ChatTemplate:
        """The template used to render chats (with or without tool traffic)."""
        with self._lock:
            cached = self._templates.get(with_tools)
        if cached is not None:
            return cached
        vocab = self._vocab_info()
        source = self.template_source(with_tools) or CHATML_FALLBACK
        template = ChatTemplate(source, bos_token=vocab.bos_text, eos_token=vocab.eos_text)
        with self._lock:
            return self._templates.setdefault(with_tools, template)

    def render_prompt(
        self, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> str:
        """The prompt text the model would see for this chat."""
        return self.chat_template(uses_tools(messages, tools)).render(messages, tools)

    def tool_call_family(self) -> ToolCallFamily:
        """The catalog's family, else the one detected from the chat template."""
        if self.entry.tool_call_family is not None:
            return self.entry.tool_call_family
        try:
            return detect_family(self.template_source(with_tools=True))
        except Exception:  # an unreadable GGUF: any parser will do, generation reports it
            return ToolCallFamily.GENERIC

    def tool_support_error(self) -> str | None:
        """Why its template cannot serve tool calls (`probe_chat_template`), or None."""
        if self._support_error is None:
            try:
                reason = probe_chat_template(self.template_source(True), self.tool_call_family())
            except Exception as exc:
                reason = f"its GGUF could not be read: {type(exc).__name__}: {exc}"
            self._support_error = (None if reason is None else f"model '{self.name}': {reason}",)
        return self._support_error[0]

    def _grammar_for(
        self, inst: Instance, tools: Sequence[Mapping[str, Any]], max_tokens: int
    ) -> ToolCallGrammar:
        llm = inst.ensure_loaded()
        family = self.tool_call_family()
        caps = string_caps(
            tools,
            family,
            max_tokens,
            lambda text: len(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)),
        )
        key = (json.dumps(list(tools), sort_keys=True), family, tuple(caps))
        with self._lock:
            cached = self._grammars.get(key)
        if cached is None:
            cached = tool_call_grammar(tools, family, caps)
            with self._lock:
                self._grammars[key] = cached
        return cached

    # --- generation ---

    def instance_for(self, agent_id: int) -> int:
        """The instance an agent's generations run on (the same one for all its turns)."""
        # A fixed function of the id rather than a table: nothing to grow with every agent ever
        # created, and engine ids are sequential, so agents spread evenly.
        return agent_id % len(self._instances)

    def _adds_bos(self, prompt: str) -> bool:
        vocab = self._vocab_info()
        # The template writes BOS itself when it starts with bos_token: adding one more would
        # give the model a doubled BOS it never saw in training.
        return vocab.add_bos and not (vocab.bos_text and prompt.startswith(vocab.bos_text))

    def _tokenize_prompt(self, llm: Llama, prompt: str) -> list[int]:
        add_bos = self._adds_bos(prompt)
        return list(llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=True))

    def tokenize(self, text: str) -> list[int]:
        """Token ids of `text` (special tokens parsed, no BOS added); loads the model."""
        llm = self._instances[0].ensure_loaded()
        return list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def prompt_token_ids(
        self, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> list[int]:
        """The token ids the model is fed for this chat (exactly one BOS); loads the model."""
        llm = self._instances[0].ensure_loaded()
        return self._tokenize_prompt(llm, self.render_prompt(messages, tools))

    def _effective_sampling(self, requested: SamplingParams) -> SamplingParams:
        return self.entry.sampling_for(requested)

    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        """Generate on the agent's instance thread, streaming deltas onto this loop."""
        loop, index = asyncio.get_running_loop(), self.instance_for(request.agent_id)
        job = Job(request, None, GenerationStats(agent_id=request.agent_id, instance=index))
        # Every piece the worker relays also brings the turn's token count up to date.
        relay = request.progress.tracking(lambda: job.stats.tokens, on_delta)
        job.emit = DeltaRelay(loop, relay, job.cancelled).emit
        if self._batcher is not None:
            future = self._batcher.submit(job)
        else:
            future = self._instances[index].executor.submit(self._run, self._instances[index], job)
        try:
            stats = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            job.cancelled.set()  # the worker checks this before each token
            job.stats.tokens_at_cancel = job.stats.tokens
            request.progress.reach(job.stats.tokens_at_cancel)
            raise
        return GenerationResult(stats.text, stats.tokens, stats.prompt_tokens)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every worker has finished the jobs queued so far (cancelled ones too)."""
        futures: list[Future[None]] = [
            inst.executor.submit(lambda: None) for inst in self._instances
        ]
        done, _ = wait_futures(futures, timeout=timeout)
        batched = self._batcher is None or self._batcher.wait_idle(timeout)
        return len(done) == len(futures) and batched

    def _run(self, inst: Instance, job: Job) -> GenerationStats:
        """One generation on an instance's own context (the worker thread's)."""
        drive_alone(inst.serve(job.request.agent_id), self._generation(inst, job))
        return job.stats
