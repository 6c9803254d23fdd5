"""A dialog as plain chat messages: what `agent.dialog` returns and what seeds a new agent.

Inside the engine a dialog is a list of `Interaction`s (one per kept turn: the user's message,
then the replies and tool exchanges it added). Hosts see and give it flat, in the chat shape
templates use: `{"role": "user" | "assistant" | "tool", "content": ...}`, assistant messages
possibly with `tool_calls`, tool messages with `tool_call_id` and `name`. Each user message
starts an interaction, so the two forms map one to one. Snapshots store the same flat form.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...inference.base import ChatMessage
from ...support.guards import brief
from ...support.rejections import InvalidParamValue
from .projection import Interaction

#: The keys a message may have, by role. `role` and `content` are required everywhere. A user
#: message's `pinned: True` pins its exchange: the history budget never leaves it out.
_KEYS = {
    "user": frozenset({"role", "content", "pinned"}),
    "assistant": frozenset({"role", "content", "tool_calls"}),
    "tool": frozenset({"role", "content", "tool_call_id", "name"}),
}


def dialog_to_messages(dialog: Sequence[Interaction], *, copied: bool = True) -> list[ChatMessage]:
    """The dialog as flat chat messages: a copy the caller may edit, or (`copied=False`, for a
    serializer that only reads them) the engine's own message objects."""
    messages: list[ChatMessage] = []
    for interaction in dialog:
        user: ChatMessage = {"role": "user", "content": interaction.user_message}
        if interaction.pinned:
            user["pinned"] = True
        messages.append(user)
        messages.extend(copy.deepcopy(interaction.messages) if copied else interaction.messages)
    return messages


def _tool_calls_error(calls: Any) -> str | None:
    if not isinstance(calls, list):
        return f"'tool_calls' must be a list, got {type(calls).__name__}"
    for index, call in enumerate(calls):
        function = call.get("function") if isinstance(call, Mapping) else None
        if (
            not isinstance(call, Mapping)
            or not isinstance(call.get("id"), str)
            or not isinstance(function, Mapping)
            or not isinstance(function.get("name"), str)
            or not isinstance(function.get("arguments", {}), Mapping)
        ):
            return (
                f"tool_calls[{index}] must be {{'id': str, 'type': 'function', 'function': "
                f"{{'name': str, 'arguments': map}}}}, got {brief(call)}"
            )
    return None


def _message_error(message: Any) -> str | None:
    if message.__class__ is not dict and not isinstance(message, Mapping):
        return f"must be a map, got {type(message).__name__}"
    role = message.get("role")
    keys = _KEYS.get(role) if isinstance(role, str) else None
    if keys is None:
        return f"'role' must be one of {sorted(_KEYS)}, got {brief(role)}"
    if not keys.issuperset(message):
        odd = sorted(str(key) for key in message if key not in keys)
        return f"a {role} message has no key(s) {brief(odd)} (it takes {sorted(keys)})"
    if not isinstance(message.get("content"), str):
        return f"'content' must be a string, got {type(message.get('content')).__name__}"
    if not isinstance(message.get("pinned", False), bool):
        return f"'pinned' must be a bool, got {type(message.get('pinned')).__name__}"
    if "tool_calls" in message:
        return _tool_calls_error(message["tool_calls"])
    if role == "tool":
        for key in ("tool_call_id", "name"):
            if not isinstance(message.get(key, ""), str):
                return f"'{key}' must be a string"
    return None


def dialog_from_messages(messages: Any, where: str, *, copied: bool = True) -> list[Interaction]:
    """The interactions of flat chat messages, checked (3007, `where` starts the message).

    The first message must be the user's: every interaction starts with one. The messages are
    copied unless `copied=False` (messages just decoded, which nothing else holds).
    """
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes | bytearray):
        raise InvalidParamValue(f"{where}: the dialog must be a list of chat messages")
    dialog: list[Interaction] = []
    for index, message in enumerate(messages):
        error = _message_error(message)
        if error:
            raise InvalidParamValue(f"{where}: dialog message {index} {error}")
        if message["role"] == "user":
            dialog.append(Interaction(message["content"], pinned=message.get("pinned", False)))
            continue
        if not dialog:
            raise InvalidParamValue(
                f"{where}: the dialog must start with a user message, got {message['role']}"
            )
        try:
            dialog[-1].messages.append(copy.deepcopy(dict(message)) if copied else message)
        except RecursionError:
            raise InvalidParamValue(f"{where}: dialog message {index} is nested too deep") from None
    return dialog


#: A tool call id the engine makes: "c" then 8 lowercase hex digits (`AgentCore.next_call_id`).
ENGINE_CALL_ID = re.compile(r"c([0-9a-f]{8})")


def engine_call_number(call_id: Any) -> int | None:
    """The number of an engine call id, None for an id of another form (a seeded dialog's)."""
    match = ENGINE_CALL_ID.fullmatch(call_id) if isinstance(call_id, str) else None
    return None if match is None else int(match.group(1), 16)


def next_call_seq(messages: Sequence[Mapping[str, Any]]) -> int:
    """One past the largest engine call id in `messages` (0 if none): the counter of an agent
    seeded with an earlier agent's dialog, so that its calls never repeat those ids."""
    found = [
        engine_call_number(call_id)
        for message in messages
        for call_id in (
            [call.get("id") for call in message.get("tool_calls") or ()]
            + ([message["tool_call_id"]] if "tool_call_id" in message else [])
        )
    ]
    return max((number + 1 for number in found if number is not None), default=0)
