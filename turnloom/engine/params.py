"""Typed node params, and the one validator that reads their field metadata (R-G3).

Each field declares, through `param()`, whether it is structural (fixed at agent creation) and
its range; `validate_params` and `check_mutation` read that metadata instead of one hand-written
check per field. Params are dataclasses, frozen by convention: the engine stores its own copies.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pystache.parser

from .rejections import InvalidParamValue, ParamNotMutable

_MISSING = dataclasses.MISSING


def param(
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | Any = _MISSING,
    structural: bool = False,
    min: float | None = None,
    max: float | None = None,
    min_len: int | None = None,
    check: Callable[[Any], str | None] | None = None,
    doc: str = "",
) -> Any:
    """Declare a param field: its default, whether it is structural, and its range."""
    meta = {
        "structural": structural,
        "min": min,
        "max": max,
        "min_len": min_len,
        "check": check,
        "doc": doc,
    }
    if default_factory is not _MISSING:
        return field(default_factory=default_factory, metadata=meta)
    return field(default=default, metadata=meta)


def exit_param(doc: str) -> Any:
    """An exit field: a structural node name, empty for END."""
    return param("", structural=True, doc=doc)


class Placement(enum.StrEnum):
    """Where a Generate node puts its rendered template relative to the user's message."""

    InPlaceOfUser = "in_place_of_user"
    BeforeUserAsUser = "before_user_as_user"
    BeforeUserAsSystem = "before_user_as_system"
    AfterUserAsUser = "after_user_as_user"
    AfterUserAsSystem = "after_user_as_system"


class Selection(enum.StrEnum):
    """How a CannedResponse node picks one of its lines."""

    First = "first"
    Random = "random"
    Cycle = "cycle"


def _mustache_error(template: str) -> str | None:
    try:
        pystache.parser.parse(template)
    except Exception as exc:  # pystache raises a few unrelated types for bad templates
        return f"is not a valid Mustache template ({exc})"
    return None


@dataclass(slots=True)
class SamplingParams:
    """Sampling options for a model-using node. All mutable."""

    temperature: float = param(0.7, min=0.0, max=5.0, doc="0 = greedy")
    top_p: float = param(0.95, min=0.0, max=1.0)
    top_k: int = param(40, min=0)
    min_p: float = param(0.05, min=0.0, max=1.0)
    repeat_penalty: float = param(1.1, min=0.0, max=10.0)
    max_tokens: int = param(256, min=1, max=32768)
    seed: int = param(-1, min=-1, doc="-1 = random")
    timeout_ms: int = param(0, min=0, doc="time budget of one generation; 0 = none (4002)")


@dataclass(slots=True)
class NodeParams:
    """Base of every node's params. Subclasses name their type, exits and model use."""

    node_type: ClassVar[str] = ""
    #: Exit route names; route `r` is wired by the field `f"{r}_exit"`.
    exit_routes: ClassVar[tuple[str, ...]] = ()
    uses_model: ClassVar[bool] = False

    def exit_target(self, route: str) -> str:
        """The node the exit `route` leads to ('' = END)."""
        return str(getattr(self, f"{route}_exit"))

    def pausing_routes(self) -> tuple[str, ...]:
        """The exit routes after which the turn pauses (R-P1)."""
        return ()


@dataclass(slots=True)
class PauseParams(NodeParams):
    """A checkpoint: the turn always pauses right after this node exits (R-P1)."""

    node_type: ClassVar[str] = "Pause"
    exit_routes: ClassVar[tuple[str, ...]] = ("default", "timeout")

    pause_timeout_ms: int = param(
        0, structural=True, min=0, doc="0 = wait forever; otherwise the pause's deadline"
    )
    default_exit: str = exit_param("taken on a plain resume")
    timeout_exit: str = exit_param("taken when the pause times out; '' = end pause_timed_out")

    def pausing_routes(self) -> tuple[str, ...]:
        """A Pause node always pauses after it exits."""
        return ("default",)


@dataclass(slots=True)
class GenerateParams(NodeParams):
    """Generate a reply with a model, from the dialog and a Mustache-rendered prompt."""

    node_type: ClassVar[str] = "Generate"
    exit_routes: ClassVar[tuple[str, ...]] = ("default",)
    uses_model: ClassVar[bool] = True

    system_prompt: str = param("")
    template: str = param("{{human_message}}", check=_mustache_error)
    placement: Placement = param(Placement.InPlaceOfUser)
    stream: bool = param(True, doc="stream token deltas as AnswerText")
    model_name: str = param("", structural=True, doc="'' = the graph's default model")
    sampling: SamplingParams = param(default_factory=SamplingParams)
    default_exit: str = exit_param("taken after the reply")


@dataclass(slots=True)
class CannedResponseParams(NodeParams):
    """Reply with one of a fixed set of lines, no model involved."""

    node_type: ClassVar[str] = "CannedResponse"
    exit_routes: ClassVar[tuple[str, ...]] = ("default",)

    lines: list[str] = param(default_factory=list, min_len=1)
    selection: Selection = param(Selection.First)
    default_exit: str = exit_param("taken after the line")


class ToolCallDisposition(enum.StrEnum):
    """What happens once a ToolCall node detects a call (R-T3)."""

    RouteOnly = "route_only"
    Acknowledge = "acknowledge"
    Notify = "notify"
    NotifyAndAcknowledge = "notify_and_acknowledge"
    Pause = "pause"
    PauseAndAcknowledge = "pause_and_acknowledge"
    AwaitResult = "await_result"

    @property
    def notifies(self) -> bool:
        """Whether the host gets a tool-call event."""
        return self not in (ToolCallDisposition.RouteOnly, ToolCallDisposition.Acknowledge)

    @property
    def pauses(self) -> bool:
        """Whether the turn pauses after a detected call."""
        return self in (
            ToolCallDisposition.Pause,
            ToolCallDisposition.PauseAndAcknowledge,
            ToolCallDisposition.AwaitResult,
        )

    @property
    def acknowledges(self) -> bool:
        """Whether the engine closes the exchange with the acknowledge text."""
        return self in (
            ToolCallDisposition.Acknowledge,
            ToolCallDisposition.NotifyAndAcknowledge,
            ToolCallDisposition.PauseAndAcknowledge,
        )


class ToolCallMode(enum.StrEnum):
    """Whether a ToolCall node also answers when no tool is called (R-T2)."""

    DetectOnly = "detect_only"
    CallOrAnswer = "call_or_answer"


#: The parameter types a tool may declare (JSON Schema names).
TOOL_PARAM_TYPES = ("string", "boolean", "integer", "number", "array", "object")


def _tool_param_type_error(value: str) -> str | None:
    return None if value in TOOL_PARAM_TYPES else f"must be one of {TOOL_PARAM_TYPES}"


def _identifier_error(value: str) -> str | None:
    return None if value.strip() else "must not be empty"


@dataclass(slots=True)
class ToolParamDefinition:
    """One parameter of a tool."""

    name: str = param("", check=_identifier_error)
    type: str = param("string", check=_tool_param_type_error)
    description: str = param("")


@dataclass(slots=True)
class ToolDefinition:
    """A tool the model may call: a name, what it does, and its parameters."""

    name: str = param("", check=_identifier_error)
    description: str = param("")
    parameters: list[ToolParamDefinition] = param(default_factory=list)

    def json_schema(self) -> dict[str, Any]:
        """The tool in the OpenAI function shape chat templates render."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {
                        p.name: {"type": p.type, "description": p.description}
                        for p in self.parameters
                    },
                    "required": [p.name for p in self.parameters],
                },
            },
        }


def _tools_error(tools: list[ToolDefinition]) -> str | None:
    if not all(isinstance(t, ToolDefinition) and isinstance(t.name, str) for t in tools):
        return None  # the per-item checks name the bad item
    names = [t.name for t in tools]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        return f"declares tool name(s) {dupes} more than once"
    for tool in tools:
        pnames = [p.name for p in tool.parameters]
        if len(set(pnames)) != len(pnames):
            return f"tool '{tool.name}' declares a parameter name more than once"
    return None


@dataclass(slots=True)
class ToolCallParams(NodeParams):
    """Offer tools to the model and detect the calls it makes (SPEC §6)."""

    node_type: ClassVar[str] = "ToolCall"
    exit_routes: ClassVar[tuple[str, ...]] = ("tool_called", "no_tool_called", "timeout")
    uses_model: ClassVar[bool] = True

    tools: list[ToolDefinition] = param(
        default_factory=list, structural=True, min_len=1, check=_tools_error
    )
    disposition: ToolCallDisposition = param(ToolCallDisposition.Acknowledge, structural=True)
    mode: ToolCallMode = param(ToolCallMode.CallOrAnswer)
    system_prompt: str = param("")
    acknowledge_text: str = param("", doc="'' = 'ok'")
    model_name: str = param("", structural=True, doc="'' = the graph's default model")
    sampling: SamplingParams = param(default_factory=SamplingParams)
    pause_timeout_ms: int = param(
        0, structural=True, min=0, doc="for pausing dispositions; 0 = wait forever"
    )
    tool_called_exit: str = exit_param("taken when a declared tool was called")
    no_tool_called_exit: str = exit_param("taken when no declared tool was called")
    timeout_exit: str = exit_param("taken when the pause times out; '' = end pause_timed_out")

    def pausing_routes(self) -> tuple[str, ...]:
        """A pausing disposition pauses after `tool_called`, never after `no_tool_called`."""
        return ("tool_called",) if self.disposition.pauses else ()


# --- the validator -----------------------------------------------------------------------------


_FIELDS: dict[type, tuple[tuple[dataclasses.Field[Any], Any], ...]] = {}


def _fields(cls: type) -> tuple[tuple[dataclasses.Field[Any], Any], ...]:
    """The dataclass fields of `cls` with their resolved types (cached per class)."""
    found = _FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _FIELDS[cls] = tuple((f, hints[f.name]) for f in dataclasses.fields(cls))
    return found


def field_is_structural(cls: type[NodeParams], name: str) -> bool:
    """Whether `cls.name` is fixed at agent creation."""
    return any(f.name == name and f.metadata.get("structural") for f, _ in _fields(cls))


def _type_error(value: Any, tp: Any) -> str | None:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        errors = [_type_error(value, arm) for arm in typing.get_args(tp)]
        return None if any(e is None for e in errors) else errors[0]
    if origin is list:
        if not isinstance(value, list):
            return f"must be a list, got {type(value).__name__}"
        (item_tp,) = typing.get_args(tp)
        for i, item in enumerate(value):
            err = _type_error(item, item_tp)
            if err:
                return f"item {i} {err}"
        return None
    if tp is float:
        # NaN would slip through every range check (all comparisons with it are false).
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is type(None):
        ok = value is None
    else:
        ok = isinstance(value, tp)
    return None if ok else f"must be {getattr(tp, '__name__', tp)}, got {type(value).__name__}"


def _field_error(value: Any, f: dataclasses.Field[Any], tp: Any) -> str | None:
    err = _type_error(value, tp)
    if err:
        return err
    meta = f.metadata
    if meta.get("min") is not None and value < meta["min"]:
        return f"must be >= {meta['min']}, got {value!r}"
    if meta.get("max") is not None and value > meta["max"]:
        return f"must be <= {meta['max']}, got {value!r}"
    if meta.get("min_len") is not None and len(value) < meta["min_len"]:
        return f"must have at least {meta['min_len']} item(s), got {len(value)}"
    if meta.get("check") is not None:
        return typing.cast("str | None", meta["check"](value))
    return None


def _invalid_fields(obj: Any, prefix: str = "") -> tuple[str, str] | None:
    for f, tp in _fields(type(obj)):
        value = getattr(obj, f.name)
        err = _field_error(value, f, tp)
        if err:
            return prefix + f.name, err
        if dataclasses.is_dataclass(value):
            nested = _invalid_fields(value, prefix + f.name + ".")
            if nested:
                return nested
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if dataclasses.is_dataclass(item):
                    nested = _invalid_fields(item, f"{prefix}{f.name}[{i}].")
                    if nested:
                        return nested
    return None


def validate_params(node_name: str, params: NodeParams) -> None:
    """Raise `InvalidParamValue` naming node and field of a value of wrong type or range."""
    bad = _invalid_fields(params)
    if bad:
        raise InvalidParamValue(f"node '{node_name}': field '{bad[0]}' {bad[1]}")


def check_mutation(node_name: str, current: NodeParams, proposed: NodeParams) -> None:
    """Check that `proposed` may replace `current` at runtime (3006 first, then 3007)."""
    if type(proposed) is not type(current):
        raise InvalidParamValue(
            f"node '{node_name}' is a {current.node_type} node; "
            f"got {type(proposed).__name__}, expected {type(current).__name__}"
        )
    for f, _ in _fields(type(current)):
        if f.metadata.get("structural") and getattr(proposed, f.name) != getattr(current, f.name):
            raise ParamNotMutable(
                f"node '{node_name}': field '{f.name}' is structural (fixed at agent creation); "
                f"current {getattr(current, f.name)!r}, requested {getattr(proposed, f.name)!r}"
            )
    validate_params(node_name, proposed)


def _coerce(value: Any, tp: Any, current: Any = None) -> Any:
    """Bring wire-friendly values (enum values, dicts) to the declared field type, if possible.

    A mapping for a nested params field changes only the fields it names in `current`.
    """
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum) and not isinstance(value, tp):
            try:
                return tp(value)
            except ValueError:
                return value
        if dataclasses.is_dataclass(tp) and isinstance(value, Mapping):
            base = current if isinstance(current, tp) else None
            return params_from_mapping(tp, value, base=base)
    if typing.get_origin(tp) is list and isinstance(value, list | tuple):
        (item_tp,) = typing.get_args(tp)
        return [_coerce(v, item_tp) for v in value]
    return value


def params_from_mapping(cls: type[Any], values: Mapping[str, Any], base: Any = None) -> Any:
    """Build a `cls` from a mapping (unknown keys are errors), starting from `base` if given."""
    known = {f.name: tp for f, tp in _fields(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InvalidParamValue(f"{cls.__name__} has no field(s) {unknown}")
    obj = copy.deepcopy(base) if base is not None else cls()
    for key, value in values.items():
        setattr(obj, key, _coerce(value, known[key], getattr(obj, key)))
    return obj


def params_to_mapping(params: Any) -> dict[str, Any]:
    """A plain-data copy of params (enums as their values), for the wire and for logs."""

    def plain(v: Any) -> Any:
        if isinstance(v, enum.Enum):
            return v.value
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        return v

    return typing.cast("dict[str, Any]", plain(params))
