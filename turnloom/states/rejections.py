"""Rejections: operations refused because of the state they were attempted in.

A rejection never changes anything (docs/reference/turns.md#rejections). The protocol layer
owns the one table that maps each rejection to a wire error code; this layer only says what was
refused and why.
"""

from __future__ import annotations


class Rejection(Exception):
    """An operation was refused; nothing changed. `message` says what, where and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class IllegalTransition(Rejection):
    """A trigger was fired in a state where the transition table has no row for it."""

    def __init__(self, trigger: str, state: str, context: str = "") -> None:
        where = f"{context}: " if context else ""
        super().__init__(f"{where}can't {trigger} when turn is {state}")
        self.trigger = trigger
        self.state = state
