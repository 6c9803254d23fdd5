"""Save slots and forks: what the engine checks before it writes or reads a slot, and the
lineage a loaded or forked agent records (docs/reference/durability.md#save-slots)."""

from __future__ import annotations

from typing import Any

from ..support.guards import brief
from ..support.rejections import InvalidParamValue
from .restore import MAX_LINEAGE, SnapshotPlan
from .store.base import Store
from .store.slots import SlotShelf

#: The longest slot name.
MAX_SLOT_CHARS = 128


def checked_slot(slot: Any, operation: str) -> str:
    """`slot` if it is a slot name (a non-empty string of at most `MAX_SLOT_CHARS`, of text a
    store can write), else 3007. A Python string may hold a lone surrogate ("\\ud800"), which
    no UTF-8 encoder (SQLite's, Redis's) takes."""
    if not isinstance(slot, str) or not 1 <= len(slot) <= MAX_SLOT_CHARS:
        raise InvalidParamValue(
            f"{operation}: a slot name must be a string of 1 … {MAX_SLOT_CHARS} characters, "
            f"got {brief(slot)}"
        )
    if not slot.isascii():
        try:
            slot.encode()
        except UnicodeEncodeError as exc:
            raise InvalidParamValue(
                f"{operation}: a slot name must be valid Unicode text, got {brief(slot)} "
                f"(a lone surrogate at index {exc.start})"
            ) from None
    return slot


def shelf_of(store: Store | None, operation: str) -> SlotShelf:
    """The engine's store as a keeper of slots, or 3007 saying what is missing."""
    if store is None:
        raise InvalidParamValue(
            f"{operation}: save slots are kept in the engine's store, and this engine has none "
            "(Engine(..., store=PATH))"
        )
    if not isinstance(store, SlotShelf):
        raise InvalidParamValue(
            f"{operation}: the store {type(store).__name__} keeps no save slots (it does not "
            "implement SlotShelf)"
        )
    return store


def descend(plan: SnapshotPlan, slot: str, now: float) -> None:
    """Record in `plan` the agent it came from (and through which slot, '' for a fork)."""
    step = {"agent_id": plan.agent_id, "slot": slot, "turns": len(plan.dialog), "time": now}
    plan.lineage = (*plan.lineage, step)[-MAX_LINEAGE:]


def keep_time_left(plan: SnapshotPlan, now: float) -> None:
    """A save is a moment of the game: move the paused turn's absolute times by the time the
    slot sat in the store, so its pause has the time it had left when it was saved."""
    if plan.saved_at is None or plan.turn is None:
        return
    shift = now - plan.saved_at
    plan.turn.paused_at += shift
    if plan.turn.deadline is not None:
        plan.turn.deadline += shift
