"""Tool-call grammars of the llama backend: one call to a declared tool, as GBNF.

A constrained call always parses: its fixed text (the family's opener and the call's head, from
the family table) is forced as prompt, and a GBNF grammar built from the tools' parameter schemas
constrains the rest, with string arguments bounded so the call can close within the token
budget even when a small model never ends its string.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...tools.families import ToolCallFamily, call_markup

# Longest string argument a constrained call may hold. The grammar enforces a bound so that a
# small model that never closes its string (say, "1000000...") still ends with a parseable
# call; under a small max_tokens the bound shrinks further (see `string_caps`).
_MAX_STRING_CHARS = 200


@dataclass(frozen=True, slots=True)
class ToolCallGrammar:
    """How to constrain one tool call: text to force, then a GBNF grammar for the rest."""

    #: What announces a call in free text (None: a bare JSON object at the start of the reply).
    trigger: str | None
    #: Text every call starts with after the trigger; it is fed to the model as prompt rather
    #: than sampled, because a grammar-constrained token costs several free ones.
    forced: str
    #: GBNF for the rest of the call, closing markup included.
    gbnf: str
    #: The most tokens the grammar lets the sampled part take (see `call_token_bound`): a
    #: generation given this many always reaches the call's closer.
    max_tokens: int = 0


def _gbnf_literal(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r") + '"'


_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object", "null"}


def _constrained_schema(schema: object, max_chars: int = _MAX_STRING_CHARS) -> dict[str, Any]:
    """The tool's parameter schema as the grammar enforces it: all declared, strings bounded."""
    if not isinstance(schema, Mapping):
        return {"type": "object", "properties": {}}
    properties: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        prop = dict(prop) if isinstance(prop, Mapping) else {}
        prop.pop("description", None)
        kind = prop.get("type")
        if kind == "string" and prop.get("enum"):
            prop = {"enum": list(prop["enum"])}  # one of the listed values, whole
        elif kind == "string":
            # A required string left empty is no answer: small models pick "" greedily.
            prop.setdefault("minLength", 1)
            prop.setdefault("maxLength", max_chars)
        elif kind not in _JSON_TYPES:
            prop = {}  # any JSON value
        properties[str(name)] = prop
    return {"type": "object", "properties": properties, "required": list(properties)}


_SKELETON_VALUES: dict[str, object] = {
    "string": "",
    "integer": 10**15,  # the converter allows up to 16 digits
    "number": -(10**15) - 0.5,
    "boolean": False,
    "array": [],
    "object": {},
}


def string_caps(
    tools: Sequence[Mapping[str, Any]],
    family: ToolCallFamily,
    max_tokens: int,
    count_tokens: Callable[[str], int] = len,
) -> list[int]:
    """Per tool, the longest string argument that lets its call close within `max_tokens`.

    The call's fixed parts are counted with `count_tokens` (numbers at their longest) and each
    string character as one token, the worst case (e.g. a run of digits): the bound holds for a
    model stuck repeating one character.
    """
    caps = []
    for text, strings in call_skeletons(tools, family):
        fixed = count_tokens(text)
        cap = (max_tokens - fixed) // strings if strings else _MAX_STRING_CHARS
        caps.append(min(max(cap, 1), _MAX_STRING_CHARS))
    return caps


def call_skeletons(
    tools: Sequence[Mapping[str, Any]], family: ToolCallFamily
) -> list[tuple[str, int]]:
    """Per tool, the sampled text of a call with its strings empty and its numbers at their
    longest, and how many string arguments it has (what `string_caps` counts)."""
    markup = call_markup(family)
    skeletons = []
    for tool in tools:
        fn = tool.get("function", tool)
        props = _constrained_schema(fn.get("parameters"))["properties"]
        strings = sum(1 for prop in props.values() if prop.get("type") == "string")
        skeleton = {k: _skeleton_value(p) for k, p in props.items()}
        call = json.dumps({"name": fn.get("name"), markup.arguments_key: skeleton})
        if len(tools) == 1:  # the head is forced as prompt, not sampled
            call = call[len(markup.head(fn["name"])) - len(markup.list_open) :]
        skeletons.append((call + markup.tail, strings))
    return skeletons


def _skeleton_value(prop: Mapping[str, Any]) -> object:
    if "enum" in prop:  # sampled whole: the longest of the values
        return max(prop["enum"], key=lambda v: len(json.dumps(v)))
    return _SKELETON_VALUES.get(prop.get("type", "object"), {})


# Most bytes one value of each type can take in the grammar (the converter bounds numbers to 16
# digits per part: "-" 16 digits "." 16 digits "e-" 16 digits), string characters excepted.
_VALUE_BYTES = {"integer": 17, "number": 52, "boolean": 5, "null": 4}
# Most bytes one string character can take: a "\\uXXXX" escape (a UTF-8 character is at most 4).
_CHAR_BYTES = 6
# What an array or object argument is allowed in the bound: its grammar is not length-bounded,
# so a call with one is bounded only in practice (a model stuck in one still hits max_tokens).
_OPEN_VALUE_BYTES = 64


def call_token_bound(
    tools: Sequence[Mapping[str, Any]], family: ToolCallFamily, max_string_chars: Sequence[int]
) -> int:
    """The most tokens the sampled part of a constrained call can take, over all `tools`.

    Counted in bytes, since every token the grammar accepts holds at least one byte (llama.cpp
    refuses empty pieces): the call's JSON with each value at its longest, each string character
    as an escape, the optional space the grammar allows around every key and value, the tail.
    """
    markup = call_markup(family)
    bound = 0
    for tool, cap in zip(tools, max_string_chars, strict=True):
        fn = tool.get("function", tool)
        props = _constrained_schema(fn.get("parameters"), cap)["properties"]
        head = markup.head(fn["name"])
        size = len(head.encode("utf-8")) + 2 + len(markup.tail.encode("utf-8"))  # "{", "}"
        for name, prop in props.items():
            kind = prop.get("type")
            if "enum" in prop:
                value = max(len(json.dumps(v).encode("utf-8")) for v in prop["enum"])
            elif kind == "string":
                value = 2 + cap * _CHAR_BYTES
            else:
                value = _VALUE_BYTES.get(str(kind), _OPEN_VALUE_BYTES)
            # key, ":", "," and up to 4 optional spaces around them
            size += len(json.dumps(str(name)).encode("utf-8")) + 2 + 4 + value
        bound = max(bound, size + 2)  # the spaces after "{" and "}"
    return bound


def tool_call_grammar(
    tools: Sequence[Mapping[str, Any]],
    family: ToolCallFamily,
    max_string_chars: Sequence[int] | None = None,
) -> ToolCallGrammar:
    """The grammar of one call to one of `tools`, in the markup of `family` (string arguments
    of tool i at most `max_string_chars[i]` characters)."""
    from llama_cpp.llama_grammar import SchemaConverter

    markup = call_markup(family)
    functions = [tool.get("function", tool) for tool in tools]
    if not functions:
        raise ValueError("a tool-call grammar needs at least one tool")
    caps = list(max_string_chars or [_MAX_STRING_CHARS] * len(functions))
    converter = SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
    tail = f'"}}" {_gbnf_literal(markup.tail)}' if markup.tail else '"}"'
    rules = []
    args = [
        converter.visit(_constrained_schema(fn.get("parameters"), cap), f"args-{index}")
        for index, (fn, cap) in enumerate(zip(functions, caps, strict=True))
    ]
    if len(functions) == 1:
        # One tool: its whole head is fixed text, so only the argument values are sampled.
        forced = markup.head(functions[0]["name"])
        rules.append(f"root ::= {args[0]} {tail}")
    else:
        forced = markup.call_open
        for index, fn in enumerate(functions):
            head = markup.head(fn["name"])[len(forced) :]
            rules.append(f"tool-{index} ::= {_gbnf_literal(head)} {args[index]}")
        heads = " | ".join(f"tool-{index}" for index in range(len(functions)))
        rules.append(f"root ::= ({heads}) {tail}")
    gbnf = converter.format_grammar() + "\n" + "\n".join(rules) + "\n"
    bound = call_token_bound(tools, family, caps)
    return ToolCallGrammar(markup.opener or None, forced, gbnf, bound)
