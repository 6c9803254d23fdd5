"""`docs/params.md`, generated from the params declarations so that it cannot drift from them.

Every row is read from a field's `param()` metadata (type, default, range, structural, doc); the
template variables from `TEMPLATE_VARIABLES`; the deprecated fields from `deprecated_fields`. A
test compares the committed file with `params_markdown()`; `write_params_doc` rewrites it.
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import typing
from pathlib import Path
from typing import Any

from .graph.fields import param_fields
from .graph.model_params import (
    MAX_PROMPT_TOKENS,
    MAX_SEED,
    MAX_TIMEOUT_MS,
    MAX_TOKENS,
    MAX_TOP_K,
    HistoryParams,
    SamplingParams,
)
from .graph.params import (
    CannedResponseParams,
    GenerateParams,
    PauseParams,
    ToolCallParams,
    ToolDefinition,
    ToolParamDefinition,
)
from .graph.prompt_template import MAX_SECTION_DEPTH, TEMPLATE_VARIABLES
from .turns.runtime import MAX_BYTES, EngineSettings

#: The documented classes, in the order the file lists them.
DOCUMENTED = (
    PauseParams,
    GenerateParams,
    CannedResponseParams,
    ToolCallParams,
    SamplingParams,
    HistoryParams,
    ToolDefinition,
    ToolParamDefinition,
    EngineSettings,
)

#: The file name `write_params_doc` writes.
FILE_NAME = "params.md"

_INTRO = """\
# Params reference

<!-- Generated from the params declarations by turnloom.engine.params_doc.params_markdown():
     do not edit by hand. A test fails when this file is stale. -->

Every field of every node's params, as declared in `turnloom/engine/graph/params.py`. A field is
**structural** (fixed when the agent is created: `change_params` refuses a different value with
3006 ParamNotMutable) or **mutable**. A value of the wrong type or outside its range is refused
with 3007 InvalidParamValue, naming the node and the field, when the agent is created and in
`change_params`; a refused call changes nothing. Enum fields take a member or its string value
(`selection="cycle"` is `Selection.Cycle`), in process as over the wire.
"""


def _type_name(tp: Any) -> str:
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp)
        return f"list of {_type_name(item)}"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp.__name__
    return getattr(tp, "__name__", str(tp))


def _default(f: dataclasses.Field[Any]) -> str:
    factory: Any = f.default_factory
    value = f.default if f.default is not dataclasses.MISSING else factory()
    if dataclasses.is_dataclass(value):
        return f"`{type(value).__name__}()`"
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value!r}`".replace("'", '"')


def _range(f: dataclasses.Field[Any], tp: Any) -> str:
    meta = f.metadata
    parts = []
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        parts.append(" / ".join(f"`{m.value}`" for m in tp))
    low, high = meta.get("min"), meta.get("max")
    if low is not None and high is not None:
        parts.append(f"{low} … {high}")
    elif low is not None:
        parts.append(f"≥ {low}")
    elif high is not None:
        parts.append(f"≤ {high}")
    if meta.get("min_len") is not None:
        parts.append(f"at least {meta['min_len']} item(s)")
    if meta.get("max_len") is not None:
        parts.append(f"at most {meta['max_len']} item(s)")
    if meta.get("check") is not None:
        # The check's docstring opens with the rule it enforces.
        parts.append((inspect.getdoc(meta["check"]) or "").splitlines()[0].rstrip("."))
    return "; ".join(p for p in parts if p) or "any"


def _containers() -> dict[type, tuple[list[str], bool]]:
    """Each nested class: the fields holding it, and whether it is fixed with them.

    `change_params` compares a node's own fields only, so a nested class's fields are exactly
    as structural as the field that holds them (or that holds their holder).
    """
    found: dict[type, tuple[list[str], bool]] = {}
    for cls in DOCUMENTED:
        for f, tp in param_fields(cls):
            inner: Any = typing.get_args(tp)[0] if typing.get_origin(tp) is list else tp
            if isinstance(inner, type) and dataclasses.is_dataclass(inner):
                holders, fixed = found.setdefault(inner, ([], False))
                fixed = fixed or bool(f.metadata.get("structural"))
                fixed = fixed or found.get(cls, ([], False))[1]
                found[inner] = ([*holders, f"`{cls.__name__}.{f.name}`"], fixed)
    return found


def _table(cls: type, container: tuple[list[str], bool] | None) -> list[str]:
    rows = [
        "| field | type | default | range | structural | meaning |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for f, tp in param_fields(cls):
        if cls is EngineSettings:
            structural = "—"
        elif container is not None:
            structural = "structural" if container[1] else "mutable"
        else:
            structural = "structural" if f.metadata.get("structural") else "mutable"
        doc = f.metadata.get("doc", "")
        rows.append(
            f"| `{f.name}` | {_type_name(tp)} | {_default(f)} | {_range(f, tp)} | "
            f"{structural} | {doc} |"
        )
    return rows


def _section(cls: type, container: tuple[list[str], bool] | None) -> list[str]:
    node_type = getattr(cls, "node_type", "")
    title = f"## {cls.__name__}" + (f" (node type `{node_type}`)" if node_type else "")
    summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
    lines = [title, "", summary, ""]
    if container is not None:
        holders, fixed = container
        status = "structural" if fixed else "mutable"
        lines += [
            f"Held by {' and '.join(holders)}: every field here is {status}, as they are.",
            "",
        ]
    if cls is EngineSettings:
        lines += [
            "Passed as `tl.Engine(..., settings=tl.EngineSettings(...))`. A value of the wrong "
            "type raises `TypeError`, one out of range `ValueError`, and the message names the "
            "field.",
            "",
        ]
    if cls is GenerateParams:
        lines += [
            "Porting a graph from an engine with other defaults: set `placement` and `stream` "
            "explicitly. turnloom defaults to `in_place_of_user` and streaming on; a prompt "
            "that goes before the user's message as a system message is "
            '`placement="before_user_as_system"`.',
            "",
        ]
    lines += _table(cls, container)
    for name, reason in getattr(cls, "deprecated_fields", {}).items():
        lines += [
            "",
            f"`{name}` (deprecated): accepted by the constructor and in mappings (wire and "
            f"`change_params`), ignored, with a `DeprecationWarning` the first time: {reason}.",
        ]
    return lines


def _template_section() -> list[str]:
    lines = [
        "## Template variables",
        "",
        "A Generate node's `template` is Mustache, rendered without HTML escaping. It may name "
        "only these variables (in tags and as section keys; `{{.}}` inside a section is the "
        "section's value). A template naming any other variable, or using a partial "
        f"(`{{{{>name}}}}`), or nesting sections more than {MAX_SECTION_DEPTH} deep, is 3007 "
        "naming the node, the field and the variable, when the agent is created and in "
        "`change_params`: pystache would render an unknown name as empty text.",
        "",
        "| variable | value |",
        "| --- | --- |",
    ]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in TEMPLATE_VARIABLES.items()]
    return lines


def _bounds_section() -> list[str]:
    return [
        "## Why the bounds",
        "",
        "Every number has an upper bound, so that no accepted value can overflow the engine's "
        "arithmetic later (a timer, a float conversion, a native call) and fail a turn instead "
        "of being refused at once.",
        "",
        f"- Timeouts (`pause_timeout_ms`, `timeout_ms`, `pause_stall_warn_ms`) ≤ {MAX_TIMEOUT_MS} "
        "ms (2**31 - 1, about 24.8 days): the largest signed 32-bit int, so it fits the int "
        "fields of clients in other languages (C# for Unity, C++ for Unreal). A longer wait is "
        "`0`, forever.",
        f"- `seed` ≤ {MAX_SEED}: llama.cpp's seed is a uint32 and 0xFFFFFFFF means random "
        "(here: `-1`).",
        f"- `top_k` ≤ {MAX_TOP_K}: more than any model's vocabulary, so nothing is lost.",
        f"- `max_tokens` ≤ {MAX_TOKENS}.",
        f"- `keep_first` and `max_prompt_tokens` ≤ {MAX_PROMPT_TOKENS}: past any model's context.",
        f"- Byte limits of `EngineSettings` ≤ {MAX_BYTES} (2**31 - 1).",
        "- Floats take ints too (compared exactly, so `10**400` is out of range, not an "
        "overflow); NaN and infinities are refused.",
    ]


def params_markdown() -> str:
    """The whole of `docs/params.md`."""
    lines = [_INTRO]
    containers = _containers()
    for cls in DOCUMENTED:
        lines += [*_section(cls, containers.get(cls)), ""]
    lines += [*_template_section(), "", *_bounds_section()]
    return "\n".join(lines) + "\n"


def write_params_doc(out: Path) -> Path:
    """Write `params_markdown()` to `out / "params.md"` and return the file's path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / FILE_NAME
    path.write_text(params_markdown(), encoding="utf-8")
    return path
