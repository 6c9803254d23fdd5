"""Agent-graph drawings: pauses and their timeouts, how each exit is taken, jump-only nodes, a
legend (docs/reference/logging.md#graph-diagrams)."""

from __future__ import annotations

import re

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.graph.diagram import LEGEND, draw_graph

LINK = re.compile(r"^  \w+ (-->|--|-\.) ")


def _gate(timeout_ms: int = 250, timeout_exit: str = "late") -> tl.GraphDescription:
    return graph_of(
        (
            "gate",
            tl.PauseParams(
                default_exit="say", pause_timeout_ms=timeout_ms, timeout_exit=timeout_exit
            ),
        ),
        ("say", tl.CannedResponseParams(lines=["x"])),
        ("late", tl.CannedResponseParams(lines=["too late"])),
        ("side", tl.CannedResponseParams(lines=["only by a jump"])),
    )


def test_mermaid_marks_resume_and_timeout_exits_and_the_pause_timeout() -> None:
    text = draw_graph(_gate(), "mermaid", "gatekeeper")
    assert text.startswith("---\ntitle: gatekeeper\nconfig:\n")
    assert "\n---\nflowchart LR\n" in text
    assert 'gate -. "default (on resume)" .-> say' in text
    assert 'gate -. "timeout after 250 ms" .-> late' in text
    assert 'say -- "default" --> __end__' in text
    assert "pauses, times out after 250 ms" in text
    assert "class gate pausing" in text and "class say pausing" not in text


def test_mermaid_colours_exactly_the_timeout_links() -> None:
    lines = draw_graph(_gate(), "mermaid").splitlines()
    links = [line for line in lines if LINK.match(line)]
    styled = next(line for line in lines if line.startswith("  linkStyle"))
    indexes = [int(i) for i in styled.split()[1].split(",")]
    assert [links[i] for i in indexes] == ['  gate -. "timeout after 250 ms" .-> late']


def test_nodes_no_exit_reaches_are_marked_as_jump_targets() -> None:
    mermaid = draw_graph(_gate(), "mermaid")
    assert "class side jumponly" in mermaid
    assert re.search(r'side\[".*\(reached only by a jump\)"\]', mermaid)
    for reached in ("gate", "say", "late"):
        assert f"class {reached} jumponly" not in mermaid
    dot = draw_graph(_gate(), "dot")
    side = next(line for line in dot.splitlines() if line.strip().startswith("side "))
    assert "reached only by a jump" in side and "dotted" in side
    say = next(line for line in dot.splitlines() if line.strip().startswith("say "))
    assert "jump" not in say


def test_a_timeout_that_never_fires_is_not_drawn() -> None:
    text = draw_graph(_gate(timeout_ms=0), "mermaid")
    assert "timeout" not in text.split("legend[")[0]
    assert "pauses, waits for the host" in text
    # ...and `late` is then reached only by a jump.
    assert "class late jumponly" in text


def test_an_empty_timeout_exit_ends_the_turn_timed_out_not_at_end() -> None:
    mermaid = draw_graph(_gate(timeout_exit=""), "mermaid")
    assert 'gate -. "timeout after 250 ms" .-> __timed_out__' in mermaid
    assert "pause_timed_out" in mermaid
    dot = draw_graph(_gate(timeout_exit=""), "dot")
    assert re.search(r"gate -> __timed_out__ \[.*style=dashed", dot)
    # A graph whose pauses never time out has no such node.
    assert "__timed_out__" not in draw_graph(_gate(timeout_ms=0, timeout_exit=""), "dot")


def test_dot_dashes_resume_and_timeout_edges_differently_from_plain_ones() -> None:
    dot = draw_graph(_gate(), "dot")
    assert 'gate -> say [label="default (on resume)" style=dashed]' in dot
    timeout = next(line for line in dot.splitlines() if "gate -> late" in line)
    assert 'label="timeout after 250 ms"' in timeout
    assert "style=dashed" in timeout and "color=firebrick" in timeout
    plain = next(line for line in dot.splitlines() if "say -> __end__" in line)
    assert "dashed" not in plain


def test_both_formats_carry_the_legend() -> None:
    for fmt in ("mermaid", "dot"):
        text = draw_graph(_gate(), fmt)
        for line in LEGEND:
            assert line in text, (fmt, line)
