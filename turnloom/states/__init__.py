"""The turn state machine: transition table, shared runtime machine, rejections, diagrams.

This layer knows nothing of nodes, models or sockets, and imports nothing of turnloom.
"""

from .machine import MACHINE, check, fire, is_legal
from .rejections import IllegalTransition, Rejection
from .table import (
    INITIAL_STATE,
    OPEN_STATES,
    OPERATION_TRIGGERS,
    POLICY_TRIGGERS,
    TERMINAL_STATES,
    TRANSITIONS,
    InputPolicy,
    Transition,
    Trigger,
    TurnState,
    legal_sources,
)

__all__ = [
    "INITIAL_STATE",
    "MACHINE",
    "OPEN_STATES",
    "OPERATION_TRIGGERS",
    "POLICY_TRIGGERS",
    "TERMINAL_STATES",
    "TRANSITIONS",
    "IllegalTransition",
    "InputPolicy",
    "Rejection",
    "Transition",
    "Trigger",
    "TurnState",
    "check",
    "fire",
    "is_legal",
    "legal_sources",
]
