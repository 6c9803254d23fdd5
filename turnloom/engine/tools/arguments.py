"""Tool-call arguments as the host receives them: strings, or values of the declared types.

A parsed call holds whatever JSON the model wrote; the host gets every value as a string (in
`arguments_json`) and, beside them, the values coerced to the types the tool declared. Like the
parser this never raises on model output: a value that does not convert is kept as written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping

__all__ = ["arguments_as_strings", "coerce_arguments"]

_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# Returned by converters for "cannot coerce"; None is a legitimate JSON value, so it cannot be.
_UNCHANGED = object()
_TRUE_WORDS = frozenset({"true", "1", "yes"})
_FALSE_WORDS = frozenset({"false", "0", "no"})


def arguments_as_strings(arguments: Mapping[str, object]) -> dict[str, str]:
    """Render every argument value as the string the host receives (JSON text for non-strings)."""
    return {str(key): _as_string(value) for key, value in arguments.items()}


def coerce_arguments(
    arguments: Mapping[str, object], declared: Mapping[str, str]
) -> dict[str, object]:
    """Convert argument values to their declared JSON-schema types, keeping what cannot convert."""
    coerced: dict[str, object] = {}
    for key, value in arguments.items():
        declared_type = declared.get(key)
        if isinstance(declared_type, str):
            coerced[key] = _coerce(value, declared_type.strip().lower())
        else:
            coerced[key] = value
    return coerced


def _as_string(value: object) -> str:
    if isinstance(value, str):
        return value
    # JSON text already gives the convention: true/false, null, 3, 2.5, compact lists/objects.
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return str(value)


def _coerce(value: object, declared_type: str) -> object:
    converted = _CONVERTERS.get(declared_type)
    if converted is None:
        return value
    result = converted(value)
    return value if result is _UNCHANGED else result


def _to_string(value: object) -> object:
    return _UNCHANGED if value is None else _as_string(value)


def _to_boolean(value: object) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
        return _UNCHANGED
    if isinstance(value, int | float) and value in (0, 1):
        return bool(value)
    return _UNCHANGED


def _to_integer(value: object) -> object:
    # bool is an int subclass, but True is not an integer argument in JSON schema.
    if isinstance(value, bool):
        return _UNCHANGED
    if isinstance(value, str):
        value = _parse_number(value.strip())
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return _UNCHANGED


def _to_number(value: object) -> object:
    if isinstance(value, bool):
        return _UNCHANGED
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        return _parse_number(value.strip())
    return _UNCHANGED


def _parse_number(text: str) -> object:
    # Regexes rather than bare int()/float(): those also accept "1_000", "nan", "inf" and
    # non-ASCII digits, none of which a JSON argument means.
    try:
        if _INTEGER_TEXT.fullmatch(text):
            return int(text)
        if _NUMBER_TEXT.fullmatch(text):
            number = float(text)
            return number if math.isfinite(number) else _UNCHANGED
    except ValueError:  # int() refuses more than sys.get_int_max_str_digits() digits
        return _UNCHANGED
    return _UNCHANGED


def _to_array(value: object) -> object:
    if isinstance(value, list):
        return value
    if isinstance(value, tuple):
        return list(value)
    return _json_of_type(value, list)


def _to_object(value: object) -> object:
    if isinstance(value, dict):
        return value
    return _json_of_type(value, dict)


def _json_of_type(value: object, kind: type) -> object:
    if not isinstance(value, str):
        return _UNCHANGED
    try:
        decoded = json.loads(value)
    except (ValueError, RecursionError):
        return _UNCHANGED
    return decoded if isinstance(decoded, kind) else _UNCHANGED


_CONVERTERS: dict[str, Callable[[object], object]] = {
    "string": _to_string,
    "boolean": _to_boolean,
    "integer": _to_integer,
    "number": _to_number,
    "array": _to_array,
    "object": _to_object,
}
