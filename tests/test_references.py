"""Pointers into the docs resolve, and nothing cites a contract the repository does not hold.

Comments, docstrings, tests and docs point at the reference pages with `docs/<page>.md#<anchor>`
(or, inside Markdown, a relative link): the page must exist and the anchor must be the slug of
one of its headings, as Python-Markdown's toc extension makes it. Requirement ids and section
signs of an outside contract are not allowed anywhere: say the rule, or point at its page.
"""

from __future__ import annotations

import re
import subprocess
import unicodedata
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Built from pieces, so that this file does not match itself.
FORBIDDEN = re.compile(
    r"\bR" + "-" + r"[A-Z]+[0-9]+\b" + "|" + "SP" + "EC" + "|" + "\N{SECTION SIGN}"
)
#: `docs/<path>.md#<anchor>`, anywhere in a text file (paths are from the repository's root).
POINTER = re.compile(r"\bdocs/([\w./-]+?\.md)#([\w-]+)")
#: `docs/<path>.md`, with or without an anchor.
DOC_PATH = re.compile(r"\bdocs/[\w./-]*?\w\.md\b")
#: A Markdown link to a local page or anchor: `](page.md#anchor)`, `](#anchor)`.
MARKDOWN_LINK = re.compile(r"\]\((?!\w+://)([^)\s#]*\.md)?(?:#([^)\s]+))?\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
FENCE = re.compile(r"^[ \t]*(```|~~~)")


def slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension gives a heading (its default `slugify`),
    after the inline Markdown that renders to nothing is taken away."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "").replace("*", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors_of(text: str) -> set[str]:
    """The anchors of a Markdown text's headings (outside code blocks), numbered as the toc
    extension numbers repeats (`name`, `name_1`, …)."""
    found: set[str] = set()
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match is None:
            continue
        anchor = base = slug(match.group(2))
        count = 0
        while anchor in found:
            count += 1
            anchor = f"{base}_{count}"
        found.add(anchor)
    return found


@cache
def page_anchors(path: Path) -> frozenset[str] | None:
    """The anchors of the page at `path`, or None when there is no such page."""
    if not path.is_file():
        return None
    return frozenset(anchors_of(path.read_text(encoding="utf-8")))


def _git_files(*args: str) -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", *args], cwd=REPO, capture_output=True, check=True
    ).stdout
    return [name for name in out.decode("utf-8").split("\0") if name]


def text_files() -> Iterator[tuple[str, str]]:
    """(path, text) of every file git tracks, and of every untracked file it does not ignore."""
    names = sorted(set(_git_files()) | set(_git_files("--others", "--exclude-standard")))
    for name in names:
        path = REPO / name
        if name.startswith(".git/") or not path.is_file():
            continue  # deleted in the work tree
        data = path.read_bytes()
        if b"\0" in data:
            continue
        try:
            yield name, data.decode("utf-8")
        except UnicodeDecodeError:
            continue


def pointer_errors(name: str, text: str, root: Path = REPO) -> list[str]:
    """What is wrong with the pointers into the docs that the file `name` holds."""
    errors = []
    for match in DOC_PATH.finditer(text):
        if not (root / match.group(0)).is_file():
            errors.append(f"{name}: {match.group(0)} does not exist")
    for match in POINTER.finditer(text):
        page, anchor = root / "docs" / match.group(1), match.group(2)
        anchors = page_anchors(page)
        if anchors is not None and anchor not in anchors:
            errors.append(f"{name}: {match.group(0)}: no heading has the anchor #{anchor}")
    if name.endswith(".md"):
        here = (root / name).parent
        for match in MARKDOWN_LINK.finditer(text):
            target, anchor = match.group(1), match.group(2)
            page = (here / target).resolve() if target else root / name
            anchors = page_anchors(page)
            if anchors is None:
                errors.append(f"{name}: link to {target}, which does not exist")
            elif anchor is not None and anchor not in anchors:
                errors.append(f"{name}: link to {target or ''}#{anchor}: no such heading")
    return errors


def test_no_file_cites_an_outside_contract() -> None:
    found = [
        f"{name}:{text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}"
        for name, text in text_files()
        for match in FORBIDDEN.finditer(text)
    ]
    assert not found, "say the rule or point at its reference page:\n" + "\n".join(found)


def test_every_pointer_into_the_docs_resolves() -> None:
    errors = [error for name, text in text_files() for error in pointer_errors(name, text)]
    assert not errors, "\n".join(errors)


def test_the_reference_index_lists_every_page() -> None:
    index = (REPO / "docs" / "reference" / "index.md").read_text(encoding="utf-8")
    for page in sorted((REPO / "docs" / "reference").glob("*.md")):
        if page.name != "index.md":
            assert f"]({page.name})" in index, page.name


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Pause timeout", "pause-timeout"),
        (
            "2.1 Durable agents: agents that outlive a connection",
            "21-durable-agents-agents-that-outlive-a-connection",
        ),
        (
            "`register_tool` and `retry_paused_tool_batch()`",
            "register_tool-and-retry_paused_tool_batch",
        ),
        ("Operations \N{MULTIPLICATION SIGN} states", "operations-states"),
        ("A [linked](x.md) — heading", "a-linked-heading"),
    ],
)
def test_slugs_are_python_markdowns(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


def test_the_checks_catch_bad_pointers(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("# Page\n\n## Pause timeout\n\n```\n## Not a heading\n```\n")
    prefix = "do" + "cs/"  # pieces again: this file is scanned too
    good = f"see {prefix}page.md#pause-timeout and [it](page.md#pause-timeout)"
    other = prefix + "other.md"
    assert pointer_errors(other, good, tmp_path) == []
    for bad in (
        f"see {prefix}page.md#pause-timeouts",
        f"see {prefix}page.md#not-a-heading",
        f"see {prefix}gone.md#pause-timeout",
        f"see {prefix}gone.md",
        "see [it](page.md#no-such-heading)",
        "see [it](gone.md)",
    ):
        assert pointer_errors(other, bad, tmp_path), bad
    assert FORBIDDEN.search("as R" + "-P5 says")
    assert FORBIDDEN.search("SP" + "EC")
    assert FORBIDDEN.search("\N{SECTION SIGN}3")
    assert not FORBIDDEN.search("R-1, R&D, spec, inspect")
