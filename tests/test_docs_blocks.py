"""Every Python block of every docs page runs as pasted, as the README's do.

The pages under docs/ are read with tests/test_readme.py's machinery and the same
`<!-- readme-test: ... -->` markers: each program runs in a fresh interpreter from a folder of
its own, twice in a row (what the first run left there must not break the second), a
`server PORT` block against a `serve --mock` started for it, a `gguf PATH` block on the default
model's file. A `fragment` block, a piece of a program that names what the page defined
elsewhere or needs a service that is not there, is compiled but not run.
"""

from __future__ import annotations

import subprocess
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest

from tests.test_readme import (
    README,
    REPO,
    Block,
    blocks_of,
    mock_server,
    prepared,
    programs_of,
)

DOCS = REPO / "docs"


def pages() -> list[Path]:
    """Every Markdown page of the docs site (docs/**/*.md), in a stable order."""
    return sorted(path for path in DOCS.rglob("*.md") if "_hooks" not in path.parts)


def _programs() -> list[tuple[str, Block]]:
    found = []
    for page in pages():
        name = page.relative_to(REPO).as_posix()
        for program in programs_of(blocks_of(page.read_text(encoding="utf-8"))):
            found.append((name, program))
    return found


PROGRAMS = _programs()


def _runs(name: str, program: Block, cwd: Path) -> None:
    code = prepared(program)
    with mock_server() if "server" in program.marks else nullcontext() as port:
        if port is not None:
            placeholder = program.marks["server"]
            assert placeholder in code, f"{name} line {program.line}: no port {placeholder}"
            code = code.replace(placeholder, str(port))
        script = cwd / "block.py"
        script.write_text(code, encoding="utf-8")
        for run in ("first", "second"):
            done = subprocess.run(
                [sys.executable, str(script)],
                cwd=cwd,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, (
                f"{name}: the block at line {program.line} failed on its {run} run:\n{done.stderr}"
            )


@pytest.mark.parametrize(
    ("name", "program"), PROGRAMS, ids=[f"{name}:line{p.line}" for name, p in PROGRAMS]
)
def test_docs_block_runs_as_pasted_twice_in_a_row(
    name: str, program: Block, tmp_path: Path
) -> None:
    if "fragment" in program.marks:
        compile(program.code, f"{name}:{program.line}", "exec")
        return
    _runs(name, program, tmp_path)


def test_every_python_block_of_the_docs_is_read() -> None:
    total = 0
    for page in pages():
        text = page.read_text(encoding="utf-8")
        assert len(blocks_of(text)) == text.count("```python"), page
        total += text.count("```python")
    # The README's examples moved into these pages: they are still run.
    assert total >= 15
    ran = [program for _, program in PROGRAMS if "fragment" not in program.marks]
    assert len(ran) >= 12


def test_the_readme_has_no_fragments() -> None:
    """A README block is always a whole program: it is what a newcomer pastes first."""
    for block in blocks_of(README.read_text(encoding="utf-8")):
        assert "fragment" not in block.marks, f"README line {block.line}"
