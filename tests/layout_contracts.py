"""import-linter contract types of this project's own (named in `pyproject.toml`).

`private_names`: a name that starts with an underscore is private to the package its module is
in. A module may import it from a module of its own package, never from another package's.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _source_of(module: str) -> Path | None:
    """The module's file, found without importing anything (the tree may not import at all)."""
    root, *parts = module.split(".")
    spec = importlib.util.find_spec(root)  # a top-level name: found, not imported
    if spec is None or not spec.submodule_search_locations:
        return None
    base = Path(next(iter(spec.submodule_search_locations)), *parts)
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _package_of(module: str, graph: grimp.ImportGraph) -> str:
    """The package a module is in: itself for a package, its parent for a plain module."""
    if graph.find_children(module) or _is_package(module):
        return module
    return module.rpartition(".")[0]


def _is_package(module: str) -> bool:
    path = _source_of(module)
    return path is not None and path.name == "__init__.py"


def private_imports(module: str, graph: grimp.ImportGraph) -> list[tuple[str, str, int]]:
    """(imported module, private name, line) for every private name `module` imports from a
    module of another package."""
    path = _source_of(module)
    if path is None:
        return []
    own_package = _package_of(module, graph)
    base_package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            parts = base_package.split(".")
            kept = parts[: len(parts) - node.level + 1]
            target = ".".join(kept + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target not in graph.modules:
            continue
        for alias in node.names:
            if (
                _is_private(alias.name)
                and f"{target}.{alias.name}" not in graph.modules
                and _package_of(target, graph) != own_package
            ):
                found.append((target, alias.name, node.lineno))
    return found


class PrivateNamesContract(Contract):
    """No module imports a private name (`_x`) from a module of another package."""

    type_name = "private_names"

    #: The packages whose modules are checked (with all their descendants).
    packages = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        modules = sorted(
            m
            for package in self.packages  # type: ignore[attr-defined]
            for m in {package, *graph.find_descendants(package)}
        )
        crossings = [
            (module, target, name, line)
            for module in modules
            for target, name, line in private_imports(module, graph)
        ]
        return ContractCheck(kept=not crossings, metadata={"crossings": crossings})

    def render_broken_contract(self, check: ContractCheck) -> None:
        output.print_error("Private names imported from another package:", bold=False)
        output.new_line()
        for module, target, name, line in check.metadata["crossings"]:
            output.print_error(f"- {module} (l.{line}) imports {target}.{name}", bold=False)
        output.new_line()
