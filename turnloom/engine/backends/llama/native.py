"""Native bindings of the llama backend: llama.cpp's log, its vocabulary, its instances.

Everything here touches llama-cpp-python's low-level API (ctypes pointers, the global log
callback, vocab-only loads) so the rest of the backend deals in plain Python values. An
`Instance` is one llama.cpp model+context with the single worker thread allowed to use it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import structlog

from ..catalog import CatalogEntry
from .chat_template import TEMPLATE_KEY

if TYPE_CHECKING:
    from llama_cpp import Llama

log = structlog.get_logger("turnloom.llama")

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


@dataclass(slots=True)
class Vocab:
    """What the engine needs of a GGUF's vocabulary: its chat templates and BOS/EOS handling."""

    templates: dict[str, str]
    bos_text: str
    eos_text: str
    add_bos: bool


def _vocab_of(model_ptr: Any, metadata: Mapping[str, str]) -> Vocab:
    """The `Vocab` of a loaded llama.cpp model (a native pointer) and its GGUF metadata."""
    import llama_cpp

    vocab = llama_cpp.llama_model_get_vocab(model_ptr)

    def text(token: int) -> str:
        if token < 0:
            return ""
        return bytes(llama_cpp.llama_vocab_get_text(vocab, token)).decode("utf-8", "replace")

    return Vocab(
        templates={k: v for k, v in metadata.items() if k.startswith(TEMPLATE_KEY)},
        bos_text=text(llama_cpp.llama_vocab_bos(vocab)),
        eos_text=text(llama_cpp.llama_vocab_eos(vocab)),
        add_bos=bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
    )


def read_vocab_only(path: Path) -> Vocab:
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


class Instance:
    """One llama.cpp model+context and the single thread allowed to use it."""

    def __init__(self, model_name: str, index: int, load: Callable[[Instance], Llama]) -> None:
        self.index = index
        self.executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"turnloom-llama-{model_name}-{index}"
        )
        self.llama: Llama | None = None
        self.stop_tokens: frozenset[int] = frozenset()
        self.vocab_ptr: Any = None
        # The owning model's loader: it knows the GGUF's path and keeps the vocabulary it reads.
        self._load = load
        self._lock = threading.Lock()

    def ensure_loaded(self) -> Llama:
        """The loaded llama.cpp instance, loading it first if needed (blocking)."""
        with self._lock:
            if self.llama is None:
                self.llama = self._load(self)
            return self.llama

    def close(self) -> None:
        """Stop the worker thread once its queued jobs are done, then free the model."""
        self.executor.shutdown(wait=True)
        with self._lock:
            if self.llama is not None:
                self.llama.close()
                self.llama = None


def load_llama(inst: Instance, path: Path, entry: CatalogEntry) -> tuple[Llama, Vocab]:
    """Load a GGUF's weights for `inst` as `entry` says (context, options, stop tokens)."""
    import llama_cpp

    _route_llama_logs()
    options: dict[str, Any] = {"n_ctx": entry.n_ctx, "verbose": False}
    options.update(entry.llama_options)
    started = time.perf_counter()
    llm = llama_cpp.Llama(model_path=str(path), **options)
    vocab = _vocab_of(llm.model, llm.metadata)
    inst.vocab_ptr = llama_cpp.llama_model_get_vocab(llm.model)
    stop_tokens = set()
    for stop in entry.stop:
        ids = llm.tokenize(stop.encode("utf-8"), add_bos=False, special=True)
        if len(ids) == 1:
            stop_tokens.add(ids[0])
    inst.stop_tokens = frozenset(stop_tokens)
    log.info(
        "llama.loaded",
        model=entry.name,
        instance=inst.index,
        path=str(path),
        n_ctx=llm.n_ctx(),
        seconds=round(time.perf_counter() - started, 3),
    )
    return llm, vocab
