"""The message catalog: every request with its fields, types and defaults, and the
server's frame types. docs/protocol.md describes the same catalog for client writers.

Fields the server routes on (ids, the shape of the graph and of tool results) are checked here
and a wrong type is 5001. Values the engine itself validates (the message text, params, options)
pass through untouched, so a bad one gets the same 3xxx code as in the embedded API.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..engine.support.guards import brief
from .errors import ErrorCode
from .frames import FrameError


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a request: its wire type, whether it is required, and its default."""

    name: str
    #: "int", "str", "bool", "map", "array", or "any" (checked by the engine, not here).
    kind: str
    required: bool = False
    default: Any = None


_KINDS: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "str": (str,),
    "bool": (bool,),
    "map": (dict,),
    "array": (list,),
}

AGENT_ID = Field("agent_id", "int", required=True)

#: Requests a client may send, by `type`, with their fields.
REQUESTS: dict[str, tuple[Field, ...]] = {
    "ConfigureSession": (
        Field("protocol_version", "int", required=True),
        Field("client_name", "any", default=""),
        # "any": a value of the wrong type is a wrong key (2004), not a malformed frame, so a
        # client learns nothing from the server but "not authorized".
        Field("auth_key", "any", default=None),
    ),
    "CreateAgent": (
        Field("graph", "map", required=True),
        Field("enable_diagnostics", "any", default=False),
        Field("max_steps_per_turn", "any", default=64),
        Field("durable", "bool", default=False),
        # "any": checked by the engine (3007 naming the policies).
        Field("input_policy", "any", default="reject"),
    ),
    # "any": a token of the wrong type is a wrong token (3001), like any other.
    "AttachAgent": (AGENT_ID, Field("resume_token", "any", default=None)),
    "DestroyAgent": (AGENT_ID,),
    "SendMessage": (AGENT_ID, Field("text", "any", required=True)),
    "ResumeAgent": (
        AGENT_ID,
        Field("resume_node", "any", default=""),
        Field("tool_results", "array", default=()),
    ),
    "ChangeAgentParam": (
        AGENT_ID,
        Field("node_name", "any", required=True),
        Field("params", "map", required=True),
        Field("node_type", "str", default=""),
    ),
    "GetAgentParam": (AGENT_ID, Field("node_name", "any", required=True)),
    "GetAgentState": (AGENT_ID,),
    "Cancel": (AGENT_ID,),
    "SetInputPolicy": (AGENT_ID, Field("input_policy", "any", required=True)),
    # Save slots: "any" fields are the engine's to check (3007), as in the host API.
    "SaveSlot": (AGENT_ID, Field("slot", "any", required=True)),
    "LoadSlot": (Field("slot", "any", required=True), Field("replace_agent_id", "any")),
    "ForkAgent": (Field("agent_id", "any"), Field("slot", "any")),
    "ListSlots": (Field("agent_id", "any"),),
    "DeleteSlot": (Field("slot", "any", required=True),),
    "ListModels": (),
}

#: The python operation each request performs (for logs, and the same names the host API uses).
OPERATIONS: dict[str, str] = {
    "ConfigureSession": "configure_session",
    "CreateAgent": "create_agent",
    "AttachAgent": "attach_agent",
    "DestroyAgent": "destroy",
    "SendMessage": "send_message",
    "ResumeAgent": "resume",
    "ChangeAgentParam": "change_params",
    "GetAgentParam": "get_params",
    "GetAgentState": "wait",
    "Cancel": "cancel",
    "SetInputPolicy": "set_input_policy",
    "SaveSlot": "save",
    "LoadSlot": "load",
    "ForkAgent": "fork",
    "ListSlots": "slots",
    "DeleteSlot": "delete_slot",
    "ListModels": "list_models",
}

#: Frames the server sends. Replies echo the request's `request_id`; events carry none.
REPLIES = frozenset(
    {
        "Ack",
        "ErrorResponse",
        "CreateAgentResponse",
        "AgentParamResponse",
        "AgentStateResponse",
        "ModelListResponse",
        "SlotListResponse",
    }
)
EVENTS = frozenset({"AnswerText", "NodeEvent", "TurnComplete", "AgentDetached"})
SERVER_FRAMES = REPLIES | EVENTS | {"SessionReady"}


def parse_request(frame: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The request's type and its fields with defaults filled in (5002 unknown type, 5001 bad
    field). Fields not in the catalog are ignored, so newer clients can add optional ones."""
    kind = frame["type"]
    spec = REQUESTS.get(kind)
    request_id = frame.get("request_id")
    if spec is None:
        raise FrameError(
            ErrorCode.UnknownMessageType,
            f"unknown request type {brief(kind)} (known: {sorted(REQUESTS)})",
            request_id,
        )
    fields: dict[str, Any] = {}
    for field in spec:
        value = frame.get(field.name)
        if value is None:
            if field.required:
                raise FrameError(
                    ErrorCode.MalformedMessage,
                    f"{kind}: field '{field.name}' is required",
                    request_id,
                )
            value = field.default
        elif field.kind != "any":
            allowed = _KINDS[field.kind]
            if not isinstance(value, allowed) or (field.kind == "int" and isinstance(value, bool)):
                raise FrameError(
                    ErrorCode.MalformedMessage,
                    f"{kind}: field '{field.name}' must be {field.kind}, "
                    f"got {type(value).__name__}",
                    request_id,
                )
        fields[field.name] = value
    return kind, fields


def error_response(code: int, message: str, request_id: int | None, **extra: Any) -> dict[str, Any]:
    """An `ErrorResponse` frame."""
    return {
        "type": "ErrorResponse",
        "request_id": request_id,
        "code": int(code),
        "message": message,
        **extra,
    }
