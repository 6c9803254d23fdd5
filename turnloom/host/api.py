"""The coroutine agent and engine API that every face offers.

The embedded `AsyncAgent` and the wire client's `RemoteAsyncAgent` both implement
`AsyncAgentAPI`; the blocking `Agent` wraps either one, which is what makes switching between
embedded and remote one line. Callback setters and the tool registry come from
`DispatchFace`, written once for all three.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

from ..engine.durable.snapshot import AgentSnapshot
from ..engine.durable.store.slots import SlotInfo
from ..engine.graph.builder import GraphDescription
from ..engine.graph.params import NodeParams
from ..engine.inference.base import ChatMessage
from ..engine.inference.info import ModelInfo
from ..engine.turns.results import Step, TurnResult
from ..states import InputPolicy
from .dispatch import DispatchFace


class AsyncAgentAPI(DispatchFace, ABC):
    """An agent driven with coroutines on the loop its events arrive on."""

    __slots__ = ()

    #: A durable wire agent's secret for `attach_agent` (None for every other agent).
    resume_token: str | None = None

    @property
    @abstractmethod
    def agent_id(self) -> int:
        """The engine-wide id of this agent."""

    @property
    @abstractmethod
    def last_result(self) -> TurnResult | None:
        """The completion of the agent's last finished turn."""

    @abstractmethod
    async def send_message(self, text: str) -> Step:
        """Start a turn; return at its first pause or at its completion."""

    @abstractmethod
    async def resume(self, resume_node: str = "", tool_results: Sequence[Any] = ()) -> Step:
        """Resume the paused turn, plainly or jumping to `resume_node`; return at the next step."""

    @abstractmethod
    async def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Change a node's mutable params (while idle or paused)."""

    @abstractmethod
    async def save(self, slot: str) -> SlotInfo:
        """Save the agent into the engine store's `slot`, at rest."""

    @abstractmethod
    async def set_input_policy(self, policy: InputPolicy | str) -> None:
        """What a message does while a turn is open (while idle or paused)."""

    @property
    @abstractmethod
    def input_policy(self) -> InputPolicy:
        """What a message does while a turn is open (`set_input_policy`)."""

    @abstractmethod
    async def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params."""

    @abstractmethod
    async def cancel(self) -> bool:
        """Cancel the open turn; False if there was none."""

    @abstractmethod
    async def destroy(self) -> None:
        """Cancel any open turn and destroy the agent."""

    @abstractmethod
    async def wait(self) -> Step:
        """Wait until the turn is paused or finished (returns at once if it already is)."""

    @abstractmethod
    async def wait_complete(self) -> TurnResult | None:
        """Wait until the open turn ends, through any pauses; the last result if none is open."""

    @abstractmethod
    async def retry_paused_tool_batch(self) -> Step:
        """Resume again with the kept batch; return at the next step."""

    # Durability (docs/reference/durability.md): embedded agents only, so far; the wire does not
    # carry these yet.

    @property
    def tags(self) -> Mapping[str, str]:
        """The labels the agent was created with (none over the wire, so far)."""
        return {}

    async def snapshot(self) -> AgentSnapshot:
        """The agent as a snapshot, while idle or paused (3004 while a turn runs)."""
        raise NotImplementedError(f"{type(self).__name__} cannot take snapshots (embedded only)")

    async def get_dialog(self) -> list[ChatMessage]:
        """The conversation so far as chat messages."""
        raise NotImplementedError(f"{type(self).__name__} cannot read its dialog (embedded only)")


class AsyncEngineAPI(ABC):
    """What the blocking engine faces need of an engine: create agents, close."""

    @abstractmethod
    async def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
    ) -> AsyncAgentAPI:
        """Validate `graph` and create an agent over it."""

    @abstractmethod
    async def list_models(self) -> list[ModelInfo]:
        """The models graphs may name, sorted by name."""

    @abstractmethod
    async def aclose(self) -> None:
        """Cancel every open turn and destroy every agent."""
