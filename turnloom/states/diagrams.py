"""Diagrams of the turn machine, generated from the transition table (R-V1).

A separate `GraphMachine` is built from the same table each time; Mermaid needs no system binary
and DOT comes from the graphviz engine's `.source`, so output is deterministic text.
"""

from __future__ import annotations

from typing import Literal

from transitions.extensions import GraphMachine

from .machine import STATE_NAMES, transition_specs
from .table import INITIAL_STATE


def _machine(engine: Literal["graphviz", "mermaid"]) -> GraphMachine:
    return GraphMachine(
        states=STATE_NAMES,
        transitions=transition_specs(),
        initial=INITIAL_STATE.value,
        auto_transitions=False,
        graph_engine=engine,
        title="Turn",
        show_conditions=True,
    )


def turn_machine_mermaid() -> str:
    """The turn machine as a Mermaid state diagram."""
    return str(_machine("mermaid").get_graph().draw(None)).rstrip("\n") + "\n"


def turn_machine_dot() -> str:
    """The turn machine as Graphviz DOT source."""
    return str(_machine("graphviz").get_graph().source).rstrip("\n") + "\n"
