"""Parse the text an LLM generated into tool calls, for the call formats of real template families.

The markup each family wraps calls in comes from the family table (`tool_families`); this module
finds it in model output. It is pure on purpose: it runs on every generated turn, so malformed
model output must never raise; it becomes a clean "no call" plus a diagnostic span instead.

The module is longer than 400 lines because its parts are one job: the extractors, the lenient
JSON scanning they share and the stage order that picks between them are tuned against each
other (a span one extractor claims is never read by the next).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from .families import FAMILIES, CallMarkup, ToolCallFamily
from .formats import NativeSpan, gemma_spans, mistral_args_call, xml_spans

__all__ = ["ParseOutcome", "ParsedCall", "parse_tool_calls"]


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One tool call recovered from model output (name, JSON argument object, source span)."""

    name: str
    arguments: dict[str, object]
    # The whole markup unit when it held only this call (a <tool_call> block, a [TOOL_CALLS]
    # array of one, a fenced block), else just this call's JSON object.
    raw: str


@dataclass(frozen=True, slots=True)
class ParseOutcome:
    """Calls, leftover prose and unparseable call-looking spans of one model output."""

    calls: tuple[ParsedCall, ...]
    residual_text: str
    malformed: tuple[str, ...]


class _Item(NamedTuple):
    call: ParsedCall | None  # None: the span looked like a call but did not parse
    raw: str


class _Unit(NamedTuple):
    start: int
    end: int
    # Empty for markup that holds no call (think blocks, stray closing tags): it is still cut
    # from the residual text, but does not count as "this family's markup was found".
    items: tuple[_Item, ...]


_Extractor = Callable[[str], list[_Unit]]

_DECODER = json.JSONDecoder()
_JSON_WS = " \t\r\n"
_SEPARATORS = _JSON_WS + ";,"

_THINK_OPEN = "<think>"
_THINK_TAG = re.compile(r"</?think>")

# Bare JSON is only worth decoding where an object opens with a key: this keeps prose such as
# "use {} here" or "{x}" away from the decoder, whose every failure costs a scan of the text.
_BARE_CANDIDATE = re.compile(r'(?:\[\s*)?\{\s*"(?:[^"\\]|\\.)*"\s*:', re.DOTALL)
# The keys families give a call's argument object, in the order a call object is searched for them.
_ARGUMENT_KEYS = tuple(dict.fromkeys(markup.arguments_key for markup in FAMILIES.values()))
# A bare object that fails to decode is reported as malformed only if it opened the way models
# open a call; any other broken brace in prose is just prose.
_CALLISH = re.compile(
    r'\{\s*"name"\s*:\s*"[^"\\]*"\s*,\s*"(?:'
    + "|".join(map(re.escape, _ARGUMENT_KEYS))
    + r')"\s*:|\{\s*"arguments"\s*:'
)
_GLUE = re.compile(r"[\s;,]*")
_FENCE_HEAD = re.compile(r"```[ \t]*[\w+-]*\s*")
_FENCE_TAIL = re.compile(r"\s*(?:```|\Z)")


def parse_tool_calls(text: str, family: ToolCallFamily = ToolCallFamily.GENERIC) -> ParseOutcome:
    """Extract tool calls, residual prose and malformed call spans from generated text."""
    if not isinstance(text, str):
        return ParseOutcome(calls=(), residual_text="", malformed=())
    try:
        family = ToolCallFamily(family)
    except ValueError:
        family = ToolCallFamily.GENERIC
    units = _think_units(text)
    # A family's own markup wins; only when it holds no call-like span do we widen to every
    # tagged shape, and only then to bare JSON, so a model that ignores its template still
    # works while prose that quotes JSON beside a real call is not mistaken for a second call.
    for stage in (_OWN_MARKUP[family], _TAGGED, _BARE):
        found = False
        for extractor in stage:
            new_units = _run_in_gaps(text, units, extractor)
            units = sorted([*units, *new_units], key=lambda unit: unit.start)
            found = found or any(unit.items for unit in new_units)
        if found:
            break
    return _outcome(text, units)


# --- stages -----------------------------------------------------------------------------------


def _paired_units(seg: str, opener: str, closer: str, tags: re.Pattern[str]) -> list[_Unit]:
    """Calls between an opener and a closer (Hermes' `<tool_call>...</tool_call>`)."""
    units: list[_Unit] = []

    def next_tag(pos: int) -> int:
        match = tags.search(seg, pos)
        return match.start() if match else len(seg)

    pos = 0
    while (tag := tags.search(seg, pos)) is not None:
        if tag.group() == closer:
            # A closer without an opener is still markup the user must not see.
            units.append(_Unit(tag.start(), tag.end(), ()))
            pos = tag.end()
            continue
        items, value_end = _decode_payload(seg, tag.end(), next_tag)
        after = _skip(seg, value_end, _JSON_WS)
        if seg.startswith(closer, after):
            end = after + len(closer)
        elif after >= len(seg) or seg.startswith(opener, after):
            # Generation stopped (or moved on) before the closing tag.
            end = value_end if items else after
        else:
            following = tags.search(seg, after)
            if following is not None and following.group() == closer:
                leftover_end, end = following.start(), following.end()
            else:
                leftover_end = following.start() if following else len(seg)
                # Unclosed block: once a call decoded, what follows is prose, not markup.
                end = value_end if items else leftover_end
            if end >= leftover_end:
                items.append(_Item(None, seg[after:leftover_end]))
        if not items:
            items.append(_Item(None, seg[tag.start() : end]))
        units.append(_single_raw(seg, _Unit(tag.start(), end, tuple(items))))
        pos = max(end, tag.end())
    return units


def _marker_units(seg: str, marker: str, markup: CallMarkup) -> list[_Unit]:
    """Calls after a marker that has no closer (Mistral's `[TOOL_CALLS]`)."""
    units: list[_Unit] = []

    def next_marker(pos: int) -> int:
        found = seg.find(marker, pos)
        return len(seg) if found == -1 else found

    pos = 0
    while (start := seg.find(marker, pos)) != -1:
        body = start + len(marker)
        native = mistral_args_call(seg, body, markup, next_marker(body))
        if native is not None:
            # Mistral v11+: `[TOOL_CALLS]name[ARGS]{...}`, one call per marker.
            call, end = native
            item = _Item(None if call is None else ParsedCall(*call, raw=""), seg[start:end])
            units.append(_single_raw(seg, _Unit(start, end, (item,))))
            pos = max(end, body)
            continue
        items, end = _decode_payload(seg, body, next_marker)
        if not items:
            # The marker promised a call but no JSON followed (e.g. Llama's built-in
            # `brave_search.call(...)` syntax, or a truncated generation).
            end = next_marker(body)
            items = [_Item(None, seg[start:end])]
        units.append(_single_raw(seg, _Unit(start, end, tuple(items))))
        pos = max(end, body)
    return units


def _bare_units(seg: str) -> list[_Unit]:
    found: list[_Unit] = []
    pos = 0
    while (candidate := _BARE_CANDIDATE.search(seg, pos)) is not None:
        start = candidate.start()
        if seg[start] == "[":
            array = _decode_array(seg, start)
            if array is None:
                # Retry at the inner "{": a broken list may still hold a whole call object.
                pos = start + 1
                continue
            elements, end = array
            if elements and all(_looks_like_call(value) for _, _, value in elements):
                items = tuple(_strict_item(value, seg[s:e]) for s, e, value in elements)
                found.append(_Unit(start, end, items))
            pos = end
            continue
        decoded = _decode_at(seg, start)
        if decoded is None:
            if _CALLISH.match(seg, start):
                balanced = _balanced_end(seg, start, len(seg))
                # Unbalanced means truncated: swallow the rest rather than risk reading a nested
                # object of the broken call as a call of its own.
                end = len(seg) if balanced is None else balanced
                found.append(_Unit(start, end, (_Item(None, seg[start:end]),)))
                pos = end
            else:
                pos = start + 1
            continue
        value, end = decoded
        if _looks_like_call(value):
            found.append(_Unit(start, end, (_strict_item(value, seg[start:end]),)))
        # Skip the whole object either way: JSON nested inside data is data, not a call.
        pos = end
    return [_single_raw(seg, unit) for unit in _glue_and_fence(seg, found)]


def _paired(opener: str, closer: str) -> _Extractor:
    tags = re.compile(f"{re.escape(opener)}|{re.escape(closer)}")
    return lambda seg: _paired_units(seg, opener, closer, tags)


def _marker(marker: str, markup: CallMarkup) -> _Extractor:
    return lambda seg: _marker_units(seg, marker, markup)


def _native(
    reader: Callable[[str, CallMarkup], list[NativeSpan]], markup: CallMarkup
) -> _Extractor:
    def extract(seg: str) -> list[_Unit]:
        return [
            _single_raw(
                seg,
                _Unit(
                    span.start,
                    span.end,
                    tuple(
                        _Item(None if call is None else ParsedCall(*call, raw=raw), raw)
                        for call, raw in span.items
                    ),
                ),
            )
            for span in reader(seg, markup)
        ]

    return extract


def _extractors(markup: CallMarkup) -> tuple[_Extractor, ...]:
    """What reads a family's markup: its native forms first, then its opener (with its closer,
    if any) around JSON, then its markers."""
    found: list[_Extractor] = []
    if markup.xml_function:
        found.append(_native(xml_spans, markup))
    if markup.call_prefix:
        found.append(_native(gemma_spans, markup))
    if markup.opener:
        found.append(
            _paired(markup.opener, markup.closer)
            if markup.closer
            else _marker(markup.opener, markup)
        )
    found.extend(_marker(marker, markup) for marker in markup.markers)
    return tuple(found)


_OWN_MARKUP: dict[ToolCallFamily, tuple[_Extractor, ...]] = {
    family: _extractors(markup) if markup.preferred else () for family, markup in FAMILIES.items()
}
# Every family's own markup, in table order (GENERIC prefers none, so it adds nothing).
_TAGGED: tuple[_Extractor, ...] = tuple(
    extractor for family in FAMILIES for extractor in _OWN_MARKUP[family]
)
_BARE: tuple[_Extractor, ...] = (_bare_units,)


# --- helpers ----------------------------------------------------------------------------------


def _think_units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    open_at: int | None = None
    for tag in _THINK_TAG.finditer(text):
        if tag.group() == _THINK_OPEN:
            if open_at is None:
                open_at = tag.start()
        elif open_at is not None:
            units.append(_Unit(open_at, tag.end(), ()))
            open_at = None
        else:
            # A closer with no opener: the prompt opened the block, so a leading stretch is
            # reasoning; later strays are just a tag to hide.
            units.append(_Unit(0 if not units else tag.start(), tag.end(), ()))
    if open_at is not None:
        # Unclosed: generation stopped while thinking, so nothing after it is an answer.
        units.append(_Unit(open_at, len(text), ()))
    return units


def _run_in_gaps(text: str, units: list[_Unit], extractor: _Extractor) -> list[_Unit]:
    # Extractors see only text no earlier unit claimed, so a call inside a <think> block or
    # inside another family's markup is never read twice.
    found: list[_Unit] = []
    for gap_start, gap_end in _gap_bounds(text, units):
        for unit in extractor(text[gap_start:gap_end]):
            found.append(_Unit(unit.start + gap_start, unit.end + gap_start, unit.items))
    return found


def _gap_bounds(text: str, units: list[_Unit]) -> list[tuple[int, int]]:
    bounds: list[tuple[int, int]] = []
    pos = 0
    for unit in units:
        if unit.start > pos:
            bounds.append((pos, unit.start))
        pos = max(pos, unit.end)
    if pos < len(text):
        bounds.append((pos, len(text)))
    return bounds


def _outcome(text: str, units: list[_Unit]) -> ParseOutcome:
    calls: list[ParsedCall] = []
    malformed: list[str] = []
    pieces: list[str] = []
    pos = 0
    for unit in units:
        pieces.append(text[pos : unit.start])
        pos = max(pos, unit.end)
        for item in unit.items:
            if item.call is None:
                malformed.append(item.raw)
            else:
                calls.append(item.call)
    pieces.append(text[pos:])
    return ParseOutcome(
        calls=tuple(calls), residual_text="".join(pieces).strip(), malformed=tuple(malformed)
    )


def _decode_payload(seg: str, pos: int, limit_at: Callable[[int], int]) -> tuple[list[_Item], int]:
    """Decode JSON values separated by whitespace, ';' or ',' until markup or prose starts."""
    items: list[_Item] = []
    end = pos
    while True:
        start = _skip(seg, end, _SEPARATORS)
        # The limit is recomputed per value: a decoded string may legally contain a tag.
        limit = limit_at(start)
        if start >= limit or seg[start] not in "{[":
            return items, end
        if seg[start] == "[":
            array = _decode_array(seg, start)
            if array is not None:
                elements, value_end = array
                if elements and all(isinstance(value, dict) for _, _, value in elements):
                    items.extend(_strict_item(value, seg[s:e]) for s, e, value in elements)
                else:
                    # Not a list of call objects at all: one diagnostic span, not one per scalar.
                    items.append(_Item(None, seg[start:value_end]))
                end = value_end
                continue
        else:
            decoded = _decode_at(seg, start)
            if decoded is not None:
                value, value_end = decoded
                items.append(_strict_item(value, seg[start:value_end]))
                end = value_end
                continue
        balanced = _balanced_end(seg, start, limit)
        if balanced is None:
            # Truncated, or it runs into the next tag: the markup bounds the broken value.
            items.append(_Item(None, seg[start:limit]))
            return items, limit
        items.append(_Item(None, seg[start:balanced]))
        end = balanced


def _decode_at(text: str, pos: int) -> tuple[object, int] | None:
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except (ValueError, RecursionError):
        return None
    return value, end


def _decode_array(text: str, pos: int) -> tuple[list[tuple[int, int, object]], int] | None:
    """Decode the JSON array at pos, keeping each element's span (raw_decode gives none)."""
    elements: list[tuple[int, int, object]] = []
    cursor = _skip(text, pos + 1, _JSON_WS)
    if text.startswith("]", cursor):
        return elements, cursor + 1
    while True:
        decoded = _decode_at(text, cursor)
        if decoded is None:
            return None
        value, value_end = decoded
        elements.append((cursor, value_end, value))
        cursor = _skip(text, value_end, _JSON_WS)
        if text.startswith("]", cursor):
            return elements, cursor + 1
        if not text.startswith(",", cursor):
            return None
        cursor = _skip(text, cursor + 1, _JSON_WS)


def _balanced_end(text: str, pos: int, limit: int) -> int | None:
    """End of the bracket group opened at pos, string-aware; None when it is open at limit."""
    depth = 0
    in_string = False
    index = pos
    length = min(limit, len(text))
    while index < length:
        char = text[index]
        if in_string:
            if char == "\\":
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return None


def _skip(text: str, pos: int, chars: str) -> int:
    length = len(text)
    while pos < length and text[pos] in chars:
        pos += 1
    return pos


def _glue_and_fence(seg: str, units: list[_Unit]) -> list[_Unit]:
    """Merge calls separated only by ';', ',' or whitespace, and take in a ``` fence around them."""
    groups: list[_Unit] = []
    for unit in units:
        if groups and _GLUE.fullmatch(seg, groups[-1].end, unit.start):
            last = groups[-1]
            groups[-1] = _Unit(last.start, unit.end, last.items + unit.items)
        else:
            groups.append(unit)
    fenced: list[_Unit] = []
    for group in groups:
        start, end = group.start, group.end
        opener = seg.rfind("```", 0, start)
        # An even count of earlier fences means this one opens a block rather than closes one.
        if (
            opener != -1
            and seg.count("```", 0, opener) % 2 == 0
            and _FENCE_HEAD.fullmatch(seg, opener, start)
        ):
            tail = _FENCE_TAIL.match(seg, end)
            if tail is not None:
                start, end = opener, tail.end()
        fenced.append(_Unit(start, end, group.items))
    return fenced


def _single_raw(seg: str, unit: _Unit) -> _Unit:
    """Give a unit's only item the unit's whole text as raw, markup included."""
    if len(unit.items) != 1:
        return unit
    item = unit.items[0]
    raw = seg[unit.start : unit.end]
    call = None if item.call is None else dataclasses.replace(item.call, raw=raw)
    return unit._replace(items=(_Item(call, raw),))


def _looks_like_call(value: object) -> bool:
    """Whether bare JSON in prose is meant as a call (and so is malformed if it is not one)."""
    # A "description" marks an echoed tool definition, which also has "name" and "parameters".
    if not isinstance(value, dict) or "description" in value:
        return False
    return "arguments" in value or ("name" in value and "parameters" in value)


def _strict_item(value: object, raw: str) -> _Item:
    return _Item(_to_call(value, raw), raw)


def _to_call(value: object, raw: str) -> ParsedCall | None:
    if not isinstance(value, dict):
        return None
    name = value.get("name")
    if not isinstance(name, str) or not name.strip():
        return None
    # Inside explicit call markup a function without parameters may omit its arguments.
    key = next((key for key in _ARGUMENT_KEYS if key in value), None)
    arguments = {} if key is None else value[key]
    if isinstance(arguments, str):
        arguments = _decode_argument_string(arguments)
    if not isinstance(arguments, dict):
        return None
    return ParsedCall(name=name.strip(), arguments=arguments, raw=raw)


def _decode_argument_string(text: str) -> object:
    # OpenAI-style histories carry arguments as a JSON string, and some models copy that.
    if not text.strip():
        return {}
    value: object = text
    # Twice, because a model that copies stringified history sometimes stringifies it again.
    for _ in range(2):
        if not isinstance(value, str):
            break
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
    return value
