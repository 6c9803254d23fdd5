"""Readers of the native, non-JSON call forms of the family table: Mistral v11+'s
`[TOOL_CALLS]name[ARGS]{...}`, Gemma 4's `call:name{key:<|"|>text<|"|>}` and the XML-style
`<function=name><parameter=key>value</parameter></function>`.

Each reader finds its form in a stretch of text and returns spans: where the markup starts and
ends, and the calls in it (None for a call that looked like one but did not parse). The parser
(`tool_parsing`) turns them into calls, residual prose and malformed spans; like it, nothing here
raises on model output.
"""

from __future__ import annotations

import json
import re
from typing import NamedTuple

from .families import CallMarkup

__all__ = ["NativeCall", "NativeSpan", "gemma_spans", "mistral_args_call", "xml_spans"]

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"
# What a tool's name may hold in the native forms (JSON forms quote it, these do not).
_NAME = r"[A-Za-z_][\w.\-]*"


class NativeCall(NamedTuple):
    name: str
    arguments: dict[str, object]


class NativeSpan(NamedTuple):
    start: int
    end: int
    #: (call, raw text) per call; call None when the span looked like a call but did not parse.
    items: tuple[tuple[NativeCall | None, str], ...]


# --- Mistral v11+: [TOOL_CALLS]name[CALL_ID]id[ARGS]{...} --------------------------------------


def mistral_args_call(
    seg: str, pos: int, markup: CallMarkup, limit: int
) -> tuple[NativeCall | None, int] | None:
    """The `name[CALL_ID]id[ARGS]{...}` call at pos and where it ends; None when pos holds no
    such head (so the text is read as another form). A head whose object does not parse is a
    (None, end) malformed call, its end bounded by `limit` (the next call's marker)."""
    if not markup.args_marker:
        return None
    head = re.compile(
        rf"\s*({_NAME})\s*"
        + (rf"(?:{re.escape(markup.call_id_marker)}\s*\w*\s*)?" if markup.call_id_marker else "")
        + re.escape(markup.args_marker)
        + r"\s*"
    ).match(seg, pos, limit)
    if head is None:
        return None
    body = head.end()
    try:
        value, end = _DECODER.raw_decode(seg, body)
    except (ValueError, RecursionError):
        return None, limit
    if isinstance(value, str):
        # Arguments given as a JSON string (copied from OpenAI-style history).
        try:
            value = json.loads(value) if value.strip() else {}
        except (ValueError, RecursionError):
            return None, end
    if not isinstance(value, dict):
        return None, end
    return NativeCall(head.group(1), value), end


# --- Gemma 4: <|tool_call>call:name{key:<|"|>text<|"|>,n:3}<tool_call|> ----------------------


def gemma_spans(seg: str, markup: CallMarkup) -> list[NativeSpan]:
    """Gemma 4 calls: the opener, `call:name{...}`, the closer. An opener followed by anything
    but `call:` is left for the JSON reader of the same tags."""
    spans: list[NativeSpan] = []
    opener, closer, quote = markup.opener, markup.closer, markup.string_quote
    head = re.compile(rf"\s*{re.escape(markup.call_prefix)}\s*({_NAME})\s*")
    pos = 0
    while (start := seg.find(opener, pos)) != -1:
        body = start + len(opener)
        match = head.match(seg, body)
        if match is None:
            pos = body
            continue
        following = seg.find(opener, match.end())
        limit = len(seg) if following == -1 else following
        call: NativeCall | None = None
        end = limit
        if seg.startswith("{", match.end()):
            object_end = _gemma_balanced_end(seg, match.end(), limit, quote)
            if object_end is not None:
                arguments = _gemma_value(seg[match.end() : object_end], quote)
                after = _skip(seg, object_end)
                if isinstance(arguments, dict):
                    call = NativeCall(match.group(1), arguments)
                    end = after + len(closer) if seg.startswith(closer, after) else object_end
                elif seg.startswith(closer, after):
                    end = after + len(closer)
        if call is None and end == limit:
            # Broken: the markup runs to its closer, or to the next call.
            closing = seg.find(closer, match.end(), limit)
            end = limit if closing == -1 else closing + len(closer)
        spans.append(NativeSpan(start, end, ((call, seg[start:end]),)))
        pos = end
    return spans


def _gemma_balanced_end(seg: str, pos: int, limit: int, quote: str) -> int | None:
    depth = 0
    index = pos
    while index < limit:
        if quote and seg.startswith(quote, index):
            closing = seg.find(quote, index + len(quote), limit)
            if closing == -1:
                return None
            index = closing + len(quote)
            continue
        char = seg[index]
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


_GEMMA_PUNCT = "{}[],:"


def _gemma_value(text: str, quote: str) -> object:
    """Gemma 4's argument object as Python (None when it is not one): quoted strings are raw
    text, bare keys are names, bare values are JSON literals (or, leniently, text)."""
    pieces: list[str] = []
    index = 0
    length = len(text)
    while index < length:
        if quote and text.startswith(quote, index):
            closing = text.find(quote, index + len(quote))
            if closing == -1:
                return None
            pieces.append(json.dumps(text[index + len(quote) : closing]))
            index = closing + len(quote)
            continue
        char = text[index]
        if char in _WS:
            index += 1
            continue
        if char in _GEMMA_PUNCT:
            pieces.append(char)
            index += 1
            continue
        token_end = index
        while (
            token_end < length
            and text[token_end] not in _GEMMA_PUNCT
            and not (quote and text.startswith(quote, token_end))
        ):
            token_end += 1
        token = text[index:token_end].strip()
        if _skip(text, token_end) < length and text[_skip(text, token_end)] == ":":
            pieces.append(json.dumps(token))  # a bare key
        else:
            pieces.append(token if _is_json_literal(token) else json.dumps(token))
        index = token_end
    try:
        value = json.loads("".join(pieces))
    except (ValueError, RecursionError):
        return None
    return value


def _is_json_literal(token: str) -> bool:
    try:
        value = json.loads(token)
    except (ValueError, RecursionError):
        return False
    return value is None or isinstance(value, (bool, int, float))


# --- XML style: <function=name><parameter=key>value</parameter></function> -------------------


def xml_spans(seg: str, markup: CallMarkup) -> list[NativeSpan]:
    """XML-style calls, each taking in a `<tool_call>` wrapper around it (the family's tags)."""
    tag = re.escape(markup.xml_function)
    function = re.compile(rf"<{tag}(?:=|\s+name\s*=)\s*[\"']?({_NAME})[\"']?\s*>")
    function_end = f"</{markup.xml_function}>"
    params = "|".join(map(re.escape, markup.xml_parameters))
    parameter = re.compile(
        rf"<({params})(?:=|\s+name\s*=)\s*[\"']?([^\"'<>]+?)[\"']?\s*>(.*?)</\1>", re.DOTALL
    )
    spans: list[NativeSpan] = []
    pos = 0
    while (match := function.search(seg, pos)) is not None:
        following = function.search(seg, match.end())
        limit = len(seg) if following is None else following.start()
        closing = seg.find(function_end, match.end(), limit)
        call: NativeCall | None = None
        if closing == -1:
            end = limit
        else:
            end = closing + len(function_end)
            call = _xml_call(match.group(1), seg[match.end() : closing], parameter)
        start = match.start()
        # Take in the family's wrapper when it holds only this call.
        before = seg[:start].rstrip(_WS)
        if markup.opener and before.endswith(markup.opener):
            start = len(before) - len(markup.opener)
        after = _skip(seg, end)
        if markup.closer and closing != -1 and seg.startswith(markup.closer, after):
            end = after + len(markup.closer)
        spans.append(NativeSpan(start, end, ((call, seg[start:end]),)))
        pos = end
    return spans


def _xml_call(name: str, body: str, parameter: re.Pattern[str]) -> NativeCall | None:
    arguments: dict[str, object] = {}
    pos = 0
    for match in parameter.finditer(body):
        if body[pos : match.start()].strip():
            return None  # stray text between parameters: not the form
        arguments[match.group(2).strip()] = _xml_value(match.group(3))
        pos = match.end()
    if body[pos:].strip():
        return None
    return NativeCall(name, arguments)


def _xml_value(text: str) -> object:
    # Qwen3-Coder puts each value on lines of its own; MiniCPM wraps markup-like text in CDATA.
    if text.startswith("\n"):
        text = text[1:]
    if text.endswith("\n"):
        text = text[:-1]
    stripped = text.strip()
    if stripped.startswith("<![CDATA[") and stripped.endswith("]]>"):
        return stripped[len("<![CDATA[") : -len("]]>")]
    if stripped[:1] in ("{", "["):
        # Structured values are written as JSON; scalars stay text for the declared types.
        try:
            return json.loads(stripped)
        except (ValueError, RecursionError):
            return text
    return text


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WS:
        pos += 1
    return pos
