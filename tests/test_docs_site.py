"""The docs site builds strictly, its pictures (the turn machine, the demo's agent) are the
current ones, and the changelog's latest release is the package's version.

`make docs` builds the site with `mkdocs build --strict` (and `make test` runs it); the build
here is the same, into a temporary folder, so the suite alone also catches a broken link, an
anchor that is gone, a page left out of the nav or a public name without a docstring.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import turnloom as tl

REPO = Path(__file__).resolve().parents[1]
CHANGELOG = REPO / "CHANGELOG.md"
#: The committed pictures, each drawn from diagrams/NAME.dot.
PICTURES = ("turn_machine", "demo_graph")
#: What `make render-diagrams` writes at the end of an SVG: the sha256 of the DOT it drew.
STAMP = r"<!-- made by make render-diagrams from diagrams/{}\.dot, sha256 ([0-9a-f]{{64}}) -->\s*$"
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.M)


def test_mkdocs_build_strict_passes(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra is not installed")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "api.html").is_file()
    api = (tmp_path / "api.html").read_text(encoding="utf-8")
    for name in ("turnloom.Engine", "turnloom.models.LlamaModel", "turnloom.testing.VirtualClock"):
        assert f'id="{name}"' in api, name


@pytest.mark.parametrize("name", PICTURES)
def test_each_picture_is_drawn_from_the_current_diagram(name: str) -> None:
    svg = REPO / "docs" / "assets" / f"{name}.svg"
    dot = REPO / "diagrams" / f"{name}.dot"
    match = re.search(STAMP.format(name), svg.read_text(encoding="utf-8"))
    assert match, f"{svg.name}: no stamp; run `make render-diagrams`"
    assert match.group(1) == hashlib.sha256(dot.read_bytes()).hexdigest(), (
        f"diagrams/{name}.dot changed since docs/assets/{name}.svg was drawn: "
        "run `make render-diagrams` (needs Graphviz's dot)"
    )


def test_the_changelog_keeps_its_format_and_the_version() -> None:
    text = CHANGELOG.read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n")
    sections = re.findall(r"^## (.+)$", text, re.M)
    assert sections[0] == "[Unreleased]"
    releases = RELEASE.findall(text)
    assert releases, "no release section"
    assert [f"[{v}] - {d}" for v, d in releases] == sections[1:]
    assert releases[0][0] == tl.__version__, "the latest release is the package's version"
    for heading in re.findall(r"^### (.+)$", text, re.M):
        assert heading in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
