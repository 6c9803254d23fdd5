"""Chat templates of the llama backend: rendering a chat, and the tool-support probe
(docs/reference/tools.md#creation-probe).

A GGUF carries its Jinja chat template in its metadata (and sometimes a second one for tool use);
the catalog may override it. A template is user data, so whether it can offer tools and show
call/result pairs, and whether the family's parser reads back the call it shows, is checked by
rendering a probe chat, not assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...tools.families import ToolCallFamily, call_markup, detect_family
from ...tools.parsing import parse_tool_calls
from ..base import ChatMessage

#: Metadata key of the chat template a GGUF may carry.
TEMPLATE_KEY = "tokenizer.chat_template"
#: Metadata key of a GGUF's second chat template, for requests with tools.
TOOL_USE_TEMPLATE_KEY = "tokenizer.chat_template.tool_use"

#: The template of plain chats on a GGUF without any (as llama.cpp's server does). Such a model
#: still fails the tool probe, since this renders no tools.
CHATML_FALLBACK = (
    "{% for message in messages %}<|im_start|>{{ message.role }}\n"
    "{{ message.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


class ChatTemplate:
    """A Jinja chat template, rendered the way llama-cpp-python renders one (sandboxed jinja2)."""

    def __init__(self, source: str, *, bos_token: str = "", eos_token: str = "") -> None:
        # llama-cpp-python's own formatter: an ImmutableSandboxedEnvironment with the same
        # tojson, raise_exception and strftime_now as Transformers' chat templates.
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        # Typed against llama-cpp-python's TypedDict messages; ours are plain dicts.
        self._formatter: Any = Jinja2ChatFormatter(
            source, eos_token=eos_token, bos_token=bos_token, add_generation_prompt=True
        )

    def render(
        self, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]] | None = None
    ) -> str:
        """The prompt for `messages` (and `tools`), ending with the generation prompt."""
        response = self._formatter(messages=list(messages), tools=list(tools) if tools else None)
        return str(response.prompt)


_PROBE_TOOL_NAME = "turnloom_probe_tool"
_PROBE_ARGUMENT = "turnloom-probe-argument"
_PROBE_RESULT = "turnloom-probe-result"
# A real template's checks are taken into account: Mistral's demands 9-character alphanumeric
# call ids (the engine's c%08x ids are exactly that), Gemma 2's rejects a system message.
_PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": _PROBE_TOOL_NAME,
        "description": "Look something up.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What to look up."}},
            "required": ["query"],
        },
    },
}
_PROBE_OFFER: list[ChatMessage] = [{"role": "user", "content": "What can you look up?"}]
_PROBE_REQUEST = "Look it up."
_PROBE_EXCHANGE: list[ChatMessage] = [
    {"role": "user", "content": _PROBE_REQUEST},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "c00000000",
                "type": "function",
                "function": {"name": _PROBE_TOOL_NAME, "arguments": {"query": _PROBE_ARGUMENT}},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "c00000000",
        "name": _PROBE_TOOL_NAME,
        "content": _PROBE_RESULT,
    },
]


def probe_chat_template(
    source: str | None, family: ToolCallFamily | str | None = None
) -> str | None:
    """Why a chat template cannot offer tools and show call/result pairs, or None if it can.

    The call it shows is also read back with `family`'s parser (the family detected from the
    template when None): a model writes its calls the way its template shows past ones, so a
    call the parser cannot read there is a call it would never hear (accepted but deaf).
    """
    if not source:
        return "it has no chat template"
    try:
        template = ChatTemplate(source)
        offered = template.render(_PROBE_OFFER, [_PROBE_TOOL])
        exchanged = template.render(_PROBE_EXCHANGE, [_PROBE_TOOL])
    except Exception as exc:  # a template is user data: any failure is a reason to refuse it
        return f"its chat template failed to render tools: {type(exc).__name__}: {exc}"
    if _PROBE_TOOL_NAME not in offered:
        return "its chat template does not render the tools it is given"
    if _PROBE_ARGUMENT not in exchanged:
        return "its chat template does not render the assistant's tool calls"
    if _PROBE_RESULT not in exchanged:
        return "its chat template does not render tool results"
    return _read_back(exchanged, detect_family(source) if family is None else family)


def _read_back(exchanged: str, family: ToolCallFamily | str) -> str | None:
    """Why `family`'s parser cannot read back the probe call in a rendered exchange, or None."""
    # The assistant's turn lies between the user's request and the call's result; the turn
    # markup around it is noise every parser must skip in real output too.
    request = exchanged.find(_PROBE_REQUEST)
    start = 0 if request < 0 else request + len(_PROBE_REQUEST)
    end = exchanged.find(_PROBE_RESULT, start)
    shown = exchanged[start:end] if end >= 0 else ""
    if _PROBE_ARGUMENT not in shown:
        return "its chat template does not render the assistant's tool call before its result"
    family = call_markup(family).family
    calls = parse_tool_calls(shown, family).calls
    what = f"the {family.value} tool-call parser"
    expected = (_PROBE_TOOL_NAME, {"query": _PROBE_ARGUMENT})
    if not calls:
        return f"{what} finds no call in the call its chat template renders: {_clip(shown)}"
    if len(calls) > 1:
        return f"{what} reads {len(calls)} calls in the one call its chat template renders"
    (call,) = calls
    if (call.name, call.arguments) != expected:
        return (
            f"{what} misreads the call its chat template renders, as {call.name!r} with "
            f"arguments {call.arguments!r}: {_clip(shown)}"
        )
    return None


def _clip(text: str, limit: int = 160) -> str:
    """`text` for an error message: stripped, quoted, cut to `limit` characters."""
    text = text.strip()
    return repr(text if len(text) <= limit else text[:limit] + "...")


def uses_tools(messages: Sequence[ChatMessage], tools: object) -> bool:
    """Whether a chat needs the tool-use template: tools offered, or tool traffic in it."""
    return bool(tools) or any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)
