"""The engine's rejections of arguments and of dead agents; each names the operation, the agent
and the node. (Operations refused for the turn's state are `IllegalTransition`s of the turn
machine.) Each class corresponds to exactly one error code; the mapping lives in
`turnloom.protocol.codes`."""

from __future__ import annotations

from collections.abc import Iterable

from ...states import Rejection
from .guards import some


class GraphCompilationFailed(Rejection):
    """The graph cannot be turned into an agent (empty, duplicate names, bad start, no model…)."""


class InvalidExitTarget(Rejection):
    """An `*_exit` field names a node that is not in the graph."""


class AgentDestroyed(Rejection):
    """The agent was destroyed; it accepts nothing any more."""


class UnknownAgent(Rejection):
    """No agent has this id."""


class HeldElsewhere(Rejection):
    """Another worker sharing the store holds the agent (a session there has it, or its turn
    is running there); it can be taken once that worker lets it go."""


class QueueFull(Rejection):
    """The agent's queue of waiting messages (`enqueue` input policy) is at its limit."""


class UnknownNode(Rejection):
    """A node name that is not in the agent's graph."""


class ParamNotMutable(Rejection):
    """A change touches a structural field, fixed at agent creation."""


class InvalidParamValue(Rejection):
    """A param value has the wrong type or is out of range."""


class InvalidToolResults(Rejection):
    """A `tool_results` batch does not fit the pending calls of the pause
    (docs/reference/tools.md#tool-results-batches)."""

    def __init__(
        self, reason: str, expected: Iterable[str] = (), received: Iterable[str] | None = None
    ) -> None:
        exp = list(expected)
        rec = None if received is None else list(received)
        # A batch may name thousands of ids: the message lists a bounded number of each.
        listing = "" if rec is None else f"; expected call ids {some(exp)}, received {some(rec)}"
        super().__init__(reason + listing)
        self.expected = exp
        #: The ids the batch named; None when the batch was refused before its ids were read.
        self.received = rec
