"""Declared dataclass fields: their metadata, one validator that reads it, and plain-data copies.

A field declares through `param()` whether it is structural (fixed once set up) and its range;
`invalid_field` and `structural_change` read that metadata instead of one hand-written check per
field. The mapping helpers bring wire-friendly values to and from the declared types. Nothing
here knows what the dataclasses are for: `params.py` declares the node schemas with it.

Values reach these functions straight from host code and from the wire, so nothing here may
walk a value deeper than its declared type goes: a list nested 5,000 deep in a `str` field must
be refused as "not a str", not crash `repr`, `copy.deepcopy` or an equality test on the way.
Type checks therefore run before anything else looks inside a value, copies follow the declared
types (`Declared.__deepcopy__`), and messages quote values through `brief`.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import math
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from ..support.guards import brief
from ..support.rejections import InvalidParamValue

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
    max_len: int | None = None,
    check: Callable[[Any], str | None] | None = None,
    doc: str = "",
) -> Any:
    """Declare a field: its default, whether it is structural, its range and an extra check.

    `check`'s docstring is the rule as `docs/params.md` states it.
    """
    meta = {
        "structural": structural,
        "min": min,
        "max": max,
        "min_len": min_len,
        "max_len": max_len,
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


def _enum_value(value: Any, tp: Any) -> Any:
    """`value` as a member of the enum `tp` if it is one of its string values, else unchanged."""
    # Only strings are looked up: looking up anything else would hash it, and hashing a tuple
    # nested thousands deep overflows the stack.
    is_enum = isinstance(tp, type) and issubclass(tp, enum.Enum)
    if is_enum and isinstance(value, str) and not isinstance(value, tp):
        try:
            return tp(value)
        except ValueError:
            return value
    return value


def _oversized(value: Any, f: dataclasses.Field[Any] | None) -> bool:
    """Whether `value` is a list longer than field `f` allows: not to be walked, only refused."""
    limit = f.metadata.get("max_len") if f is not None else None
    return limit is not None and isinstance(value, list | tuple) and len(value) > limit


def _copy_value(value: Any, tp: Any, f: dataclasses.Field[Any] | None = None) -> Any:
    if isinstance(value, Declared):
        return copy.deepcopy(value)
    if _oversized(value, f):
        return value  # refused by the validation that follows, in time that does not grow
    if isinstance(value, list) and typing.get_origin(tp) is list:
        (item_tp,) = typing.get_args(tp)
        return [_copy_value(item, item_tp) for item in value]
    # Values of the declared scalar types are immutable. Anything else is off its type, will be
    # refused by the validation that follows every copy, and is never stored; walking it could
    # overflow the stack, so it is passed on as it is.
    return _enum_value(value, tp)


class Declared:
    """Base of the declared dataclasses (node params and their parts).

    Construction turns an enum field's string value into the member ("cycle" into
    `Selection.Cycle`), as the wire does. Deep copies follow the declared field types.
    """

    __slots__ = ()

    def __post_init__(self) -> None:
        for f, tp in param_fields(type(self)):
            setattr(self, f.name, _enum_value(getattr(self, f.name), tp))

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        clone = object.__new__(type(self))  # no __init__: nothing to coerce or warn about twice
        for f, tp in param_fields(type(self)):
            object.__setattr__(clone, f.name, _copy_value(getattr(self, f.name), tp, f))
        return clone


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
        # NaN would slip through every range check (all comparisons with it are false). An int
        # is exact and compares exactly with the bounds; converting a huge one would overflow.
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok or (isinstance(value, float) and math.isfinite(value))
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is type(None):
        ok = value is None
    elif isinstance(tp, type) and issubclass(tp, enum.Enum):
        if isinstance(value, tp):
            return None
        values = [m.value for m in tp]
        shown = brief(value) if isinstance(value, str) else type(value).__name__
        return f"must be one of {values}, got {shown}"
    else:
        ok = isinstance(value, tp)
    return None if ok else f"must be {getattr(tp, '__name__', tp)}, got {type(value).__name__}"


def _range_error(value: Any, f: dataclasses.Field[Any]) -> str | None:
    meta = f.metadata
    if meta.get("min") is not None and value < meta["min"]:
        return f"must be >= {meta['min']}, got {brief(value)}"
    if meta.get("max") is not None and value > meta["max"]:
        return f"must be <= {meta['max']}, got {brief(value)}"
    if meta.get("min_len") is not None and len(value) < meta["min_len"]:
        return f"must have at least {meta['min_len']} item(s), got {len(value)}"
    if meta.get("check") is not None:
        return typing.cast("str | None", meta["check"](value))
    return None


class FieldError(NamedTuple):
    """A field off its type or range: where (dotted path), why, and whether its type is wrong."""

    path: str
    reason: str
    wrong_type: bool


def invalid_field(obj: Any, prefix: str = "") -> FieldError | None:
    """The first field of `obj` (nested ones included) off its type or range.

    Nested objects are checked before their field's own range and `check`, so a check may rely
    on the types of what it inspects (`tools` reads each tool's parameter names).
    """
    for f, tp in param_fields(type(obj)):
        value = getattr(obj, f.name)
        if _oversized(value, f):  # before any item is looked at
            limit = f.metadata["max_len"]
            return FieldError(
                prefix + f.name, f"must have at most {limit} item(s), got {len(value)}", False
            )
        err = _type_error(value, tp)
        if err:
            return FieldError(prefix + f.name, err, True)
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
        err = _range_error(value, f)
        if err:
            return FieldError(prefix + f.name, err, False)
    return None


def structural_change(current: Any, proposed: Any) -> str | None:
    """The first structural field whose value differs between the two objects, if any.

    `current` is valid, so comparing with it stops at its own (bounded) depth.
    """
    for f, _ in param_fields(type(current)):
        if f.metadata.get("structural") and getattr(proposed, f.name) != getattr(current, f.name):
            return f.name
    return None


_WARNED: set[tuple[str, str]] = set()


def warn_deprecated(cls: type, name: str, stacklevel: int) -> None:
    """Warn (once per process and field) that `name` is a deprecated, ignored field of `cls`."""
    if (cls.__name__, name) in _WARNED:
        return
    _WARNED.add((cls.__name__, name))
    reason = getattr(cls, "deprecated_fields", {}).get(name, "")
    warnings.warn(
        f"{cls.__name__}: '{name}' is deprecated and ignored{': ' + reason if reason else ''}",
        DeprecationWarning,
        stacklevel=stacklevel + 1,
    )


def _coerce(
    value: Any, tp: Any, current: Any = None, f: dataclasses.Field[Any] | None = None
) -> Any:
    """Bring wire-friendly values (enum values, dicts) to the declared field type, if possible.

    A mapping for a nested dataclass field changes only the fields it names in `current`. A
    list over its field's `max_len` is left as it is, for the validation to refuse.
    """
    if _oversized(value, f):
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp) and isinstance(value, Mapping):
        base = current if isinstance(current, tp) else None
        return params_from_mapping(tp, value, base=base)
    if typing.get_origin(tp) is list and isinstance(value, list | tuple):
        (item_tp,) = typing.get_args(tp)
        return [_coerce(v, item_tp) for v in value]
    return _enum_value(value, tp)


def params_from_mapping(cls: type[Any], values: Mapping[str, Any], base: Any = None) -> Any:
    """Build a `cls` from a mapping (unknown keys are errors), starting from `base` if given.

    A key `cls.deprecated_fields` names is dropped with a `DeprecationWarning`.
    """
    odd = [k for k in values if not isinstance(k, str)]
    if odd:
        raise InvalidParamValue(
            f"{cls.__name__}: field names must be strings, got {type(odd[0]).__name__}"
        )
    known = {f.name: (f, tp) for f, tp in param_fields(cls)}
    deprecated = getattr(cls, "deprecated_fields", {})
    unknown = sorted(set(values) - set(known) - set(deprecated))
    if unknown:
        raise InvalidParamValue(f"{cls.__name__} has no field(s) {brief(unknown)}")
    obj = copy.deepcopy(base) if base is not None else cls()
    for key, value in values.items():
        if key in deprecated:
            warn_deprecated(cls, key, stacklevel=2)
            continue
        f, tp = known[key]
        setattr(obj, key, _coerce(value, tp, getattr(obj, key), f))
    return obj


def _plain(value: Any, tp: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), ftp) for f, ftp in param_fields(type(value))}
    if isinstance(value, list | tuple) and typing.get_origin(tp) is list:
        (item_tp,) = typing.get_args(tp)
        return [_plain(x, item_tp) for x in value]
    return value  # a scalar, or a value off its declared type, left as it is (not walked)


def params_to_mapping(params: Any) -> dict[str, Any]:
    """A plain-data copy of params (enums as their values), for the wire and for logs."""
    return typing.cast("dict[str, Any]", _plain(params, type(params)))
