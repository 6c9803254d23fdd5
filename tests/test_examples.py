"""The programs in examples/ run as a newcomer would run them, and say what they show.

Each runs as a subprocess from a folder of its own (only the installed package), on the mock
model; the shopkeeper also on the real default model (`--real`: short, greedy replies); the
durable one twice in a row; the wire client against a `python -m turnloom serve --mock`
started on a free loopback port.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme import mock_server

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples"

#: Every example, and lines its output must hold.
EXPECTED = {
    "shopkeeper.py": [
        "[paused at 'listen', next: 'answer']",
        "Mira: Swords are 40 gold; 30 for you.   (success)",
        "Mira: Sorry, the shop is closed.   (success)",
    ],
    "tool_call.py": [
        "[the model calls check_stock({'item': 'sword'})]",
        "Mira: I have three steel swords, 40 gold each.",
        "[the tool's result the model saw: 'no shields left']",
    ],
    "asyncio_npc.py": [
        "Guard: Halt! The gate opens at dawn.",
        "Smith: Bring me iron and I will forge you a blade.",
    ],
    "durable.py": [
        "session 1: Mira is paused at 'listen'; the game quits",
        "session 2: found 'mira', agent 1",
        "session 2: Mira: You said: Do you sell swords?",
        "restored: Mira: You said: Thanks, bye!",
    ],
    "wire_client.py": [
        "[paused at 'listen' on the server]",
        "Mira: You said: Do you sell swords?   (success)",
        "[refused as expected: 3012 AgentNotPaused]",
    ],
}


def run(name: str, *args: str, cwd: Path) -> str:
    """The example's stdout; it must exit 0."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"examples/{name} {' '.join(args)} failed:\n{done.stderr}"
    return done.stdout


def assert_says(out: str, lines: list[str]) -> None:
    for line in lines:
        assert line in out, f"{line!r} not in:\n{out}"


def test_every_example_is_tested_and_says_what_it_shows() -> None:
    assert sorted(path.name for path in EXAMPLES.glob("*.py")) == sorted(EXPECTED)
    for name in EXPECTED:
        docstring = ast.get_docstring(ast.parse((EXAMPLES / name).read_text(encoding="utf-8")))
        assert docstring and "Shows:" in docstring, f"examples/{name}: no docstring saying so"
        assert f"examples/{name}" in docstring, f"examples/{name}: how to run it"


@pytest.mark.parametrize("name", ["shopkeeper.py", "tool_call.py", "asyncio_npc.py"])
def test_example_runs_on_the_mock_model(name: str, tmp_path: Path) -> None:
    assert_says(run(name, cwd=tmp_path), EXPECTED[name])


def test_durable_example_runs_twice_in_a_row(tmp_path: Path) -> None:
    first = run("durable.py", cwd=tmp_path)
    second = run("durable.py", cwd=tmp_path)
    assert_says(first, EXPECTED["durable.py"])
    assert first == second  # nothing of the first run is left to change the second
    assert list(tmp_path.iterdir()) == []  # its store lived in a temporary folder


def test_wire_client_example_talks_to_serve_mock(tmp_path: Path) -> None:
    with mock_server() as port:
        out = run("wire_client.py", "127.0.0.1", str(port), cwd=tmp_path)
    assert_says(out, [f"connected to 127.0.0.1:{port}; models: mock", *EXPECTED["wire_client.py"]])


def test_shopkeeper_runs_on_the_real_default_model(tmp_path: Path) -> None:
    out = run("shopkeeper.py", "--real", cwd=tmp_path)
    assert_says(out, ["[paused at 'listen', next: 'answer']", "Mira: Sorry, the shop is closed."])
    replies = [line for line in out.splitlines() if line.startswith("Mira: ")]
    assert len(replies) == 2 and all(line.endswith("(success)") for line in replies), out
