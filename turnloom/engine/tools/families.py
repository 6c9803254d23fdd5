"""Tool-call families: the markup each chat-template family wraps its models' calls in.

One table, read by both sides of a call: the parser (`tool_parsing`) finds calls by the opener,
closer and markers written here, and the grammar builder of the llama backend forces and
constrains calls with the same text. A family's markup is written nowhere else. The module
imports nothing heavy, so backends and the public API can name a family without pulling in the
parser.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

__all__ = [
    "FAMILIES",
    "CallMarkup",
    "ToolCallFamily",
    "call_markup",
    "detect_family",
]


class ToolCallFamily(StrEnum):
    """Tool-call markup conventions of chat-template families."""

    HERMES = "hermes"
    LLAMA3 = "llama3"
    MISTRAL = "mistral"
    #: Gemma 4: `<|tool_call>call:name{key:<|"|>text<|"|>}<tool_call|>`.
    GEMMA4 = "gemma4"
    #: XML-style calls: `<function=name><parameter=key>value</parameter></function>` (Qwen3-Coder,
    #: optionally inside `<tool_call>`) and `<function name=...><param name=...>` (MiniCPM).
    XML = "xml"
    #: IBM Granite: `<|tool_call|>[{"name": ..., "arguments": {...}}]`.
    GRANITE = "granite"
    GENERIC = "generic"


@dataclass(frozen=True, slots=True)
class CallMarkup:
    """How one family's models write a tool call, and so how the engine reads and forces one."""

    family: ToolCallFamily
    #: What announces a call in free text ("": a bare JSON call object, as Llama 3 writes).
    opener: str
    #: What ends a call's markup after its JSON ("": nothing, the JSON ends it).
    closer: str
    #: The key of a call's argument object (Llama 3 says "parameters").
    arguments_key: str = "arguments"
    #: Whether calls follow the opener as a JSON list (Mistral's `[TOOL_CALLS][{...}]`).
    is_list: bool = False
    #: Other text that announces a call in this family's output, read like an opener but never
    #: written (Llama 3's `<|python_tag|>`, which its models put before some calls).
    markers: tuple[str, ...] = ()
    #: Whether the parser reads this family's markup before any other. GENERIC has no markup of
    #: its own to prefer: it reads every tagged shape alike, and writes Hermes-style calls only
    #: because that is what most models understand.
    preferred: bool = True
    #: The native form `opener name [CALL_ID]id [ARGS]{...}` (Mistral v11+): the text between a
    #: call's name and its JSON argument object ("": the family has no such form)...
    args_marker: str = ""
    #: ...and the text that may put a call id before it.
    call_id_marker: str = ""
    #: The native form `opener call:name{key:value,...} closer` (Gemma 4): the text before the
    #: name ("": no such form)...
    call_prefix: str = ""
    #: ...and what its string values are wrapped in (keys are bare, numbers and booleans too).
    string_quote: str = ""
    #: The native XML form: the call element (`<function=name>` or `<function name=name>`)...
    xml_function: str = ""
    #: ...and its argument elements (`<parameter=key>` or `<param name=key>`).
    xml_parameters: tuple[str, ...] = ()

    @property
    def list_open(self) -> str:
        """What opens the call list after the opener ("" when calls are not listed)."""
        return "[" if self.is_list else ""

    @property
    def tail(self) -> str:
        """What follows a call's JSON object: the list's end, then the closer."""
        return ("]" if self.is_list else "") + self.closer

    @property
    def call_open(self) -> str:
        """A call's text after the opener, up to its name."""
        return self.list_open + '{"name": '

    def head(self, name: str) -> str:
        """A call's text after the opener, up to where its argument object starts."""
        return f'{self.call_open}{json.dumps(name)}, "{self.arguments_key}": '

    def write(self, name: str, arguments: Mapping[str, object]) -> str:
        """One call as this family's models write it: opener, call object, closing markup."""
        # The same text as json.dumps({"name": ..., key: ...}), so it matches the grammar's head.
        return self.opener + self.head(name) + json.dumps(dict(arguments)) + "}" + self.tail


#: The markup of every family, keyed by family. The order is the order in which the parser
#: tries the tagged shapes when a reply holds none of its own family's.
FAMILIES: Mapping[ToolCallFamily, CallMarkup] = MappingProxyType(
    {
        # Before Hermes: its calls may sit inside Hermes' <tool_call> tags.
        ToolCallFamily.XML: CallMarkup(
            ToolCallFamily.XML,
            "<tool_call>",
            "</tool_call>",
            xml_function="function",
            xml_parameters=("parameter", "param"),
        ),
        ToolCallFamily.HERMES: CallMarkup(ToolCallFamily.HERMES, "<tool_call>", "</tool_call>"),
        ToolCallFamily.MISTRAL: CallMarkup(
            ToolCallFamily.MISTRAL,
            "[TOOL_CALLS]",
            "",
            is_list=True,
            args_marker="[ARGS]",
            call_id_marker="[CALL_ID]",
        ),
        ToolCallFamily.GEMMA4: CallMarkup(
            ToolCallFamily.GEMMA4,
            "<|tool_call>",
            "<tool_call|>",
            call_prefix="call:",
            string_quote='<|"|>',
        ),
        ToolCallFamily.GRANITE: CallMarkup(
            ToolCallFamily.GRANITE, "<|tool_call|>", "", is_list=True
        ),
        ToolCallFamily.LLAMA3: CallMarkup(
            ToolCallFamily.LLAMA3, "", "", "parameters", markers=("<|python_tag|>",)
        ),
        ToolCallFamily.GENERIC: CallMarkup(
            ToolCallFamily.GENERIC, "<tool_call>", "</tool_call>", preferred=False
        ),
    }
)


def call_markup(family: ToolCallFamily | str) -> CallMarkup:
    """The markup of `family` (GENERIC's for a name that is no family)."""
    try:
        return FAMILIES[ToolCallFamily(family)]
    except ValueError:
        return FAMILIES[ToolCallFamily.GENERIC]


def detect_family(chat_template: str | None) -> ToolCallFamily:
    """Guess the tool-call family from a Jinja chat template's text (GENERIC when unsure)."""
    if not isinstance(chat_template, str) or not chat_template:
        return ToolCallFamily.GENERIC
    xml = FAMILIES[ToolCallFamily.XML]
    # Checked before Hermes: Qwen3-Coder's template also shows the <tool_call> wrapper.
    if f"<{xml.xml_function}=" in chat_template or f"<{xml.xml_function} name=" in chat_template:
        return ToolCallFamily.XML
    for family in (ToolCallFamily.GEMMA4, ToolCallFamily.GRANITE):
        if FAMILIES[family].opener in chat_template:
            return family
    # Checked before Llama 3: Hermes 2 Pro templates also mention "parameters" in their tool list.
    if FAMILIES[ToolCallFamily.HERMES].opener in chat_template:
        return ToolCallFamily.HERMES
    if FAMILIES[ToolCallFamily.MISTRAL].opener in chat_template:
        return ToolCallFamily.MISTRAL
    llama3 = FAMILIES[ToolCallFamily.LLAMA3]
    # Header tokens alone mean only "a Llama 3 template"; a tool-less one stays GENERIC.
    if "<|start_header_id|>" in chat_template and (
        f'"{llama3.arguments_key}"' in chat_template
        or any(marker in chat_template for marker in llama3.markers)
        or "ipython" in chat_template
    ):
        return ToolCallFamily.LLAMA3
    return ToolCallFamily.GENERIC
