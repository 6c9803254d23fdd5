"""The engine's rejections of arguments and of dead agents; each names the operation, the agent
and the node. (Operations refused for the turn's state are `IllegalTransition`s of the turn
machine.) Each class corresponds to exactly one error code; the mapping lives in
`turnloom.protocol.codes`."""

from __future__ import annotations

from collections.abc import Iterable

from ..states import Rejection


class GraphCompilationFailed(Rejection):
    """The graph cannot be turned into an agent (empty, duplicate names, bad start, no model…)."""


class InvalidExitTarget(Rejection):
    """An `*_exit` field names a node that is not in the graph."""


class AgentDestroyed(Rejection):
    """The agent was destroyed; it accepts nothing any more."""


class UnknownAgent(Rejection):
    """No agent has this id."""


class UnknownNode(Rejection):
    """A node name that is not in the agent's graph."""


class ParamNotMutable(Rejection):
    """A change touches a structural field, fixed at agent creation."""


class InvalidParamValue(Rejection):
    """A param value has the wrong type or is out of range."""


class InvalidToolResults(Rejection):
    """A `tool_results` batch does not fit the pending calls of the pause (R-T7)."""

    def __init__(self, reason: str, expected: Iterable[str], received: Iterable[str]) -> None:
        exp, rec = list(expected), list(received)
        super().__init__(f"{reason}; expected call ids {exp}, received {rec}")
        self.expected = exp
        self.received = rec
