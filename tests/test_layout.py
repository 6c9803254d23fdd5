"""The package's shape (docs/architecture.md): rooms of a dozen modules at most, files short
enough to hold in one's head, and import-linter's contracts (layers, no cycles, no private name
across packages) both kept by the tree and broken by a deliberate violation."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "turnloom"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MAX_LINES = 400
#: A longer file must say why in its docstring, with these words.
LONG_FILE_REASON = "longer than 400 lines because"
#: The most modules a folder may hold, and the engine's own top level.
MAX_MODULES_PER_FOLDER = 12
MAX_ENGINE_TOP_MODULES = 6


def _modules_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if p.name != "__init__.py")


FOLDERS = sorted(
    {p.parent for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts},
)


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda f: str(f.relative_to(ROOT)))
def test_every_folder_is_a_room_of_a_dozen_modules_at_most(folder: Path) -> None:
    modules = _modules_in(folder)
    limit = MAX_ENGINE_TOP_MODULES if folder == PACKAGE / "engine" else MAX_MODULES_PER_FOLDER
    if folder != PACKAGE:  # the package root holds the public faces and the CLI
        assert len(modules) <= limit, f"{folder.relative_to(ROOT)}: {[m.name for m in modules]}"
    if folder != PACKAGE:
        docstring = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        assert docstring, f"{folder.relative_to(ROOT)}/__init__.py says nothing of its room"


@pytest.mark.parametrize(
    "path", sorted(PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(ROOT))
)
def test_files_are_short_or_say_why(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    if lines > MAX_LINES:
        docstring = ast.get_docstring(ast.parse(text)) or ""
        assert LONG_FILE_REASON in " ".join(docstring.split()), (
            f"{path.relative_to(ROOT)} has {lines} lines; split it, or say in its "
            f"docstring why it is {LONG_FILE_REASON} …"
        )


def _lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's contracts (pyproject.toml) over the turnloom package found in `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_tree_keeps_every_import_contract() -> None:
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "4 kept, 0 broken" in done.stdout


#: (file to append to, the line appended, the contract it breaks, whether it breaks that one
#: alone). An upward import between packages also makes a cycle between them, since the upper
#: one imports the lower: it breaks the acyclic contract too.
VIOLATIONS = [
    (
        "engine/support/gil.py",
        "from ..turns import results as _upward",
        "The engine's rooms import only the rooms below them",
        False,
    ),
    (
        "engine/graph/prompt_template.py",
        "from ..tools import families as _upward",
        "The engine's rooms import only the rooms below them",
        False,
    ),
    (
        "states/table.py",
        "from ..engine.support import guards as _upward",
        "turnloom's packages import only the packages below them",
        False,
    ),
    (
        "engine/turns/results.py",
        "from . import agent as _cycle",
        "No import cycles between the modules of one package",
        True,
    ),
    (
        "engine/turns/turn.py",
        "from ..graph.fields import _enum_value",
        "No private name (_x) is imported from another package",
        True,
    ),
]


@pytest.mark.parametrize(
    ("file", "line", "contract", "alone"), VIOLATIONS, ids=[v[0] for v in VIOLATIONS]
)
def test_a_deliberate_violation_breaks_its_contract(
    tmp_path: Path, file: str, line: str, contract: str, alone: bool
) -> None:
    # A copy of the tree, so that the violation never touches the real package.
    shutil.copytree(PACKAGE, tmp_path / "turnloom", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "layout_contracts.py", tmp_path / "tests")
    (tmp_path / "tests" / "__init__.py").touch()
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    target = tmp_path / "turnloom" / file
    target.write_text(target.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")

    done = _lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout
    assert f"{contract} BROKEN" in done.stdout, done.stdout
    if alone:
        assert "3 kept, 1 broken" in done.stdout, done.stdout
