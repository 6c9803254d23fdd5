"""Every Python block of README.md runs as pasted, each in a fresh interpreter, and again
right after in the same folder (a reader pastes a block twice: what the first run left there,
a database file say, must not break the second).

A block runs on its own unless an HTML comment right above it says otherwise:

* `<!-- readme-test: continues -->`: it builds on the block before, so the two run as one
  program (chains of any length);
* `<!-- readme-test: gguf PATH -->`: PATH is the reader's own GGUF; the test puts the default
  model's file there (outputs stay short: CI has no GPU);
* `<!-- readme-test: server PORT -->`: the block talks to `python -m turnloom serve --mock`;
  the test starts one on a free port and puts that port where PORT is;
* `<!-- readme-test: fragment -->`: a piece of a program (it names what a page defined
  elsewhere, or needs a service that is not there): only compiled, not run. The docs pages
  use it (tests/test_docs_blocks.py runs their blocks with this machinery); a README block is
  always a whole program.

The first block is also what a newcomer types first, so it must pass `mypy --strict`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
MARKER = re.compile(r"<!--\s*readme-test:\s*(.*?)\s*-->")
MARKS = ("continues", "gguf", "server", "fragment")


@dataclass
class Block:
    """One ```python block: where it starts, its code, and the markers above it."""

    line: int
    code: str
    marks: dict[str, str] = field(default_factory=dict)


def blocks_of(text: str) -> list[Block]:
    """The Python blocks of a Markdown text, with the readme-test markers right above each."""
    found: list[Block] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() != "```python":
            index += 1
            continue
        marks: dict[str, str] = {}
        above = index - 1
        while above >= 0 and (match := MARKER.fullmatch(lines[above].strip())):
            name, _, value = match.group(1).partition(" ")
            if name not in MARKS:
                raise ValueError(f"README line {above + 1}: unknown readme-test marker {name!r}")
            marks[name] = value.strip()
            above -= 1
        end = lines.index("```", index + 1)
        found.append(Block(index + 1, "\n".join(lines[index + 1 : end]) + "\n", marks))
        index = end + 1
    return found


def programs_of(blocks: list[Block]) -> list[Block]:
    """Blocks joined into the programs that run: a `continues` block extends the one before."""
    programs: list[Block] = []
    for block in blocks:
        if "continues" in block.marks:
            if not programs:
                raise ValueError(f"README line {block.line}: nothing before it to continue")
            previous = programs[-1]
            marks = {**previous.marks, **block.marks}
            programs[-1] = Block(previous.line, previous.code + block.code, marks)
        else:
            programs.append(block)
    return programs


BLOCKS = blocks_of(README.read_text(encoding="utf-8"))
PROGRAMS = programs_of(BLOCKS)


@contextmanager
def mock_server() -> Iterator[int]:
    """`python -m turnloom serve --mock` on a free port, as a reader would run it; its port."""
    server = subprocess.Popen(
        [sys.executable, "-m", "turnloom", "serve", "--mock", "--port", "0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        ready = server.stdout.readline()  # the one line it prints once it accepts connections
        match = re.search(r":(\d+)\s*$", ready)
        assert match, f"unexpected first line from serve: {ready!r}"
        yield int(match.group(1))
    finally:
        server.terminate()
        server.wait(timeout=10)


def prepared(program: Block) -> str:
    """The program's code with the reader's placeholders replaced."""
    code = program.code
    if "gguf" in program.marks:
        import turnloom as tl

        placeholder = program.marks["gguf"]
        assert placeholder in code, f"README line {program.line}: no {placeholder!r} in block"
        code = code.replace(placeholder, str(tl.LlamaModel.from_catalog().model_path()))
    return code


@pytest.mark.parametrize("program", PROGRAMS, ids=[f"line{p.line}" for p in PROGRAMS])
def test_readme_block_runs_as_pasted_twice_in_a_row(program: Block, tmp_path: Path) -> None:
    code = prepared(program)
    with mock_server() if "server" in program.marks else _no_server() as port:
        if port is not None:
            placeholder = program.marks["server"]
            assert placeholder in code, f"README line {program.line}: no port {placeholder}"
            code = code.replace(placeholder, str(port))
        script = tmp_path / "block.py"
        script.write_text(code, encoding="utf-8")
        for run in ("first", "second"):
            # From a directory of its own, as a reader's script would run: only the installed
            # package, and (the second time) whatever the first run left there.
            done = subprocess.run(
                [sys.executable, str(script)],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, (
                f"README block at line {program.line} failed on its {run} run:\n{done.stderr}"
            )


@contextmanager
def _no_server() -> Iterator[None]:
    yield None


def test_the_first_block_passes_mypy_strict(tmp_path: Path) -> None:
    script = tmp_path / "first_block.py"
    script.write_text(BLOCKS[0].code, encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            # turnloom's own modules are checked by `make typecheck`; here only the reader's code
            "--follow-imports=silent",
            "--cache-dir",
            str(REPO / ".mypy_cache" / "readme"),
            "--config-file",
            "",
            str(script),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr


SAMPLE = """
```python
a = 1
```

<!-- readme-test: continues -->
```python
b = a + 1
```

<!-- readme-test: server 7411 -->
<!-- readme-test: gguf my.gguf -->
```python
print("x")
```
"""


def test_the_markers_are_read() -> None:
    blocks = blocks_of(SAMPLE)
    assert [b.marks for b in blocks] == [
        {},
        {"continues": ""},
        {"gguf": "my.gguf", "server": "7411"},
    ]
    programs = programs_of(blocks)
    assert [p.code for p in programs] == ["a = 1\nb = a + 1\n", 'print("x")\n']
    with pytest.raises(ValueError, match="unknown readme-test marker"):
        blocks_of("<!-- readme-test: contineus -->\n```python\n```\n")
    with pytest.raises(ValueError, match="nothing before it"):
        programs_of(blocks_of("<!-- readme-test: continues -->\n```python\n```\n"))


def test_every_python_block_is_covered() -> None:
    fences = README.read_text(encoding="utf-8").count("```python")
    assert len(BLOCKS) == fences >= 5
