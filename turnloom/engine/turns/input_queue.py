"""The messages a busy agent keeps under the `enqueue` input policy (and the one an `interrupt`
or `merge` starts once the open turn is cancelled), and the check of a policy value."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from ...states import InputPolicy
from ..support.guards import brief
from ..support.rejections import AgentDestroyed, InvalidParamValue
from .results import MessageFate, Step

#: The policies by value, for the check.
_POLICIES = ", ".join(policy.value for policy in InputPolicy)


@dataclass(slots=True)
class WaitingMessage:
    """A message waiting for the agent's open turn to end."""

    text: str
    #: The host's future for the message's first step (None over the wire: events tell).
    waiter: asyncio.Future[Step] | None
    #: How the message reports when its turn starts: started (queued), interrupted, merged.
    fate: MessageFate = MessageFate.STARTED
    #: The turn an interrupt or merge cancelled.
    replaced: int = 0

    def drop(self, agent_id: int) -> None:
        """The agent is gone: the host waiting on this message hears it as 3002."""
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(
                AgentDestroyed(
                    f"agent {agent_id} was destroyed while the message {brief(self.text)} "
                    "waited in its queue: it never ran"
                )
            )


def checked_policy(policy: object, context: str) -> InputPolicy:
    """`policy` as an `InputPolicy`, or 3007 naming the values."""
    try:
        return InputPolicy(policy)  # type: ignore[arg-type]  # anything: refused below
    except ValueError:
        raise InvalidParamValue(
            f"{context}: input policy {brief(policy)} is not one of {_POLICIES}"
        ) from None
