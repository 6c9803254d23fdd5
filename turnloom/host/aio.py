"""The asyncio face of the host API: the engine core runs on the caller's own event loop.

The module is longer than 400 lines because it is the one embedded face: every operation of an
agent and of the engine (turns, params, policies, snapshots, slots) is a thin call onto the core
that maps its rejections to error codes the same way, and the blocking faces wrap exactly this.
"""

from __future__ import annotations

import asyncio
import copy
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, TypeVar

from ..engine.core import EngineCore
from ..engine.durable.migration import Migration
from ..engine.durable.snapshot import AgentSnapshot, take_snapshot
from ..engine.durable.store import Store, open_store
from ..engine.durable.store.slots import SlotInfo
from ..engine.graph.builder import GraphDescription
from ..engine.graph.params import NodeParams
from ..engine.inference.base import ChatMessage, ModelBackend
from ..engine.inference.catalog import DEFAULT_MODEL
from ..engine.inference.info import ModelInfo, model_info
from ..engine.inference.llama import LlamaModel
from ..engine.support.clock import Clock
from ..engine.support.collector import CollectorPause
from ..engine.support.gil import run_switching_often
from ..engine.turns.agent import AgentCore
from ..engine.turns.dialog.messages import dialog_to_messages
from ..engine.turns.param_change import (
    HEAVY,
    commit_params,
    current_params,
    graph_weight,
    node_params,
    params_weight,
    proposed_params,
)
from ..engine.turns.results import Step, ToolResult, TurnResult
from ..engine.turns.runtime import EngineSettings
from ..engine.turns.turn import Turn
from ..protocol.codes import code_for, rejected, too_deep
from ..states import InputPolicy, Rejection
from .api import AsyncAgentAPI, AsyncEngineAPI
from .dispatch import CallbackDispatch
from .observing import ObservedEngine, default_observers

T = TypeVar("T")


def default_models() -> list[ModelBackend]:
    """The models an engine loads when given none: the catalog's default (loaded on first use)."""
    return [LlamaModel.from_catalog(DEFAULT_MODEL)]


async def _step(turn: Turn, future: asyncio.Future[Step]) -> Step:
    """Await a waiter registered on `turn`; a caller that gives up (a timeout) takes it off,
    so polling a paused turn leaves nothing behind and no longer counts as waiting
    (docs/reference/pauses.md#unattended-pause-warning)."""
    try:
        return await future
    except asyncio.CancelledError:
        turn.discard_waiter(future)
        raise


class _ResumeBatch:
    """Resume an agent's paused turn with a batch (the embedded `CallbackDispatch` hook).

    A slotted object rather than a `functools.partial`: one per agent, a quarter the size.
    """

    __slots__ = ("core",)

    def __init__(self, core: AgentCore) -> None:
        self.core = core

    def __call__(self, batch: list[ToolResult]) -> None:
        try:
            self.core.resume("", batch)
        except Rejection as rejection:
            raise rejected("retry_paused_tool_batch", self.core.agent_id, rejection) from None


class AsyncAgent(AsyncAgentAPI):
    """An agent, driven with coroutines on the loop the engine runs on."""

    __slots__ = ("_core", "dispatch")

    def __init__(self, core: AgentCore, dispatch: CallbackDispatch) -> None:
        self._core = core
        self.dispatch = dispatch

    @property
    def agent_id(self) -> int:
        """The engine-wide id of this agent."""
        return self._core.agent_id

    @property
    def last_result(self) -> TurnResult | None:
        """The completion of the agent's last finished turn."""
        return self._core.last_result

    def _do(self, operation: str, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except Rejection as rejection:
            core = self._core
            raise rejected(operation, core.agent_id, rejection, core.runtime.observers) from None
        except RecursionError:
            raise too_deep(operation) from None

    def _waiter(self) -> asyncio.Future[Step]:
        return self._core.runtime.loop.create_future()

    async def send_message(self, text: str) -> Step:
        """Start a turn; return at its first pause or at its completion."""
        # The waiter goes in before the walk starts: a walk that pauses or ends at once (an
        # eager task factory, a callback that cancels) still answers it.
        step = self._waiter()
        # Inline: a walk that pauses or ends without a model does so before this returns.
        turn = self._do("send_message", self._core.send_message, text, step, True)
        if step.done():  # the walk paused or ended inline
            return step.result()
        # `_step`, inline (a durable agent's every rest waits here for its write).
        try:
            return await step
        except asyncio.CancelledError:
            turn.discard_waiter(step)
            raise
        except Rejection as rejection:  # queued, then dropped: the agent was destroyed
            raise rejected("send_message", self._core.agent_id, rejection) from None

    async def set_input_policy(self, policy: InputPolicy | str) -> None:
        """What a message does while a turn is open: `InputPolicy` or its value (3007
        otherwise); at rest only, idle or paused (3004 while a turn runs)."""
        self._do("set_input_policy", self._core.set_input_policy, policy)

    @property
    def input_policy(self) -> InputPolicy:
        """What a message does while a turn is open (`set_input_policy`)."""
        return self._core.input_policy

    async def resume(self, resume_node: str = "", tool_results: Sequence[Any] = ()) -> Step:
        """Resume the paused turn, plainly or jumping to `resume_node`; return at the next step."""
        step = self._waiter()
        turn = self._do("resume", self._core.resume, resume_node, tool_results, step, True)
        if step.done():
            return step.result()
        # `_step`, inline (a durable agent's every rest waits here for its write).
        try:
            return await step
        except asyncio.CancelledError:
            turn.discard_waiter(step)
            raise

    async def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Change a node's mutable params (while idle or paused)."""
        core = self._core
        current = self._do("change_params", current_params, core, node_name)
        check = partial(proposed_params, core.agent_id, node_name, current, params)
        if params_weight(current) <= HEAVY:
            proposed = self._do("change_params", check)
        else:  # a heavy node (up to 150 ms to copy and check): on a worker thread
            proposed = await _off_loop("change_params", core.agent_id, check)
        self._do("change_params", commit_params, core, node_name, current, proposed)

    async def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params."""
        params = self._do("get_params", node_params, self._core, node_name)
        if params_weight(params) <= HEAVY:
            return self._do("get_params", copy.deepcopy, params)
        # Params are replaced on change, never altered: this copy is of what was just read.
        return await _off_loop("get_params", self._core.agent_id, partial(copy.deepcopy, params))

    async def cancel(self) -> bool:
        """Cancel the open turn; False if there was none."""
        return self._do("cancel", self._core.cancel)

    async def destroy(self) -> None:
        """Cancel any open turn and destroy the agent."""
        self._do("destroy", self._core.destroy)

    async def wait(self) -> Step:
        """Wait until the turn is paused or finished (returns at once if it already is)."""
        step = self._do("wait", self._core.wait)
        if step is not None:
            return step
        turn = self._core.turn
        return await _step(turn, turn.add_waiter(self._waiter()))

    async def wait_complete(self) -> TurnResult | None:
        """Wait until the open turn ends, through any pauses; the last result if none is open."""
        while (step := self._do("wait_complete", self._core.wait)) is None or step.paused:
            turn = self._core.turn
            step = await _step(turn, turn.add_waiter(self._waiter()))
            if step.result is not None:
                return step.result
        return step.result

    async def retry_paused_tool_batch(self) -> Step:
        """Resume again with the kept batch; return at the next step."""
        batch = self.dispatch.kept()
        step = self._waiter()
        turn = self._do("retry_paused_tool_batch", self._core.resume, "", batch, step)
        self.dispatch.drop_batch(batch)
        return await _step(turn, step)

    def _snapshot(self) -> AgentSnapshot:
        self._core.check_at_rest("snapshot")
        return take_snapshot(self._core)

    async def snapshot(self) -> AgentSnapshot:
        """The agent as a snapshot: while idle or paused; 3004 while a turn runs,
        3002 once destroyed. `engine.restore(snapshot)` brings it back."""
        return self._do("snapshot", self._snapshot)

    async def save(self, slot: str) -> SlotInfo:
        """Save the agent into the engine store's `slot` (idle or paused, also with tool calls
        pending; 3004 while a turn runs; 3007 without a store). `engine.load(slot)` brings it
        back, `engine.fork(slot)` makes another agent from it
        (docs/reference/durability.md#save-slots)."""
        core = self._core
        engine = core.runtime
        assert isinstance(engine, EngineCore)  # an embedded agent's runtime is its engine
        return self._do("save", engine.save_slot, core, slot)

    @property
    def lineage(self) -> list[dict[str, Any]]:
        """Where the agent came from, oldest first: each load from a slot or fork adds
        {"agent_id", "slot" ('' for a fork), "turns" (its dialog's), "time" (absolute)}."""
        return [dict(step) for step in self._core.lineage]

    @property
    def tags(self) -> Mapping[str, str]:
        """The labels the agent was created with (read-only)."""
        return self._core.tags

    @property
    def dialog(self) -> list[ChatMessage]:
        """The conversation so far as chat messages (a copy; the open turn is not in it)."""
        return dialog_to_messages(self._core.dialog)

    async def get_dialog(self) -> list[ChatMessage]:
        """`dialog`, as the other faces ask for it."""
        return self.dialog


class AsyncEngine(ObservedEngine, AsyncEngineAPI):
    """An embedded engine on the running asyncio loop: `async with AsyncEngine() as engine:`."""

    def __init__(
        self,
        models: ModelBackend | Iterable[ModelBackend] | None = None,
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
        store: str | os.PathLike[str] | Store | None = None,
        load_stored: bool = True,
    ) -> None:
        """`store`: where durable agents are written (a path, a `redis://` URL or a `Store`);
        `load_stored`: bring every stored agent back at start (False: each is loaded when
        asked for by `agent(id)`, which a shared store's workers prefer)."""
        if isinstance(models, ModelBackend):
            models = [models]
        try:
            opened = None if store is None else open_store(store)
        except Rejection as rejection:  # a file that is not a store: 3007 naming it
            raise rejected("open store", None, rejection) from None
        self.core = EngineCore(
            default_models() if models is None else models,
            clock=clock,
            settings=settings,
            error_code_of=lambda exc: int(code_for(exc)),
            store=opened,
        )
        self._bound = False
        self._load_stored = load_stored
        self._inspectors = []
        self._resting_observers = []
        self.core.observers.extend(default_observers())

    def _bind(self) -> None:
        if not self._bound:
            self.core.bind(asyncio.get_running_loop())
            self._bound = True
            # The stored agents come back as soon as there is a loop for their timers (their
            # faces are made when asked for, by `agent`).
            if self._load_stored:
                self.core.restore_stored(CallbackDispatch)

    def _make(self, operation: str, make: Callable[[CallbackDispatch], AgentCore]) -> AsyncAgent:
        self._bind()
        dispatch = CallbackDispatch()
        try:
            core = make(dispatch)
        except Rejection as rejection:
            raise rejected(operation, None, rejection, self.core.observers) from None
        except RecursionError:
            raise too_deep(operation) from None
        return _face(core)

    async def __aenter__(self) -> AsyncEngine:
        self._bind()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    @property
    def models(self) -> Mapping[str, ModelBackend]:
        """The loaded models by name."""
        return self.core.models

    async def create_agent(
        self,
        graph: GraphDescription,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
        dialog: Sequence[ChatMessage] | None = None,
        tags: Mapping[str, str] | None = None,
        durable: bool | None = None,
        input_policy: InputPolicy | str = InputPolicy.REJECT,
    ) -> AsyncAgent:
        """Validate `graph` and create an agent over it; `dialog` (chat messages, starting with
        the user's) seeds its conversation, `tags` label it (kept in snapshots and the store).
        With a store, `durable=False` keeps this agent in memory only. `input_policy`: what a
        message does while a turn is open (docs/reference/turns.md#input-policies)."""
        self._bind()
        prepare = partial(
            self.core.prepare_agent,
            graph,
            max_steps_per_turn=max_steps_per_turn,
            dialog=dialog,
            tags=tags,
            durable=durable,
            input_policy=input_policy,
        )
        # Hundreds of tools or lines (up to 500 ms to check and compile): on a worker thread,
        # so that the loop goes on serving every other agent meanwhile.
        plan = None
        if graph_weight(graph) > HEAVY:
            plan = await _off_loop("create_agent", None, prepare)
        return self._make(
            "create_agent",
            lambda dispatch: self.core.create_prepared(
                prepare() if plan is None else plan, dispatch, enable_diagnostics=enable_diagnostics
            ),
        )

    async def restore(
        self,
        snapshot: bytes | Mapping[str, Any],
        *,
        durable: bool | None = None,
        graph: GraphDescription | None = None,
        migrate: Migration | None = None,
    ) -> AsyncAgent:
        """An agent from `agent.snapshot()` (or its `to_dict()` form), behaving as the original
        would have; refused with nothing created when the snapshot is cut, foreign, of another
        version, inconsistent (3007) or its graph or model does not fit this engine (3003).

        `graph`: restore into this graph (a game's patched one) instead of the snapshot's own:
        the same structure restores as it is; another is 3007 naming both versions unless
        `migrate(document) -> document` carries the snapshot over
        (docs/reference/durability.md#graph-versions)."""
        return self._make(
            "restore",
            lambda dispatch: self.core.restore(
                snapshot, dispatch, durable=durable, graph=graph, migrate=migrate
            ),
        )

    async def load(
        self,
        slot: str,
        *,
        replace: int | None = None,
        graph: GraphDescription | None = None,
        migrate: Migration | None = None,
        durable: bool | None = None,
    ) -> AsyncAgent:
        """An agent from the store's save `slot` (3007 if none): a new one, or with `replace`
        (an agent id) in place of that agent, which is destroyed, under its id. `graph` and
        `migrate` as for `restore`."""
        return self._make(
            "load",
            lambda dispatch: self.core.load_slot(
                slot, dispatch, replace=replace, graph=graph, migrate=migrate, durable=durable
            ),
        )

    async def fork(self, source: AsyncAgent | str, *, durable: bool | None = None) -> AsyncAgent:
        """A new agent that goes on independently from `source`: an agent (idle or paused) or
        a save slot's name (3007 for anything else). Its `lineage` says where it came from."""
        origin = source._core if isinstance(source, AsyncAgent) else source
        return self._make(
            "fork", lambda dispatch: self.core.fork(origin, dispatch, durable=durable)
        )

    async def slots(self, agent_id: int | None = None) -> list[SlotInfo]:
        """The store's save slots (of one agent, or all), newest first (3007 without a store,
        or for an `agent_id` no agent can have). A coroutine, as on a remote engine."""
        self._bind()
        try:
            return self.core.list_slots(agent_id)
        except Rejection as rejection:
            raise rejected("slots", None, rejection) from None

    async def delete_slot(self, slot: str) -> bool:
        """Remove a save slot; False if there was none. A coroutine, as on a remote engine."""
        self._bind()
        try:
            return self.core.delete_slot(slot)
        except Rejection as rejection:
            raise rejected("delete_slot", None, rejection) from None

    def agent(self, agent_id: int) -> AsyncAgent:
        """The live agent with this id, e.g. one restored from the store (3001 if none). With
        a shared store, a stored agent no worker holds is loaded and held by this engine
        (3004 if another worker holds it)."""
        self._bind()
        try:
            core = self.core.agents.get(agent_id)
            if core is None and self.core.leases is not None:
                core = self.core.take(agent_id, CallbackDispatch())
            return _face(core or self.core.agent(agent_id))
        except Rejection as rejection:
            raise rejected("agent", agent_id, rejection) from None

    def agent_ids(self) -> list[int]:
        """The ids of the live agents, ascending (with a store: the restored ones too)."""
        self._bind()
        return sorted(self.core.agents)

    async def list_models(self) -> list[ModelInfo]:
        """The loaded models graphs may name, sorted by name."""
        return [model_info(self.core.models[name]) for name in sorted(self.core.models)]

    async def aclose(self) -> None:
        """Cancel every open turn and destroy every agent (with a store, stored agents stay
        stored as they were last written, for the next engine), and close the store."""
        await self.close_inspectors()
        self.core.close()


async def _off_loop(operation: str, agent_id: int | None, work: Callable[[], T]) -> T:
    """`work()` on a worker thread, its refusals as on the loop. The collector stays off
    meanwhile (a full pass over what the work builds would hold the GIL, so the loop, for
    tens of ms) and the interpreter hands the GIL back often (`engine.gil`)."""
    pause = CollectorPause()
    try:
        return await asyncio.to_thread(run_switching_often, work)
    except Rejection as rejection:
        raise rejected(operation, agent_id, rejection) from None
    except RecursionError:
        raise too_deep(operation) from None
    finally:
        pause.release()


def _face(core: AgentCore) -> AsyncAgent:
    """The coroutine face of an engine agent, over the dispatch it was made with."""
    dispatch = core.listener
    assert isinstance(dispatch, CallbackDispatch)
    dispatch.resume_batch = _ResumeBatch(core)
    return AsyncAgent(core, dispatch)
