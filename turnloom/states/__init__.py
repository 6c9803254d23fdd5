"""The turn state machine: transition table, shared runtime machine, rejections, diagrams.

This layer knows nothing of nodes, models or sockets.
"""

from .machine import MACHINE, fire, is_legal
from .rejections import IllegalTransition, Rejection
from .table import (
    INITIAL_STATE,
    OPEN_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    Transition,
    Trigger,
    TurnState,
    legal_sources,
)

__all__ = [
    "INITIAL_STATE",
    "MACHINE",
    "OPEN_STATES",
    "TERMINAL_STATES",
    "TRANSITIONS",
    "IllegalTransition",
    "Rejection",
    "Transition",
    "Trigger",
    "TurnState",
    "fire",
    "is_legal",
    "legal_sources",
]
