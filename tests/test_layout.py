"""The package's shape (DESIGN "Layout"): layers import one way, no cycles, no private names
across packages, and files short enough to hold in one's head."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "turnloom"

#: Lower layers never import higher ones. Modules at the package root (the public surface, the
#: CLI and the demo) sit above everything.
LAYERS = {"states": 0, "engine": 1, "protocol": 2, "host": 3, "server": 4}
TOP = len(LAYERS)
MAX_LINES = 400
#: A longer file must say why in its docstring, with these words.
LONG_FILE_REASON = "longer than 400 lines because"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imports(module: str) -> list[tuple[str, str]]:
    """(imported module, imported name or '') for every turnloom import of `module`."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.append((sub, "") if sub in MODULES else (target, alias.name))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, "") for alias in node.names)
    return [(target, name) for target, name in found if target.split(".")[0] == "turnloom"]


def _layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.get(parts[1], TOP) if len(parts) > 1 else TOP


def _top_package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in LAYERS) else ""


GRAPH = {module: sorted({t for t, _ in _imports(module)}) for module in MODULES}


def test_every_import_target_is_a_module_of_the_package() -> None:
    unknown = {t for targets in GRAPH.values() for t in targets if t not in MODULES}
    assert not unknown


@pytest.mark.parametrize("module", sorted(MODULES))
def test_layers_import_downwards_only(module: str) -> None:
    upward = [t for t in GRAPH[module] if _layer(t) > _layer(module)]
    assert not upward, f"{module} (layer {_layer(module)}) imports higher layers: {upward}"


def test_no_import_cycles() -> None:
    # Modules whose own package imports them are skipped as edges from the package to its
    # parts: `pkg/__init__` re-exporting `pkg.x` while `pkg.x` imports a sibling through `pkg`
    # would be a cycle, and is caught, since both directions are real edges here.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = iter(range(10**6))

    def visit(node: str) -> None:
        index[node] = low[node] = next(counter)
        stack.append(node)
        on_stack.add(node)
        for nxt in GRAPH.get(node, []):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in MODULES:
        if module not in index:
            visit(module)
    assert not cycles


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_private_name_crosses_packages(module: str) -> None:
    crossing = [
        f"{target}.{name}"
        for target, name in _imports(module)
        if name.startswith("_") and _top_package(target) != _top_package(module)
    ]
    assert not crossing, f"{module} imports private names of another package: {crossing}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_files_are_short_or_say_why(module: str) -> None:
    path = MODULES[module]
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    if lines > MAX_LINES:
        docstring = ast.get_docstring(ast.parse(text)) or ""
        assert LONG_FILE_REASON in " ".join(docstring.split()), (
            f"{path.relative_to(PACKAGE.parent)} has {lines} lines; split it, or say in its "
            f"docstring why it is {LONG_FILE_REASON} …"
        )


def test_the_checks_see_a_real_import_graph() -> None:
    # Guards the guards: the walk must find the package's known downward edges.
    assert "turnloom.states" in GRAPH["turnloom.engine.turn"]
    assert "turnloom.engine.agent" in GRAPH["turnloom.engine.core"]
    assert _layer("turnloom.server.session") > _layer("turnloom.host.client")
