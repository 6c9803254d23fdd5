"""An MkDocs hook: every public name of the API page has a docstring.

The API page renders the docstrings of `turnloom`, `turnloom.models` and `turnloom.testing`
(the names in their `__all__`), and of the public methods and properties of the classes among
them. mkdocstrings shows an undocumented name as a bare signature without a word; this hook
logs a warning for each, so `mkdocs build --strict` fails instead. It reads the source with
griffe, as mkdocstrings does: nothing is imported.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import griffe

#: The modules the API page documents.
MODULES = ("turnloom", "turnloom.models", "turnloom.testing")

# A logger under "mkdocs", so that --strict counts its warnings.
log = logging.getLogger("mkdocs.hooks.docstrings")


def undocumented(root: Path) -> list[str]:
    """The public names of MODULES, and the public members of their classes, with no docstring."""
    package = griffe.load("turnloom", search_paths=[str(root)], resolve_aliases=True)
    missing: list[str] = []
    for path in MODULES:
        module = package if path == "turnloom" else package[path.removeprefix("turnloom.")]
        for name in sorted(module.exports or ()):
            target = module[name].final_target if module[name].is_alias else module[name]
            if target.is_module or target.is_attribute:
                continue
            if not target.docstring:
                missing.append(f"{path}.{name}")
            if not target.is_class:
                continue
            for member_name, member in target.all_members.items():
                if member_name.startswith("_"):
                    continue
                member = member.final_target if member.is_alias else member
                is_property = member.is_attribute and "property" in member.labels
                if (member.is_function or is_property) and not member.docstring:
                    missing.append(f"{path}.{name}.{member_name}")
    return missing


def on_config(config: Any, **kwargs: Any) -> Any:
    """Warn once for every public name of the API page without a docstring."""
    root = Path(config["config_file_path"]).parent
    for name in undocumented(root):
        log.warning("%s has no docstring: the API page would show it without a word", name)
    return config
