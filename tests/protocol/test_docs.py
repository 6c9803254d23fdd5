"""docs/protocol.md stays complete: every request, field, frame, code and param is in it."""

from __future__ import annotations

import dataclasses
import enum
import typing
from pathlib import Path
from typing import Any

import pytest

import turnloom as tl
from turnloom.engine.graph.fields import param_fields
from turnloom.engine.params_doc import DOCUMENTED
from turnloom.protocol.messages import REQUESTS, SERVER_FRAMES

DOC = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text(encoding="utf-8")


def type_name(tp: Any) -> str:
    if typing.get_origin(tp) is list:
        (item,) = typing.get_args(tp)
        return f"array of {type_name(item)}"
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "str: " + " / ".join(f"`{m.value}`" for m in tp)
    if dataclasses.is_dataclass(tp):
        return f"map ({tp.__name__})"
    return {str: "str", int: "int", float: "float", bool: "bool"}[tp]


def default_of(field: dataclasses.Field[Any]) -> str:
    value = field.default if field.default is not dataclasses.MISSING else field.default_factory()
    if isinstance(value, enum.Enum):
        value = value.value
    if dataclasses.is_dataclass(value):
        return "defaults"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value!r}`".replace("'", '"')


def row(field: dataclasses.Field[Any], tp: Any) -> str:
    """The documentation row of one param field, from the field's own metadata."""
    meta = field.metadata
    notes = []
    if meta.get("min") is not None:
        notes.append(f">= {meta['min']}")
    if meta.get("max") is not None:
        notes.append(f"<= {meta['max']}")
    if meta.get("min_len") is not None:
        notes.append(f"at least {meta['min_len']} item(s)")
    if meta.get("max_len") is not None:
        notes.append(f"at most {meta['max_len']} item(s)")
    if meta.get("doc"):
        notes.append(meta["doc"])
    structural = "yes" if meta.get("structural") else "no"
    return (
        f"| `{field.name}` | {type_name(tp)} | {default_of(field)} | {structural} | "
        f"{'; '.join(notes)} |"
    )


#: The node params and their parts (EngineSettings is not on the wire).
PARAM_CLASSES = [cls for cls in DOCUMENTED if cls is not tl.EngineSettings]


@pytest.mark.parametrize("cls", PARAM_CLASSES, ids=lambda c: c.__name__)
def test_every_param_field_is_documented_as_it_is_declared(cls: type) -> None:
    for field, tp in param_fields(cls):
        assert row(field, tp).rstrip(" |") in DOC, f"{cls.__name__}.{field.name}: {row(field, tp)}"


def test_every_request_and_its_fields_are_documented() -> None:
    for kind, fields in REQUESTS.items():
        assert f"### {kind}" in DOC, kind
        section = DOC.split(f"### {kind}", 1)[1].split("###", 1)[0]
        for field in fields:
            assert f"| `{field.name}` |" in section, (kind, field.name)


def test_every_server_frame_and_error_code_is_documented() -> None:
    for kind in SERVER_FRAMES:
        assert f"`{kind}`" in DOC, kind
    for code in tl.ErrorCode:
        assert f"| {int(code)} | {code.name} |" in DOC, code
