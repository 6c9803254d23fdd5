"""Diagrams of the turn machine, drawn from the transition table
(docs/reference/logging.md#turn-machine-diagrams).

Drawn here from `TRANSITIONS` rather than by transitions' `GraphMachine`: its drawings style the
initial state as the "current" one (filled red), mark no final state in a flat machine, drop
the Mermaid title's `title:` key and print guards as raw attribute names. The table is the same
one the runtime machine is built from, so the drawings cannot drift from the behaviour, and the
output is deterministic text that the committed files are compared with byte for byte.
"""

from __future__ import annotations

from collections import defaultdict

import graphviz

from .table import INITIAL_STATE, OPERATION_TRIGGERS, TERMINAL_STATES, TRANSITIONS, TurnState

#: The diagrams' title.
TITLE = "Turn states"

#: The legend under the DOT drawing (Mermaid's stateDiagram has no free text outside notes).
LEGEND = (
    "edges: trigger (host operation that fires it) [guard]   "
    "double circle: terminal, the turn has ended   "
    "dot: where every turn starts"
)

# Triggers named after a host operation read better with it: `start` is `send_message`.
_OPERATION_OF = {trigger: op for op, trigger in OPERATION_TRIGGERS.items() if op != trigger}


def guard_text(condition: str) -> str:
    """A row's condition as words: 'has_timeout_exit' -> 'has timeout exit', and its negation
    '!has_timeout_exit' -> 'no timeout exit'."""
    negated = condition.startswith("!")
    words = condition.lstrip("!").replace("_", " ")
    if not negated:
        return words
    return "no " + words.removeprefix("has ") if words.startswith("has ") else "not " + words


def _edge_labels() -> dict[tuple[TurnState, TurnState], list[str]]:
    """The label of every (source, dest) pair: one line per trigger, in table order."""
    labels: dict[tuple[TurnState, TurnState], list[str]] = defaultdict(list)
    for row in TRANSITIONS:
        text = row.trigger.value
        if row.trigger in _OPERATION_OF:
            text += f" ({_OPERATION_OF[row.trigger]})"
        if row.condition is not None:
            text += f" [{guard_text(row.condition)}]"
        for source in row.sources:
            labels[source, row.dest].append(text)
    return labels


def turn_machine_mermaid() -> str:
    """The turn machine as a Mermaid state diagram: `[*] -->` the initial state, terminal
    states `--> [*]`."""
    lines = ["---", f"title: {TITLE}", "---", "stateDiagram-v2", "  direction LR"]
    lines.append(f"  [*] --> {INITIAL_STATE.value}")
    for (source, dest), labels in _edge_labels().items():
        lines.append(f"  {source.value} --> {dest.value}: {', '.join(labels)}")
    for state in TurnState:
        if state in TERMINAL_STATES:
            lines.append(f"  {state.value} --> [*]")
    return "\n".join(lines) + "\n"


def turn_machine_dot() -> str:
    """The turn machine as Graphviz DOT source: terminal states as double circles, a legend."""
    dot = graphviz.Digraph(
        "turn",
        graph_attr={
            "rankdir": "LR",
            "label": f"{TITLE}\\n{LEGEND}",
            "labelloc": "t",
            "fontname": "Helvetica",
        },
        node_attr={"fontname": "Helvetica"},
        edge_attr={"fontname": "Helvetica", "fontsize": "11"},
    )
    dot.node("__start__", "", shape="point", width="0.2")
    for state in TurnState:
        if state in TERMINAL_STATES:
            dot.node(state.value, shape="doublecircle")
        else:
            dot.node(state.value, shape="box", style="rounded")
    dot.edge("__start__", INITIAL_STATE.value)
    for (source, dest), labels in _edge_labels().items():
        dot.edge(source.value, dest.value, label="\\n".join(labels))
    return str(dot.source).rstrip("\n") + "\n"
