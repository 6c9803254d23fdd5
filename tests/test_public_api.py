"""The public API, listed: the names `turnloom`, `turnloom.models` and `turnloom.testing` offer
and, for each class among them, its public members and signatures. A change to any of them
fails here until `tests/data/public_api.txt` is rewritten on purpose:

    .venv/bin/python -m tests.test_public_api > tests/data/public_api.txt
"""

from __future__ import annotations

import enum
import inspect
import re
import types
from pathlib import Path

import turnloom
import turnloom.models
import turnloom.testing

LISTING = Path(__file__).with_name("data") / "public_api.txt"
FACES = (turnloom, turnloom.models, turnloom.testing)


def _signature(obj: object) -> str:
    try:
        text = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(…)"
    return re.sub(r" at 0x[0-9a-f]+", "", text)


def _members(cls: type) -> list[str]:
    lines = []
    if issubclass(cls, enum.Enum):
        return [f"    {m.name} = {m.value!r}" for m in cls]
    for name, value in sorted(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            lines.append(f"    {name} (property)")
        elif callable(value):
            lines.append(f"    {name}{_signature(value)}")
        else:
            lines.append(f"    {name} (attribute)")
    bases = [b for b in cls.__mro__[1:] if b.__module__.startswith("turnloom")]
    if bases:
        lines.insert(0, "    bases: " + ", ".join(b.__name__ for b in bases))
    return lines


def listing() -> str:
    """The public API as text: one block per face, a line per name (a class's members under it)."""
    out: list[str] = []
    for face in FACES:
        out.append(f"[{face.__name__}]")
        for name in face.__all__:
            value = getattr(face, name)
            if isinstance(value, types.ModuleType):
                out.append(f"{name} (module {value.__name__})")
            elif isinstance(value, type):
                out.append(f"{name} (class)")
                out.extend(_members(value))
            elif callable(value):
                out.append(f"{name}{_signature(value)}")
            else:
                out.append(f"{name} = {value!r}")
        out.append("")
    return "\n".join(out)


def test_the_public_api_is_what_is_listed() -> None:
    assert listing() == LISTING.read_text(encoding="utf-8"), (
        "the public API changed; if on purpose, rewrite the listing (see this module's docstring)"
    )


def test_every_public_name_is_documented() -> None:
    undocumented = [
        f"{face.__name__}.{name}"
        for face in FACES
        for name in face.__all__
        if not isinstance(getattr(face, name), str)
        and not (inspect.getdoc(getattr(face, name)) or "").strip()
    ]
    assert not undocumented


if __name__ == "__main__":
    print(listing(), end="")
