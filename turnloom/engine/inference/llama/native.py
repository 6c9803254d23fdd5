"""Native bindings of the llama backend: llama.cpp's log, its vocabulary, its instances.

Everything here touches llama-cpp-python's low-level API (ctypes pointers, the global log
callback, vocab-only loads) so the rest of the backend deals in plain Python values. An
`Instance` is one llama.cpp model+context with the single worker thread allowed to use it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...support.extras import install_hint
from ...support.logs import get_logger
from ..catalog import CatalogEntry
from .chat_template import TEMPLATE_KEY
from .kept import DEFAULT_KEPT_MB, KeptPrompts
from .specials import marker_texts, special_marker_tokens

if TYPE_CHECKING:
    from llama_cpp import Llama

log = get_logger("turnloom.llama")


class _LogRoute:
    """llama.cpp's process-wide log callback, lent to turnloom while it loads a GGUF.

    llama-cpp-python installs its own callback at import; it maps ggml's log levels off by one,
    so it prints warnings such as "using full-size SWA cache" to stderr even with
    verbose=False, and a library has no business printing. Replacing the callback for good
    would silence the host's own llama-cpp-python (or its own callback), so turnloom borrows
    it only while one of its loads runs and then puts back whatever was there. The count
    covers loads on several instance threads at once: the first saves, the last restores.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._saved: tuple[Any, Any] | None = None
        self._hook: Any = None  # kept alive for as long as llama.cpp may call it
        self._last_level = 0

    def _on_message(self, level: int, text: bytes, user_data: object) -> None:
        # ggml levels: 1 debug, 2 info, 3 warn, 4 error, 5 continues the previous line.
        if level != 5:
            self._last_level = level
        message = text.decode("utf-8", "replace").rstrip()
        if not message or self._last_level < 3:
            return  # info and debug: hundreds of lines per load
        if self._last_level >= 4:
            log.warning("llama.cpp", message=message)
        else:
            log.debug("llama.cpp", message=message)

    def _swap_in(self) -> None:
        import ctypes

        import llama_cpp

        if not hasattr(llama_cpp, "llama_log_get"):
            return  # an old llama-cpp-python: what was there could not be put back
        if self._hook is None:
            self._hook = llama_cpp.llama_log_callback(self._on_message)
        callback, user_data = llama_cpp.llama_log_callback(), ctypes.c_void_p()
        llama_cpp.llama_log_get(ctypes.byref(callback), ctypes.byref(user_data))
        self._saved = (callback, user_data)
        llama_cpp.llama_log_set(self._hook, ctypes.c_void_p(0))

    def _restore(self) -> None:
        import llama_cpp

        if self._saved is not None:
            llama_cpp.llama_log_set(*self._saved)
            self._saved = None

    @contextlib.contextmanager
    def borrowed(self) -> Iterator[None]:
        """llama.cpp logs into `turnloom.llama` inside this block (from every thread)."""
        with self._lock:
            self._users += 1
            if self._users == 1:
                self._swap_in()
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                if self._users == 0:
                    self._restore()


_LOG_ROUTE = _LogRoute()


#: What to run when the llama extra is missing (its packages are optional dependencies).
INSTALL_HINT = install_hint("llama")


def require_llama_cpp() -> None:
    """Raise ModuleNotFoundError naming the extra to install if llama-cpp-python is missing."""
    # find_spec looks without importing: llama_cpp's import loads the native library (~0.1 s).
    if importlib.util.find_spec("llama_cpp") is None:
        raise ModuleNotFoundError(
            "turnloom's llama backend (tl.LlamaModel, and Engine() with no model, which loads "
            f"the default GGUF) needs llama-cpp-python: {INSTALL_HINT}. "
            "tl.MockModel, tl.connect and the server's --mock need nothing more.",
            name="llama_cpp",
        )


def check_gguf(path: Path, model_name: str) -> None:
    """Refuse what is not a readable GGUF file: the OSError `open` raises (FileNotFoundError,
    PermissionError, IsADirectoryError), or ValueError if it lacks GGUF's magic bytes."""
    try:
        with path.open("rb") as file:
            magic = file.read(4)
    except OSError as exc:
        # Same class and errno, so `except FileNotFoundError` works; the message names the model.
        raise type(exc)(
            exc.errno,
            f"model '{model_name}': cannot read its GGUF file ({exc.strerror})",
            str(path),
        ) from None
    if magic != b"GGUF":
        raise ValueError(
            f"model '{model_name}': {path} is not a GGUF file (it starts with {magic!r}, "
            "not b'GGUF'; a split download must be joined first)"
        )


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
    params = llama_cpp.llama_model_default_params()
    params.vocab_only = True
    # The gguf package would parse every vocabulary entry into Python objects (seconds for a
    # 262k vocabulary); llama.cpp's vocab-only load is its own reader and far quicker.
    with _LOG_ROUTE.borrowed():
        native = _NativeModel(path_model=str(path), params=params, verbose=False)
    try:
        return _vocab_of(native.model, native.metadata())
    finally:
        native.close()


class Instance:
    """One llama.cpp model+context and the single thread allowed to use it."""

    def __init__(
        self,
        model_name: str,
        index: int,
        load: Callable[[Instance], Llama],
        kept_bytes: int = DEFAULT_KEPT_MB << 20,
    ) -> None:
        self.index = index
        self.executor = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"turnloom-llama-{model_name}-{index}"
        )
        self.llama: Llama | None = None
        self.stop_tokens: frozenset[int] = frozenset()
        #: Special tokens detokenized as their text: the families' call markup (see `specials`).
        self.marker_tokens: frozenset[int] = frozenset()
        self.vocab_ptr: Any = None
        #: The prompts of the agents this instance serves (see `kept`).
        self.prompts = KeptPrompts(kept_bytes)
        # The owning model's loader: it knows the GGUF's path and keeps the vocabulary it reads.
        self._load = load
        self._lock = threading.Lock()

    def ensure_loaded(self) -> Llama:
        """The loaded llama.cpp instance, loading it first if needed (blocking)."""
        with self._lock:
            if self.llama is None:
                self.llama = self._load(self)
            return self.llama

    def serve(self, agent_id: int) -> Llama:
        """The loaded instance, its context holding `agent_id`'s cached prompt (worker
        thread)."""
        llm = self.ensure_loaded()
        self.prompts.switch_to(llm, agent_id)
        return llm

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

    options: dict[str, Any] = {"n_ctx": entry.n_ctx, "verbose": False}
    options.update(entry.llama_options)
    started = time.perf_counter()
    with _LOG_ROUTE.borrowed():
        llm = llama_cpp.Llama(model_path=str(path), **options)
    vocab = _vocab_of(llm.model, llm.metadata)
    inst.vocab_ptr = llama_cpp.llama_model_get_vocab(llm.model)
    stop_tokens = set()
    for stop in entry.stop:
        ids = llm.tokenize(stop.encode("utf-8"), add_bos=False, special=True)
        if len(ids) == 1:
            stop_tokens.add(ids[0])
    inst.stop_tokens = frozenset(stop_tokens)
    inst.marker_tokens = special_marker_tokens(
        llm, marker_texts(), lambda token: bool(llama_cpp.llama_vocab_is_eog(inst.vocab_ptr, token))
    )
    log.info(
        "llama.loaded",
        model=entry.name,
        instance=inst.index,
        path=str(path),
        n_ctx=llm.n_ctx(),
        seconds=round(time.perf_counter() - started, 3),
    )
    return llm, vocab
