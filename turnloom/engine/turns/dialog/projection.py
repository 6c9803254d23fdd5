"""Dialog and projection: what the turns so far look like as a chat for the model."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pystache

from ...graph.params import Placement
from ...graph.prompt_template import TEMPLATE_VARIABLES
from ...inference.base import ChatMessage

# Prompts are not HTML: substitute text exactly as given.
_RENDERER = pystache.Renderer(escape=lambda text: text, missing_tags="ignore")


@dataclass(slots=True)
class Interaction:
    """What one turn adds to the dialog: the user's message, then replies and tool exchanges."""

    user_message: str
    messages: list[ChatMessage] = field(default_factory=list)
    #: Never left out of a prompt by the history budget (`history`).
    pinned: bool = False


@functools.lru_cache(maxsize=512)
def _parsed(template: str) -> Any:
    # Parsing is half the cost of a render, and a node renders the same template every turn.
    return pystache.parse(template)


def prompt_context(current: Interaction) -> dict[str, str]:
    """The values of the template variables (`TEMPLATE_VARIABLES`, all of them) for a turn."""
    context = {"human_message": current.user_message}
    # Templates are checked against TEMPLATE_VARIABLES: a name it lists but this omits would
    # render empty, the very thing that check exists to prevent.
    assert context.keys() == TEMPLATE_VARIABLES.keys()
    return context


def render_prompt(template: str, context: Mapping[str, Any]) -> str:
    """Render a node's Mustache template (missing tags render empty; nothing is escaped)."""
    return str(_RENDERER.render(_parsed(template), context))


def _user_block(text: str, prompt_text: str, placement: Placement) -> list[ChatMessage]:
    user = {"role": "user", "content": text}
    if placement is Placement.InPlaceOfUser:
        return [{"role": "user", "content": prompt_text}]
    role = "system" if placement.value.endswith("system") else "user"
    extra = {"role": role, "content": prompt_text}
    return [extra, user] if placement.value.startswith("before") else [user, extra]


def project_chat(
    dialog: Sequence[Interaction],
    current: Interaction,
    *,
    system_prompt: str,
    prompt_text: str,
    placement: Placement,
) -> list[ChatMessage]:
    """The chat a model-using node sees: system prompt, past interactions, the current one."""
    chat: list[ChatMessage] = []
    if system_prompt:
        chat.append({"role": "system", "content": system_prompt})
    for past in dialog:
        chat.append({"role": "user", "content": past.user_message})
        chat.extend(past.messages)
    chat.extend(_user_block(current.user_message, prompt_text, placement))
    chat.extend(current.messages)
    return chat
