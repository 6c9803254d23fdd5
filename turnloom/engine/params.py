"""Typed node params: one dataclass per node type, and the node-level checks of R-G3.

Each field declares through `param()` (see `fields.py`) whether it is structural (fixed at agent
creation) and its range; `validate_params` and `check_mutation` phrase what the generic validator
finds as rejections that name the node. Params are dataclasses, frozen by convention: the engine
stores its own copies.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, ClassVar

import pystache

from .fields import invalid_field, param, structural_change
from .rejections import InvalidParamValue, ParamNotMutable


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


_NOT_MUSTACHE = "is not a valid Mustache template"


def _mustache_error(template: str) -> str | None:
    """Why `template` is not a well-formed Mustache template, or None.

    pystache's parser accepts an unclosed section (rendering then drops everything after its
    opening tag, the player's message included) and keeps an unclosed tag as literal text. So the
    tags are walked here first, by pystache's rules: the first closing delimiter ends a tag, tag
    keys are stripped, and `{{=<% %>=}}` changes the delimiters. Then pystache parses the template
    for whatever else it rejects.
    """
    otag, ctag = "{{", "}}"
    sections: list[tuple[str, int]] = []  # the open sections: key, position of the opening tag
    pos = 0
    while (start := template.find(otag, pos)) >= 0:
        end = template.find(ctag, start + len(otag))
        if end < 0:
            return f"{_NOT_MUSTACHE}: the tag at position {start} has no closing '{ctag}'"
        tag = template[start : end + len(ctag)]
        body = template[start + len(otag) : end].strip()
        pos = end + len(ctag)
        kind, key = body[:1], body[1:].strip()
        if not body:
            return f"{_NOT_MUSTACHE}: the tag '{tag}' at position {start} is empty"
        if kind in ("#", "^"):
            sections.append((key, start))
        elif kind == "/":
            if not sections:
                return f"{_NOT_MUSTACHE}: '{tag}' at position {start} closes no open section"
            if sections[-1][0] != key:
                return (
                    f"{_NOT_MUSTACHE}: '{tag}' at position {start} does not close the open "
                    f"section '{sections[-1][0]}'"
                )
            sections.pop()
        elif kind == "=":
            delimiters = body[1:-1].split() if len(body) > 1 and body.endswith("=") else []
            if len(delimiters) != 2:
                return f"{_NOT_MUSTACHE}: '{tag}' at position {start} is not a delimiter change"
            otag, ctag = delimiters
    if sections:
        key, start = sections[-1]
        return f"{_NOT_MUSTACHE}: the section '{key}' opened at position {start} is never closed"
    try:
        pystache.parse(template)
    except Exception as exc:  # pystache raises a few unrelated types for bad templates
        return f"{_NOT_MUSTACHE} ({exc})"
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


def validate_params(node_name: str, params: NodeParams) -> None:
    """Raise `InvalidParamValue` naming node and field of a value of wrong type or range."""
    bad = invalid_field(params)
    if bad:
        raise InvalidParamValue(f"node '{node_name}': field '{bad[0]}' {bad[1]}")


def check_mutation(node_name: str, current: NodeParams, proposed: NodeParams) -> None:
    """Check that `proposed` may replace `current` at runtime (3006 first, then 3007)."""
    if type(proposed) is not type(current):
        raise InvalidParamValue(
            f"node '{node_name}' is a {current.node_type} node; "
            f"got {type(proposed).__name__}, expected {type(current).__name__}"
        )
    name = structural_change(current, proposed)
    if name:
        raise ParamNotMutable(
            f"node '{node_name}': field '{name}' is structural (fixed at agent creation); "
            f"current {getattr(current, name)!r}, requested {getattr(proposed, name)!r}"
        )
    validate_params(node_name, proposed)
