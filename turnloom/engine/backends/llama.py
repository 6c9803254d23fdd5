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
import codecs
import dataclasses
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from ..params import SamplingParams
from ..tool_parsing import ToolCallFamily, detect_family
from .base import ChatMessage, GenerationRequest, GenerationResult, ModelBackend
from .catalog import DEFAULT_MODEL, CatalogEntry, PathSource, ToolGrammar, catalog_entry

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar

__all__ = [
    "ChatTemplate",
    "GenerationStats",
    "LlamaModel",
    "ToolCallGrammar",
    "probe_chat_template",
    "string_caps",
    "tool_call_grammar",
]

log = structlog.get_logger("turnloom.llama")

#: Metadata keys of the chat templates a GGUF may carry (the second for requests with tools).
TEMPLATE_KEY = "tokenizer.chat_template"
TOOL_USE_TEMPLATE_KEY = "tokenizer.chat_template.tool_use"

# Used only for plain chats on a GGUF without any template (as llama.cpp's server does); such a
# model still fails the tool probe, since this renders no tools.
_CHATML_FALLBACK = (
    "{% for message in messages %}<|im_start|>{{ message.role }}\n"
    "{{ message.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Longest string argument a constrained call may hold. The grammar enforces a bound so that a
# small model that never closes its string (say, "1000000...") still ends with a parseable
# call; under a small max_tokens the bound shrinks further (see `string_caps`).
_MAX_STRING_CHARS = 200


# --- chat templates ----------------------------------------------------------------------------


class ChatTemplate:
    """A Jinja chat template, rendered the way llama-cpp-python renders one (sandboxed jinja2)."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        # llama-cpp-python's own formatter: an ImmutableSandboxedEnvironment with the same
        # tojson, raise_exception and strftime_now as Transformers' chat templates.
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        # Typed against llama-cpp-python's TypedDict messages; ours are plain dicts.
        self._formatter: Any = Jinja2ChatFormatter(
            source, eos_token=eos_token, bos_token=bos_token, add_generation_prompt=True
        )

    def render(
        self, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> str:
        """The prompt for `messages` (and `tools`), ending with the generation prompt."""
        response = self._formatter(messages=list(messages), tools=list(tools) if tools else None)
        return str(response.prompt)


_PROBE_TOOL_NAME = "turnloom_probe_tool"
_PROBE_ARGUMENT = "turnloom-probe-argument"
_PROBE_RESULT = "turnloom-probe-result"
# A real template's checks are taken into account: Mistral's demands 9-character alphanumeric
# call ids (the engine's c%08x ids are exactly that), Gemma 2's rejects a system message.
_PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": _PROBE_TOOL_NAME,
        "description": "Look something up.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look up."}},
            "required": ["query"],
        },
    },
}
_PROBE_OFFER: list[ChatMessage] = [{"role": "user", "content": "What can you look up?"}]
_PROBE_EXCHANGE: list[ChatMessage] = [
    {"role": "user", "content": "Look it up."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c00000000",
                "type": "function",
                "function": {"name": _PROBE_TOOL_NAME, "arguments": {"query": _PROBE_ARGUMENT}},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c00000000",
        "name": _PROBE_TOOL_NAME,
        "content": _PROBE_RESULT,
    },
]


def probe_chat_template(source: str | None) -> str | None:
    """Why a chat template cannot offer tools and show call/result pairs, or None if it can."""
    if not source:
        return "it has no chat template"
    try:
        template = ChatTemplate(source)
        offered = template.render(_PROBE_OFFER, [_PROBE_TOOL])
        exchanged = template.render(_PROBE_EXCHANGE, [_PROBE_TOOL])
    except Exception as exc:  # a template is user data: any failure is a reason to refuse it
        return f"its chat template failed to render tools: {type(exc).__name__}: {exc}"
    if _PROBE_TOOL_NAME not in offered:
        return "its chat template does not render the tools it is given"
    if _PROBE_ARGUMENT not in exchanged:
        return "its chat template does not render the assistant's tool calls"
    if _PROBE_RESULT not in exchanged:
        return "its chat template does not render tool results"
    return None


def _uses_tools(messages: Sequence[ChatMessage], tools: object) -> bool:
    return bool(tools) or any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


# --- tool-call grammars ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _CallMarkup:
    opener: str  # what announces a call ("" for bare JSON)
    body_open: str  # between the opener and the call object
    closer: str  # after the call object
    arguments_key: str


_MARKUP = {
    ToolCallFamily.HERMES: _CallMarkup("<tool_call>", "", "</tool_call>", "arguments"),
    ToolCallFamily.GENERIC: _CallMarkup("<tool_call>", "", "</tool_call>", "arguments"),
    ToolCallFamily.MISTRAL: _CallMarkup("[TOOL_CALLS]", "[", "]", "arguments"),
    ToolCallFamily.LLAMA3: _CallMarkup("", "", "", "parameters"),
}


@dataclass(frozen=True, slots=True)
class ToolCallGrammar:
    """How to constrain one tool call: text to force, then a GBNF grammar for the rest."""

    #: What announces a call in free text (None: a bare JSON object at the start of the reply).
    trigger: str | None
    #: Text every call starts with after the trigger; it is fed to the model as prompt rather
    #: than sampled, because a grammar-constrained token costs several free ones.
    forced: str
    #: GBNF for the rest of the call, closing markup included.
    gbnf: str


def _gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r") + '"'


_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


def _constrained_schema(schema: object, max_chars: int = _MAX_STRING_CHARS) -> dict[str, Any]:
    """The tool's parameter schema as the grammar enforces it: all declared, strings bounded."""
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}
    properties: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        prop = dict(prop) if isinstance(prop, Mapping) else {}
        prop.pop("description", None)
        kind = prop.get("type")
        if kind == "string":
            # A required string left empty is no answer: small models pick "" greedily.
            prop.setdefault("minLength", 1)
            prop.setdefault("maxLength", max_chars)
        elif kind not in _JSON_TYPES:
            prop = {}  # any JSON value
        properties[str(name)] = prop
    return {"type": "object", "properties": properties, "required": list(properties)}


_SKELETON_VALUES: dict[str, object] = {
    "string": "",
    "integer": 10**15,  # the converter allows up to 16 digits
    "number": -(10**15) - 0.5,
    "boolean": False,
    "array": [],
    "object": {},
}


def string_caps(
    tools: Sequence[Mapping[str, Any]],
    family: ToolCallFamily,
    max_tokens: int,
    count_tokens: Callable[[str], int] = len,
) -> list[int]:
    """Per tool, the longest string argument that lets its call close within `max_tokens`.

    The call's fixed parts are counted with `count_tokens` (numbers at their longest) and each
    string character as one token, the worst case (e.g. a run of digits): the bound holds for a
    model stuck repeating one character.
    """
    markup = _MARKUP.get(family, _MARKUP[ToolCallFamily.GENERIC])
    caps = []
    for tool in tools:
        fn = tool.get("function", tool)
        props = _constrained_schema(fn.get("parameters"))["properties"]
        strings = sum(1 for prop in props.values() if prop.get("type") == "string")
        skeleton = {k: _SKELETON_VALUES.get(p.get("type", "object"), {}) for k, p in props.items()}
        call = json.dumps({"name": fn.get("name"), markup.arguments_key: skeleton})
        if len(tools) == 1:  # the head is forced as prompt, not sampled
            call = call[len(_head(fn, markup)) - len(markup.body_open) :]
        fixed = count_tokens(call + markup.closer)
        cap = (max_tokens - fixed) // strings if strings else _MAX_STRING_CHARS
        caps.append(min(max(cap, 1), _MAX_STRING_CHARS))
    return caps


def _head(fn: Mapping[str, Any], markup: _CallMarkup) -> str:
    return markup.body_open + f'{{"name": {json.dumps(fn["name"])}, "{markup.arguments_key}": '


def tool_call_grammar(
    tools: Sequence[Mapping[str, Any]],
    family: ToolCallFamily,
    max_string_chars: Sequence[int] | None = None,
) -> ToolCallGrammar:
    """The grammar of one call to one of `tools`, in the markup of `family` (string arguments
    of tool i at most `max_string_chars[i]` characters)."""
    from llama_cpp.llama_grammar import SchemaConverter

    markup = _MARKUP.get(family, _MARKUP[ToolCallFamily.GENERIC])
    functions = [tool.get("function", tool) for tool in tools]
    if not functions:
        raise ValueError("a tool-call grammar needs at least one tool")
    caps = list(max_string_chars or [_MAX_STRING_CHARS] * len(functions))
    converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    tail = f'"}}" {_gbnf_literal(markup.closer)}' if markup.closer else '"}"'
    rules = []
    args = [
        converter.visit(_constrained_schema(fn.get("parameters"), cap), f"args-{index}")
        for index, (fn, cap) in enumerate(zip(functions, caps, strict=True))
    ]
    if len(functions) == 1:
        # One tool: its whole head is fixed text, so only the argument values are sampled.
        forced = _head(functions[0], markup)
        rules.append(f"root ::= {args[0]} {tail}")
    else:
        forced = markup.body_open + '{"name": '
        for index, fn in enumerate(functions):
            head = _head(fn, markup)[len(forced) :]
            rules.append(f"tool-{index} ::= {_gbnf_literal(head)} {args[index]}")
        heads = " | ".join(f"tool-{index}" for index in range(len(functions)))
        rules.append(f"root ::= ({heads}) {tail}")
    gbnf = converter.format_grammar() + "\n" + "\n".join(rules) + "\n"
    return ToolCallGrammar(trigger=markup.opener or None, forced=forced, gbnf=gbnf)


# --- statistics --------------------------------------------------------------------------------


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


# --- llama.cpp's own log --------------------------------------------------------------------

_LOG_HOOK: list[Any] = []  # keeps the ctypes callback alive for as long as llama.cpp holds it
_LOG_HOOK_LOCK = threading.Lock()


def _route_llama_logs() -> None:
    """Send llama.cpp's warnings and errors to structlog instead of stderr; drop the rest.

    llama-cpp-python's own hook maps ggml's log levels off by one, so it prints warnings such
    as "using full-size SWA cache" even with verbose=False; in a game or a demo that is noise.
    Its info and debug lines (hundreds per load) are dropped rather than logged.
    """
    import ctypes

    import llama_cpp

    with _LOG_HOOK_LOCK:
        if _LOG_HOOK:
            return
        last_level = [0]

        @llama_cpp.llama_log_callback
        def hook(level: int, text: bytes, user_data: object) -> None:
            # ggml levels: 1 debug, 2 info, 3 warn, 4 error, 5 continues the previous line.
            if level != 5:
                last_level[0] = level
            message = text.decode("utf-8", "replace").rstrip()
            if not message or last_level[0] < 3:
                return
            if last_level[0] >= 4:
                log.warning("llama.cpp", message=message)
            else:
                log.debug("llama.cpp", message=message)

        _LOG_HOOK.append(hook)
        llama_cpp.llama_log_set(hook, ctypes.c_void_p(0))


# --- instances ---------------------------------------------------------------------------------


@dataclass(slots=True)
class _Vocab:
    templates: dict[str, str]
    bos_text: str
    eos_text: str
    add_bos: bool


def _vocab_of(model_ptr: Any, metadata: Mapping[str, str]) -> _Vocab:
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(model_ptr)

    def text(token: int) -> str:
        if token < 0:
            return ""
        return bytes(llama_cpp.llama_vocab_get_text(vocab, token)).decode("utf-8", "replace")

    return _Vocab(
        templates={k: v for k, v in metadata.items() if k.startswith(TEMPLATE_KEY)},
        bos_text=text(llama_cpp.llama_vocab_bos(vocab)),
        eos_text=text(llama_cpp.llama_vocab_eos(vocab)),
        add_bos=bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
    )


def _read_vocab_only(path: Path) -> _Vocab:
    """Templates and special tokens of a GGUF, without loading its weights."""
    import llama_cpp
    from llama_cpp._internals import LlamaModel as _NativeModel

    if not path.is_file():
        raise FileNotFoundError(f"GGUF not found: {path}")
    _route_llama_logs()
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    # The gguf package would parse every vocabulary entry into Python objects (seconds for a
    # 262k vocabulary); llama.cpp's vocab-only load is its own reader and far quicker.
    native = _NativeModel(path_model=str(path), params=params, verbose=False)
    try:
        return _vocab_of(native.model, native.metadata())
    finally:
        native.close()


class _Instance:
    """One llama.cpp model+context and the single thread allowed to use it."""

    def __init__(self, owner: LlamaModel, index: int) -> None:
        self.owner = owner
        self.index = index
        self.executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"turnloom-llama-{owner.name}-{index}"
        )
        self.llama: Llama | None = None
        self.stop_tokens: frozenset[int] = frozenset()
        self.vocab_ptr: Any = None
        self._lock = threading.Lock()

    def ensure_loaded(self) -> Llama:
        with self._lock:
            if self.llama is None:
                self.llama = self.owner._load_llama(self)
            return self.llama

    def close(self) -> None:
        self.executor.shutdown(wait=True)
        with self._lock:
            if self.llama is not None:
                self.llama.close()
                self.llama = None


class _DeltaRelay:
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
class _Job:
    request: GenerationRequest
    emit: Callable[[str], None] | None
    stats: GenerationStats
    cancelled: threading.Event = field(default_factory=threading.Event)


class _Reply:
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


# --- the backend -------------------------------------------------------------------------------


class LlamaModel(ModelBackend):
    """A GGUF model run by llama-cpp-python, loaded lazily, on `instances` worker threads."""

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
        self._setup(entry, instances)

    @classmethod
    def from_catalog(
        cls, catalog_name: str = DEFAULT_MODEL, /, *, instances: int = 1, **overrides: Any
    ) -> LlamaModel:
        """The catalog's model `catalog_name`, with any `CatalogEntry` field overridden (a
        `name=` override changes the name graphs use for it)."""
        entry = catalog_entry(catalog_name)
        if overrides:
            entry = entry.replace(**overrides)
        model = cls.__new__(cls)
        model._setup(entry, instances)
        return model

    def _setup(self, entry: CatalogEntry, instances: int) -> None:
        if not isinstance(instances, int) or instances < 1:
            raise ValueError(f"instances must be an int >= 1, got {instances!r}")
        unknown = set(entry.sampling) - {f.name for f in dataclasses.fields(SamplingParams)}
        if unknown:
            raise ValueError(f"unknown sampling field(s) {sorted(unknown)} for '{entry.name}'")
        self.entry = entry
        self.name = entry.name
        #: Grammar-constrained tool calls; may be changed between generations.
        self.tool_grammar = entry.tool_grammar
        #: The most recent generations, newest last.
        self.generations: deque[GenerationStats] = deque(maxlen=128)
        self._lock = threading.Lock()
        self._path: Path | None = None
        self._vocab: _Vocab | None = None
        self._templates: dict[bool, ChatTemplate] = {}
        self._grammars: dict[tuple[Any, ...], tuple[ToolCallGrammar, Any]] = {}
        self._support_error: tuple[str | None] | None = None
        self._instances = [_Instance(self, i) for i in range(instances)]

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
        """The GGUF file (running the catalog's resolver on first call)."""
        with self._lock:
            if self._path is None:
                self._path = self.entry.resolve_path()
            return self._path

    def load(self) -> LlamaModel:
        """Load every instance now (blocking), instead of on first use; returns self."""
        futures = [inst.executor.submit(inst.ensure_loaded) for inst in self._instances]
        for future in futures:
            future.result()
        return self

    def close(self) -> None:
        """Stop the worker threads and free the models (the object is unusable after)."""
        for inst in self._instances:
            inst.close()

    def _load_llama(self, inst: _Instance) -> Llama:
        import llama_cpp

        path = self.model_path()
        _route_llama_logs()
        options: dict[str, Any] = {"n_ctx": self.entry.n_ctx, "verbose": False}
        options.update(self.entry.llama_options)
        started = time.perf_counter()
        llm = llama_cpp.Llama(model_path=str(path), **options)
        vocab = _vocab_of(llm.model, llm.metadata)
        with self._lock:
            if self._vocab is None:
                self._vocab = vocab
        inst.vocab_ptr = llama_cpp.llama_model_get_vocab(llm.model)
        stop_tokens = set()
        for stop in self.entry.stop:
            ids = llm.tokenize(stop.encode("utf-8"), add_bos=False, special=True)
            if len(ids) == 1:
                stop_tokens.add(ids[0])
        inst.stop_tokens = frozenset(stop_tokens)
        log.info(
            "llama.loaded",
            model=self.name,
            instance=inst.index,
            path=str(path),
            n_ctx=llm.n_ctx(),
            seconds=round(time.perf_counter() - started, 3),
        )
        return llm

    def _vocab_info(self) -> _Vocab:
        with self._lock:
            if self._vocab is not None:
                return self._vocab
        vocab = _read_vocab_only(self.model_path())
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
        source = self.template_source(with_tools) or _CHATML_FALLBACK
        template = ChatTemplate(source, bos_token=vocab.bos_text, eos_token=vocab.eos_text)
        with self._lock:
            return self._templates.setdefault(with_tools, template)

    def render_prompt(
        self, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> str:
        """The prompt text the model would see for this chat."""
        return self.chat_template(_uses_tools(messages, tools)).render(messages, tools)

    def tool_call_family(self) -> ToolCallFamily:
        """The catalog's family, else the one detected from the chat template."""
        if self.entry.tool_call_family is not None:
            return self.entry.tool_call_family
        try:
            return detect_family(self.template_source(with_tools=True))
        except Exception:  # an unreadable GGUF: any parser will do, generation reports it
            return ToolCallFamily.GENERIC

    def tool_support_error(self) -> str | None:
        """Why this model's chat template cannot render tools, or None if it can (R-T1)."""
        if self._support_error is None:
            try:
                reason = probe_chat_template(self.template_source(with_tools=True))
            except Exception as exc:
                reason = f"its GGUF could not be read: {type(exc).__name__}: {exc}"
            self._support_error = (None if reason is None else f"model '{self.name}': {reason}",)
        return self._support_error[0]

    def _grammar_for(
        self, inst: _Instance, tools: Sequence[Mapping[str, Any]], max_tokens: int
    ) -> tuple[ToolCallGrammar, LlamaGrammar]:
        from llama_cpp import LlamaGrammar

        llm = inst.llama
        assert llm is not None
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
            spec = tool_call_grammar(tools, family, caps)
            cached = (spec, LlamaGrammar.from_string(spec.gbnf, verbose=False))
            with self._lock:
                self._grammars[key] = cached
        return cached

    # --- generation ---

    def instance_for(self, agent_id: int) -> int:
        """The instance an agent's generations run on (the same one for all its turns)."""
        # A fixed function of the id rather than a table: nothing to grow with every agent ever
        # created, and engine ids are sequential, so agents spread evenly.
        return agent_id % len(self._instances)

    def _tokenize_prompt(self, llm: Llama, prompt: str) -> list[int]:
        vocab = self._vocab_info()
        # The template writes BOS itself when it starts with bos_token: adding one more would
        # give the model a doubled BOS it never saw in training.
        add_bos = vocab.add_bos and not (vocab.bos_text and prompt.startswith(vocab.bos_text))
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
        if not self.entry.sampling:
            return requested
        defaults = SamplingParams()
        changes = {
            key: value
            for key, value in self.entry.sampling.items()
            if getattr(requested, key) == getattr(defaults, key)
        }
        return dataclasses.replace(requested, **changes) if changes else requested

    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        """Generate on the agent's instance thread, streaming deltas onto this loop."""
        loop = asyncio.get_running_loop()
        index = self.instance_for(request.agent_id)
        job = _Job(request, None, GenerationStats(agent_id=request.agent_id, instance=index))
        if on_delta is not None:
            job.emit = _DeltaRelay(loop, on_delta, job.cancelled).emit
        future = self._instances[index].executor.submit(self._run, self._instances[index], job)
        try:
            stats = await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            job.cancelled.set()  # the worker checks this before each token
            job.stats.tokens_at_cancel = job.stats.tokens
            raise
        return GenerationResult(stats.text, stats.tokens)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every worker has finished the jobs queued so far (cancelled ones too)."""
        futures: list[Future[None]] = [
            inst.executor.submit(lambda: None) for inst in self._instances
        ]
        done, _ = wait_futures(futures, timeout=timeout)
        return len(done) == len(futures)

    def _run(self, inst: _Instance, job: _Job) -> GenerationStats:
        stats = job.stats
        stats.started = started = time.perf_counter()
        try:
            self._generate_on_worker(inst, job)
        except BaseException as exc:
            stats.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            stats.seconds = time.perf_counter() - started
            self.generations.append(stats)
            log.debug(
                "llama.generated",
                model=self.name,
                agent_id=stats.agent_id,
                instance=stats.instance,
                prompt_tokens=stats.prompt_tokens,
                evaluated=stats.prompt_tokens_evaluated,
                tokens=stats.tokens,
                grammar=stats.grammar,
                cancelled=stats.cancelled,
                error=stats.error,
                seconds=round(stats.seconds, 3),
            )
        return stats

    def _generate_on_worker(self, inst: _Instance, job: _Job) -> None:
        if job.cancelled.is_set():  # cancelled while queued behind another generation
            job.stats.cancelled = True
            return
        llm = inst.ensure_loaded()
        request, stats = job.request, job.stats
        tools = request.tools or None
        stats.prompt = prompt = self.render_prompt(request.messages, tools)
        tokens = self._tokenize_prompt(llm, prompt)
        stats.prompt_tokens = len(tokens)
        room = llm.n_ctx() - len(tokens)
        if room <= 0:
            raise ValueError(
                f"model '{self.name}': the prompt is {len(tokens)} tokens, which does not fit "
                f"its context of {llm.n_ctx()} tokens"
            )
        sampling = self._effective_sampling(request.sampling)
        llm.set_seed(sampling.seed if sampling.seed >= 0 else 0xFFFFFFFF)  # 0xFFFFFFFF: random
        budget = min(sampling.max_tokens, room)

        mode = ToolGrammar(self.tool_grammar) if tools else ToolGrammar.OFF
        stats.grammar = mode.value
        spec: ToolCallGrammar | None = None
        grammar: LlamaGrammar | None = None
        if tools and mode is not ToolGrammar.OFF:
            spec, grammar = self._grammar_for(inst, tools, budget)
        # Tool-call replies are parsed whole, so they are not streamed piece by piece.
        emit = None if tools else job.emit
        trigger: str | bool | None = False
        if spec is not None and mode is ToolGrammar.LAZY:
            trigger = spec.trigger
        reply = _Reply(self.entry.stop, emit, trigger)

        if spec is not None and mode is ToolGrammar.REQUIRED:
            head = (spec.trigger or "") + spec.forced
            reply.text = head
            tokens = tokens + llm.tokenize(head.encode("utf-8"), add_bos=False, special=True)
            stats.prompt_tokens = len(tokens)
            budget = min(budget, llm.n_ctx() - len(tokens))
            self._sample(inst, job, tokens, sampling, budget, reply, grammar, first=True)
        else:
            sampled = self._sample(inst, job, tokens, sampling, budget, reply, None, first=True)
            if reply.cut is not None and tools and not stats.cancelled:
                # The model opened a call: keep what it wrote up to the opener, force the
                # call's fixed head, and constrain only the rest.
                stats.grammar = "lazy-triggered"
                budget -= sampled
                # Built for what is left of the budget, so the call can still close in it.
                spec, grammar = self._grammar_for(inst, tools, budget)
                reply.text = reply.text[: reply.cut] + spec.forced
                reply.trigger = False
                tokens = tokens + llm.tokenize(
                    reply.text.encode("utf-8"), add_bos=False, special=True
                )
                budget = min(budget, llm.n_ctx() - len(tokens))
                self._sample(inst, job, tokens, sampling, budget, reply, grammar, first=False)
        stats.text = reply.finish()
        if tools and job.emit is not None and stats.text:
            job.emit(stats.text)

    def _sample(
        self,
        inst: _Instance,
        job: _Job,
        tokens: list[int],
        sampling: SamplingParams,
        budget: int,
        reply: _Reply,
        grammar: LlamaGrammar | None,
        *,
        first: bool,
    ) -> int:
        """Sample up to `budget` tokens after `tokens` into `reply`; the count sampled."""
        import llama_cpp

        llm = inst.llama
        assert llm is not None
        stats = job.stats
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        started = time.perf_counter()
        perf = llama_cpp.llama_perf_context(llm.ctx)
        decoded_before = perf.n_p_eval + perf.n_eval
        count = 0
        if budget <= 0:
            return 0
        generator = llm.generate(
            tokens,
            top_k=sampling.top_k,
            top_p=sampling.top_p,
            min_p=sampling.min_p,
            temp=sampling.temperature,
            repeat_penalty=sampling.repeat_penalty,
            grammar=grammar,
        )
        try:
            for token in generator:
                if count == 0 and first:
                    # Only the prompt has been decoded when the first token comes out.
                    perf = llama_cpp.llama_perf_context(llm.ctx)
                    stats.prompt_tokens_evaluated = perf.n_p_eval + perf.n_eval - decoded_before
                    stats.seconds_to_first_token = time.perf_counter() - started
                if job.cancelled.is_set():
                    stats.cancelled = True
                    break
                if llama_cpp.llama_vocab_is_eog(inst.vocab_ptr, token) or (
                    token in inst.stop_tokens
                ):
                    break
                count += 1
                stats.tokens += 1
                piece = decoder.decode(llm.detokenize([token]))
                if piece and reply.add(piece):
                    break
                if count >= budget:
                    break
        finally:
            generator.close()
        rest = decoder.decode(b"", final=True)
        if rest:
            reply.add(rest)
        return count
