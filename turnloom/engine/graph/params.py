"""Typed node params: one dataclass per node type, and the node-level checks of their values
(docs/reference/graphs.md#structural-and-mutable-params).

Each field declares through `param()` (see `fields.py`) whether it is structural (fixed at agent
creation) and its range; `validate_params` and `check_mutation` phrase what the generic validator
finds as rejections that name the node. Params are dataclasses, frozen by convention: the engine
stores its own copies.
"""

from __future__ import annotations

import enum
from collections import Counter
from dataclasses import InitVar, dataclass
from typing import Any, ClassVar

from ..support.guards import brief
from ..support.rejections import InvalidParamValue, ParamNotMutable
from .fields import Declared, invalid_field, param, structural_change, warn_deprecated
from .model_params import (
    MAX_TIMEOUT_MS,
    HistoryParams,
    SamplingParams,
)
from .prompt_template import template_error

#: Tools one ToolCall node may offer: OpenAI's API takes at most 128 per request, and a prompt
#: listing more would not fit a small model's context anyway.
MAX_TOOLS = 128
#: Parameters one tool may declare.
MAX_TOOL_PARAMETERS = 64
#: The most values one tool parameter's `enum` may list.
MAX_ENUM_VALUES = 64
#: Lines one CannedResponse node may hold.
MAX_LINES = 1024


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


@dataclass(slots=True)
class NodeParams(Declared):
    """Base of every node's params. Subclasses name their type, exits and model use."""

    node_type: ClassVar[str] = ""
    #: Exit route names; route `r` is wired by the field `f"{r}_exit"`.
    exit_routes: ClassVar[tuple[str, ...]] = ()
    uses_model: ClassVar[bool] = False

    def exit_target(self, route: str) -> str:
        """The node the exit `route` leads to ('' = END)."""
        return str(getattr(self, f"{route}_exit"))

    def pausing_routes(self) -> tuple[str, ...]:
        """The exit routes after which the turn pauses
        (docs/reference/pauses.md#what-pauses-a-turn)."""
        return ()


@dataclass(slots=True)
class PauseParams(NodeParams):
    """A checkpoint: the turn always pauses right after this node exits."""

    node_type: ClassVar[str] = "Pause"
    exit_routes: ClassVar[tuple[str, ...]] = ("default", "timeout")

    pause_timeout_ms: int = param(
        0,
        structural=True,
        min=0,
        max=MAX_TIMEOUT_MS,
        doc="0 = wait forever; otherwise the pause's deadline",
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

    system_prompt: str = param("", doc="'' = no system message")
    template: str = param(
        "{{human_message}}", check=template_error, doc="the prompt text this node adds"
    )
    placement: Placement = param(
        Placement.InPlaceOfUser, doc="where the rendered template goes, relative to the user"
    )
    stream: bool = param(True, doc="stream token deltas as AnswerText")
    model_name: str = param("", structural=True, doc="'' = the graph's default model")
    sampling: SamplingParams = param(default_factory=SamplingParams, doc="see SamplingParams")
    default_exit: str = exit_param("taken after the reply")
    history: HistoryParams = param(default_factory=HistoryParams, doc="see HistoryParams")


@dataclass(slots=True)
class CannedResponseParams(NodeParams):
    """Reply with one of a fixed set of lines, no model involved."""

    node_type: ClassVar[str] = "CannedResponse"
    exit_routes: ClassVar[tuple[str, ...]] = ("default",)

    lines: list[str] = param(
        default_factory=list, min_len=1, max_len=MAX_LINES, doc="the replies to pick from"
    )
    selection: Selection = param(
        Selection.First, doc="first line, a random one, or each in turn (per agent)"
    )
    default_exit: str = exit_param("taken after the line")


class ToolCallDisposition(enum.StrEnum):
    """What happens once a ToolCall node detects a call (docs/reference/tools.md#dispositions)."""

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
    """Whether a ToolCall node also answers when no tool is called."""

    DetectOnly = "detect_only"
    CallOrAnswer = "call_or_answer"


#: The parameter types a tool may declare (JSON Schema names).
TOOL_PARAM_TYPES = ("string", "boolean", "integer", "number", "array", "object")


def _tool_param_type_error(value: str) -> str | None:
    """One of `string`, `boolean`, `integer`, `number`, `array`, `object`."""
    if value in TOOL_PARAM_TYPES:
        return None
    return f"must be one of {TOOL_PARAM_TYPES}, got {brief(value)}"


def _enum_error(values: list[str]) -> str | None:
    """Non-empty strings, none twice (a `string` parameter's allowed values; empty: any)."""
    seen: set[str] = set()
    for i, value in enumerate(values):
        if not value:
            return f"item {i} must not be empty"
        if value in seen:
            return f"item {i} repeats {brief(value)}"
        seen.add(value)
    return None


def _identifier_error(value: str) -> str | None:
    """Not empty (nor only spaces)."""
    return None if value.strip() else "must not be empty"


@dataclass(slots=True)
class ToolParamDefinition(Declared):
    """One parameter of a tool."""

    name: str = param("", check=_identifier_error, doc="the argument's name")
    type: str = param("string", check=_tool_param_type_error, doc="its JSON Schema type")
    description: str = param("", doc="what it means, for the model")
    enum: list[str] = param(
        default_factory=list,
        max_len=MAX_ENUM_VALUES,
        check=_enum_error,
        doc="for a string: the only values it may take (JSON Schema `enum`; none = any)",
    )

    def json_schema(self) -> dict[str, Any]:
        """The parameter's JSON Schema (its `enum` only for a string)."""
        schema: dict[str, Any] = {"type": self.type, "description": self.description}
        if self.enum and self.type == "string":
            schema["enum"] = list(self.enum)
        return schema


@dataclass(slots=True)
class ToolDefinition(Declared):
    """A tool the model may call: a name, what it does, and its parameters."""

    name: str = param("", check=_identifier_error, doc="the name the model calls it by")
    description: str = param("", doc="what it does, for the model")
    parameters: list[ToolParamDefinition] = param(
        default_factory=list, max_len=MAX_TOOL_PARAMETERS, doc="its arguments (all required)"
    )

    def json_schema(self) -> dict[str, Any]:
        """The tool in the OpenAI function shape chat templates render."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.json_schema() for p in self.parameters},
                    "required": [p.name for p in self.parameters],
                },
            },
        }


def _decision_error(value: str) -> str | None:
    """One of `generate`, `score`, or empty (the model's default)."""
    if value in ("", "generate", "score"):
        return None
    return f"must be 'generate', 'score' or '' (the model's default), got {brief(value)}"


def _tools_error(tools: list[ToolDefinition]) -> str | None:
    """Tool names unique, and parameter names unique within each tool."""
    if not all(isinstance(t, ToolDefinition) and isinstance(t.name, str) for t in tools):
        return None  # the per-item checks name the bad item
    # Counted once (a Counter, not list.count per name): a hostile list stays linear.
    dupes = sorted(name for name, n in Counter(t.name for t in tools).items() if n > 1)
    if dupes:
        return f"declares tool name(s) {brief(dupes)} more than once"
    for tool in tools:
        pnames = [p.name for p in tool.parameters]
        if len(set(pnames)) != len(pnames):
            return f"tool {brief(tool.name)} declares a parameter name more than once"
    return None


@dataclass(slots=True)
class ToolCallParams(NodeParams):
    """Offer tools to the model and detect the calls it makes."""

    node_type: ClassVar[str] = "ToolCall"
    exit_routes: ClassVar[tuple[str, ...]] = ("tool_called", "no_tool_called", "timeout")
    uses_model: ClassVar[bool] = True

    tools: list[ToolDefinition] = param(
        default_factory=list,
        structural=True,
        min_len=1,
        max_len=MAX_TOOLS,
        check=_tools_error,
        doc="the tools offered to the model",
    )
    disposition: ToolCallDisposition = param(
        ToolCallDisposition.Acknowledge, structural=True, doc="what a detected call does"
    )
    mode: ToolCallMode = param(
        ToolCallMode.CallOrAnswer,
        doc="call_or_answer also replies when no tool is called (so its no_tool_called_exit "
        "may not lead to a Generate node: use detect_only there)",
    )
    system_prompt: str = param("", doc="'' = no system message")
    acknowledge_text: str = param("", doc="'' = 'ok'")
    model_name: str = param("", structural=True, doc="'' = the graph's default model")
    sampling: SamplingParams = param(default_factory=SamplingParams, doc="see SamplingParams")
    pause_timeout_ms: int = param(
        0,
        structural=True,
        min=0,
        max=MAX_TIMEOUT_MS,
        doc="for pausing dispositions; 0 = wait forever",
    )
    tool_called_exit: str = exit_param("taken when a declared tool was called")
    no_tool_called_exit: str = exit_param("taken when no declared tool was called")
    timeout_exit: str = exit_param("taken when the pause times out; '' = end pause_timed_out")
    decision: str = param(
        "",
        check=_decision_error,
        doc="how the call is chosen: 'generate' (the model writes it) or 'score' (tools and "
        "arguments ranked by likelihood; generates where the model cannot score); "
        "'' = the model's default",
    )
    history: HistoryParams = param(default_factory=HistoryParams, doc="see HistoryParams")
    #: Legacy fields, accepted (in the constructor and in mappings) and ignored.
    deprecated_fields: ClassVar[dict[str, str]] = {
        "tool_call_format": "the model's own chat template decides how tools are offered and "
        "how calls are parsed",
    }
    #: The legacy choice of a tool-call format: accepted, ignored, warned about once.
    tool_call_format: InitVar[Any] = None

    def __post_init__(self, tool_call_format: Any) -> None:
        Declared.__post_init__(self)
        if tool_call_format is not None:
            # 1 = here, 2 = the dataclass __init__, 3 = the code that built the params.
            warn_deprecated(ToolCallParams, "tool_call_format", stacklevel=3)

    def pausing_routes(self) -> tuple[str, ...]:
        """A pausing disposition pauses after `tool_called`, never after `no_tool_called`."""
        return ("tool_called",) if self.disposition.pauses else ()


def validate_params(node_name: str, params: NodeParams) -> None:
    """Raise `InvalidParamValue` naming node and field of a value of wrong type or range."""
    bad = invalid_field(params)
    if bad:
        raise InvalidParamValue(f"node {brief(node_name)}: field '{bad.path}' {bad.reason}")


def check_mutation(node_name: str, current: NodeParams, proposed: NodeParams) -> None:
    """Check that `proposed` may replace `current` at runtime (3006 first, then 3007)."""
    if type(proposed) is not type(current):
        raise InvalidParamValue(
            f"node {brief(node_name)} is a {current.node_type} node; "
            f"got {type(proposed).__name__}, expected {type(current).__name__}"
        )
    name = structural_change(current, proposed)
    if name:
        raise ParamNotMutable(
            f"node {brief(node_name)}: field '{name}' is structural (fixed at agent creation); "
            f"current {brief(getattr(current, name))}, requested {brief(getattr(proposed, name))}"
        )
    validate_params(node_name, proposed)
