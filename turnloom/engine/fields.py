"""Declared dataclass fields: their metadata, one validator that reads it, and plain-data copies.

A field declares through `param()` whether it is structural (fixed once set up) and its range;
`invalid_field` and `structural_change` read that metadata instead of one hand-written check per
field. The mapping helpers bring wire-friendly values to and from the declared types. Nothing
here knows what the dataclasses are for: `params.py` declares the node schemas with it.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import math
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from .rejections import InvalidParamValue

_MISSING = dataclasses.MISSING

#: A declared field with its resolved type.
FieldInfo = tuple[dataclasses.Field[Any], Any]


def param(
    default: Any = _MISSING,
    *,
    default_factory: Callable[[], Any] | Any = _MISSING,
    structural: bool = False,
    min: float | None = None,
    max: float | None = None,
    min_len: int | None = None,
    check: Callable[[Any], str | None] | None = None,
    doc: str = "",
) -> Any:
    """Declare a field: its default, whether it is structural, its range and an extra check."""
    meta = {
        "structural": structural,
        "min": min,
        "max": max,
        "min_len": min_len,
        "check": check,
        "doc": doc,
    }
    if default_factory is not _MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


_FIELDS: dict[type, tuple[FieldInfo, ...]] = {}


def param_fields(cls: type) -> tuple[FieldInfo, ...]:
    """The dataclass fields of `cls` with their resolved types, in order (cached per class)."""
    found = _FIELDS.get(cls)
    if found is None:
        hints = typing.get_type_hints(cls)
        found = _FIELDS[cls] = tuple((f, hints[f.name]) for f in dataclasses.fields(cls))
    return found


def _type_error(value: Any, tp: Any) -> str | None:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        errors = [_type_error(value, arm) for arm in typing.get_args(tp)]
        return None if any(e is None for e in errors) else errors[0]
    if origin is list:
        if not isinstance(value, list):
            return f"must be a list, got {type(value).__name__}"
        (item_tp,) = typing.get_args(tp)
        for i, item in enumerate(value):
            err = _type_error(item, item_tp)
            if err:
                return f"item {i} {err}"
        return None
    if tp is float:
        # NaN would slip through every range check (all comparisons with it are false).
        ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is type(None):
        ok = value is None
    else:
        ok = isinstance(value, tp)
    return None if ok else f"must be {getattr(tp, '__name__', tp)}, got {type(value).__name__}"


def _field_error(value: Any, f: dataclasses.Field[Any], tp: Any) -> str | None:
    err = _type_error(value, tp)
    if err:
        return err
    meta = f.metadata
    if meta.get("min") is not None and value < meta["min"]:
        return f"must be >= {meta['min']}, got {value!r}"
    if meta.get("max") is not None and value > meta["max"]:
        return f"must be <= {meta['max']}, got {value!r}"
    if meta.get("min_len") is not None and len(value) < meta["min_len"]:
        return f"must have at least {meta['min_len']} item(s), got {len(value)}"
    if meta.get("check") is not None:
        return typing.cast("str | None", meta["check"](value))
    return None


def invalid_field(obj: Any, prefix: str = "") -> tuple[str, str] | None:
    """The first field of `obj` (nested ones included) off its type or range: (path, reason)."""
    for f, tp in param_fields(type(obj)):
        value = getattr(obj, f.name)
        err = _field_error(value, f, tp)
        if err:
            return prefix + f.name, err
        if dataclasses.is_dataclass(value):
            nested = invalid_field(value, prefix + f.name + ".")
            if nested:
                return nested
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if dataclasses.is_dataclass(item):
                    nested = invalid_field(item, f"{prefix}{f.name}[{i}].")
                    if nested:
                        return nested
    return None


def structural_change(current: Any, proposed: Any) -> str | None:
    """The first structural field whose value differs between the two objects, if any."""
    for f, _ in param_fields(type(current)):
        if f.metadata.get("structural") and getattr(proposed, f.name) != getattr(current, f.name):
            return f.name
    return None


def _coerce(value: Any, tp: Any, current: Any = None) -> Any:
    """Bring wire-friendly values (enum values, dicts) to the declared field type, if possible.

    A mapping for a nested dataclass field changes only the fields it names in `current`.
    """
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum) and not isinstance(value, tp):
            try:
                return tp(value)
            except ValueError:
                return value
        if dataclasses.is_dataclass(tp) and isinstance(value, Mapping):
            base = current if isinstance(current, tp) else None
            return params_from_mapping(tp, value, base=base)
    if typing.get_origin(tp) is list and isinstance(value, list | tuple):
        (item_tp,) = typing.get_args(tp)
        return [_coerce(v, item_tp) for v in value]
    return value


def params_from_mapping(cls: type[Any], values: Mapping[str, Any], base: Any = None) -> Any:
    """Build a `cls` from a mapping (unknown keys are errors), starting from `base` if given."""
    known = {f.name: tp for f, tp in param_fields(cls)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise InvalidParamValue(f"{cls.__name__} has no field(s) {unknown}")
    obj = copy.deepcopy(base) if base is not None else cls()
    for key, value in values.items():
        setattr(obj, key, _coerce(value, known[key], getattr(obj, key)))
    return obj


def params_to_mapping(params: Any) -> dict[str, Any]:
    """A plain-data copy of params (enums as their values), for the wire and for logs."""

    def plain(v: Any) -> Any:
        if isinstance(v, enum.Enum):
            return v.value
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            return {f.name: plain(getattr(v, f.name)) for f in dataclasses.fields(v)}
        if isinstance(v, list | tuple):
            return [plain(x) for x in v]
        return v

    return typing.cast("dict[str, Any]", plain(params))
