"""The engine core: the runtime (models, clock, settings, loop) and the agents it hosts.

With a store (docs/reference/durability.md) its agents are `DurableAgentCore`s, written through
to it, and `restore_stored` brings back every stored agent when the engine starts. Without one,
agents are plain `AgentCore`s and nothing here costs a turn anything.

With a shared store the engine is one worker of several: agent ids come from the
store, every durable agent in memory is leased to this worker (`leases.LeaseKeeper`), `take`
claims a stored agent on demand, `evict` lets one go and `adopt_due` restores one whose pause
deadline came while nobody held it.

The module is longer than 400 lines because every way an agent comes into this engine (created,
restored from a snapshot or the store, taken from another worker) must take its id, its store
and its lease by the same rules, and those rules are read best side by side.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..states import InputPolicy, TurnState
from .durable.agent import DurableAgentCore
from .durable.leases import LeaseKeeper
from .durable.migration import Migration, into_graph
from .durable.restore import SnapshotPlan, read_snapshot
from .durable.restore_checks import MAX_STEPS_PER_TURN
from .durable.revive import apply_snapshot, watch_stall
from .durable.saves import checked_slot, descend, keep_time_left, shelf_of
from .durable.snapshot import absolute_offset, pause_deadline, take_snapshot
from .durable.store.base import LARGEST_AGENT_ID, SharedStore, Store
from .durable.store.slots import SlotInfo, SlotShelf, checked_agent_id
from .graph.builder import CompiledGraph, GraphDescription, compile_graph
from .graph.params import NodeParams, ToolCallParams
from .inference.base import ModelBackend
from .support.clock import Clock
from .support.collector import CollectorPause
from .support.guards import brief, some
from .support.logs import get_logger
from .support.rejections import HeldElsewhere, InvalidParamValue, UnknownAgent
from .turns.agent import AgentCore
from .turns.agent_tags import checked_tags
from .turns.dialog.history import check_fits
from .turns.dialog.messages import dialog_from_messages, dialog_to_messages, next_call_seq
from .turns.input_queue import checked_policy
from .turns.observers import tell
from .turns.results import AgentListener
from .turns.runtime import EngineSettings, Runtime

log = get_logger("turnloom.engine")


@dataclass(frozen=True, slots=True)
class AgentPlan:
    """An agent checked and compiled (`EngineCore.prepare_agent`), not yet created."""

    compiled: CompiledGraph
    max_steps_per_turn: int
    #: The seeded conversation (None: none).
    dialog: list[Any] | None
    tags: Mapping[str, str]
    durable: bool
    #: What a message does while the agent's turn is open.
    input_policy: InputPolicy = InputPolicy.REJECT


def _check_target(graph: Any, migrate: Any, operation: str) -> None:
    """3007 unless `graph` is a GraphDescription (or None) and `migrate` a function (or None):
    what a restore or a load into a patched graph is given."""
    if graph is not None and not isinstance(graph, GraphDescription):
        raise InvalidParamValue(
            f"{operation}: graph must be a GraphDescription or None, got {brief(graph)}"
        )
    if migrate is not None and not callable(migrate):
        raise InvalidParamValue(
            f"{operation}: migrate must be a function (document -> document) or None, "
            f"got {brief(migrate)}"
        )


class EngineCore(Runtime):
    """Hosts agents and their models. Every method runs on the engine loop."""

    def __init__(
        self,
        models: Iterable[ModelBackend],
        *,
        clock: Clock | None = None,
        settings: EngineSettings | None = None,
        error_code_of: Callable[[BaseException], int | None] = lambda exc: None,
        store: Store | None = None,
    ) -> None:
        super().__init__(models, clock=clock, settings=settings, error_code_of=error_code_of)
        self.agents: dict[int, AgentCore] = {}
        #: The largest agent id given so far: new ids continue past it, restored ones too.
        self._last_agent_id = 0
        #: Ids of stored agents this engine could not restore: never given to another agent.
        self._held_ids: set[int] = set()
        #: Whether the largest agent id the store names (its slots', and a SQLite store's
        #: agents') is in `_last_agent_id` (`SlotShelf.largest_agent_id`, read once).
        self._slot_ids_read = False
        #: Where agents are written through; None = agents live in memory only.
        self.store = store
        #: With a shared store: this worker's leases (started when the engine gets its loop).
        self.leases = LeaseKeeper(self, store) if isinstance(store, SharedStore) else None
        #: Told when another worker took one of this engine's agents (the server says so to
        #: the session that had it); the agent's copy here then ends.
        self.on_lease_lost: Callable[[AgentCore], None] | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Attach the engine to its loop; with a shared store, take this worker's leases."""
        super().bind(loop)
        if self.leases is not None:
            self.leases.start()

    def _model_error(self, node: str, model: str, params: NodeParams) -> str | None:
        backend = self.models.get(model)
        if backend is None:
            return f"model '{model}' is not loaded (loaded: {sorted(self.models)})"
        if isinstance(params, ToolCallParams):
            reason = backend.tool_support_error()
            if reason:
                return f"ToolCall node needs a model whose chat template renders tools: {reason}"
        return None

    def _durable(self, durable: bool | None, operation: str) -> bool:
        if durable is None:
            return self.store is not None
        if durable and self.store is None:
            raise InvalidParamValue(f"{operation}: a durable agent needs an engine with a store")
        return bool(durable)

    def _new_agent(
        self,
        agent_id: int,
        graph: CompiledGraph,
        listener: AgentListener,
        enable_diagnostics: bool,
        max_steps_per_turn: int,
        durable: bool,
    ) -> AgentCore:
        cls = DurableAgentCore if durable else AgentCore
        agent = cls(
            self,
            agent_id,
            graph,
            listener,
            enable_diagnostics=enable_diagnostics,
            max_steps_per_turn=max_steps_per_turn,
        )
        if isinstance(agent, DurableAgentCore):
            agent.store = self.store
            agent.release_at_rest = False
        self.agents[agent_id] = agent
        self._last_agent_id = max(self._last_agent_id, agent_id)
        return agent

    def _next_agent_id(self, durable: bool) -> int:
        if isinstance(self.store, SharedStore):  # unique across the workers
            agent_id = self.store.allocate_id(durable)
        else:
            # Past every id given or restored, so a new agent never takes a stored agent's id
            # (nor one left stored by an engine that does not load them: `load_stored=False`);
            # and past every id a save slot names (read once: later ones name ids given here),
            # or it would take a destroyed agent's slots as its own, and its saves' retention
            # would delete them.
            if not self._slot_ids_read and isinstance(self.store, SlotShelf):
                self._last_agent_id = max(self._last_agent_id, self.store.largest_agent_id())
                self._slot_ids_read = True
            agent_id = self._last_agent_id + 1
        if agent_id > LARGEST_AGENT_ID:
            raise InvalidParamValue(
                f"no agent id is left: ids go up to 2**62 ({LARGEST_AGENT_ID}), and id "
                f"{agent_id - 1} was given already (here or by the store); nothing was created"
            )
        return agent_id

    def create_agent(
        self,
        graph: GraphDescription,
        listener: AgentListener,
        *,
        enable_diagnostics: bool = False,
        max_steps_per_turn: int = 64,
        dialog: Sequence[Any] | None = None,
        tags: Mapping[str, str] | None = None,
        durable: bool | None = None,
        input_policy: InputPolicy | str = InputPolicy.REJECT,
    ) -> AgentCore:
        """Validate `graph` and create an agent over it (3003, 3007, 3008 on a bad graph).

        `dialog` seeds its conversation (chat messages, see `turns.dialog.messages`; 3007 if
        malformed); `tags` label it (`agent_tags`). `durable`: written through to the store (the
        default when the engine has one); False keeps this one in memory only. `input_policy`:
        what a message does while a turn is open (`InputPolicy`).
        """
        plan = self.prepare_agent(
            graph,
            max_steps_per_turn=max_steps_per_turn,
            dialog=dialog,
            tags=tags,
            durable=durable,
            input_policy=input_policy,
        )
        return self.create_prepared(plan, listener, enable_diagnostics=enable_diagnostics)

    def prepare_agent(
        self,
        graph: GraphDescription,
        *,
        max_steps_per_turn: int = 64,
        dialog: Sequence[Any] | None = None,
        tags: Mapping[str, str] | None = None,
        durable: bool | None = None,
        input_policy: InputPolicy | str = InputPolicy.REJECT,
    ) -> AgentPlan:
        """The first half of `create_agent`: every check and the compile, with its refusals,
        creating nothing. It reads only the models and the store setting, so it may run on a
        worker thread (the largest graph the limits allow takes 300-500 ms to compile)."""
        if not isinstance(graph, GraphDescription):
            raise InvalidParamValue(f"graph must be a GraphDescription, got {type(graph).__name__}")
        if (
            not isinstance(max_steps_per_turn, int)
            or isinstance(max_steps_per_turn, bool)
            or not 1 <= max_steps_per_turn <= MAX_STEPS_PER_TURN
        ):
            raise InvalidParamValue(
                f"max_steps_per_turn must be an int in 1 … {MAX_STEPS_PER_TURN}, "
                f"got {brief(max_steps_per_turn)}"
            )
        seeded = None if dialog is None else dialog_from_messages(dialog, "create_agent")
        labels = checked_tags(tags, "create_agent")
        stored = self._durable(durable, "create_agent")
        policy = checked_policy(input_policy, "create_agent")
        compiled = compile_graph(graph, self._model_error)
        for name, params in compiled.nodes.items():
            if params.uses_model:
                check_fits("create_agent", name, params, self.models[compiled.model_for(params)])
        return AgentPlan(compiled, max_steps_per_turn, seeded, labels, stored, policy)

    def create_prepared(
        self, plan: AgentPlan, listener: AgentListener, *, enable_diagnostics: bool = False
    ) -> AgentCore:
        """The second half of `create_agent`, on the loop: the agent of `plan`."""
        # The store may have gone (the engine closing) while the plan was made off the loop.
        stored = self._durable(plan.durable, "create_agent")
        agent = self._new_agent(
            self._next_agent_id(stored),
            plan.compiled,
            listener,
            bool(enable_diagnostics),
            plan.max_steps_per_turn,
            stored,
        )
        agent.tags = plan.tags
        agent.input_policy = plan.input_policy
        if plan.dialog:
            agent.dialog = plan.dialog
            # Past the engine call ids an earlier agent's dialog holds: its own calls never
            # repeat them (and its snapshot is not refused for them).
            agent.call_seq = next_call_seq(dialog_to_messages(plan.dialog, copied=False))
        log.debug("agent.created", agent_id=agent.agent_id, nodes=len(plan.compiled.nodes))
        if isinstance(agent, DurableAgentCore):
            agent.save()
        if self.observers.agent_added:
            tell(self.observers, "agent_added", agent)
        return agent

    def restore(
        self,
        snapshot: Any,
        listener: AgentListener,
        *,
        durable: bool | None = None,
        graph: GraphDescription | None = None,
        migrate: Migration | None = None,
    ) -> AgentCore:
        """An agent from a snapshot (bytes or its `to_dict` form), nothing created if refused.

        It keeps the snapshot's id when no live agent has it, else gets a new one. A paused
        turn's deadline keeps its absolute time: one already past fires at once. `durable` as
        for `create_agent`; `graph` (and `migrate`): into that graph (`restore.into_graph`).
        """
        stored = self._durable(durable, "restore")
        plan = self._plan(snapshot, graph, migrate)
        taken = plan.agent_id in self.agents or plan.agent_id in self._held_ids
        if not taken and isinstance(self.store, SharedStore):
            # Its id is free only if no worker holds it: this one then does.
            taken = not stored or self.store.claim(plan.agent_id, adopt=True).status != "claimed"
        agent_id = self._next_agent_id(stored) if taken else plan.agent_id
        return self._come_back(agent_id, plan, listener, stored)

    def _plan(
        self,
        snapshot: Any,
        graph: GraphDescription | None,
        migrate: Migration | None,
        operation: str = "restore",
    ) -> SnapshotPlan:
        """The checked plan of a snapshot, into `graph` when one is given (3007 for a `graph`
        or a `migrate` of another kind, naming `operation`)."""
        _check_target(graph, migrate, operation)
        if graph is not None:
            snapshot = into_graph(snapshot, graph, migrate)
        return read_snapshot(snapshot, self._model_error)

    def _come_back(
        self, agent_id: int, plan: SnapshotPlan, listener: AgentListener, durable: bool
    ) -> AgentCore:
        """A restored, loaded or forked agent: made, its stall watched, written if durable."""
        agent = self._restore(agent_id, plan, listener, durable)
        watch_stall(agent)
        if isinstance(agent, DurableAgentCore):
            agent.save()
        return agent

    def save_slot(self, agent: AgentCore, slot: str) -> SlotInfo:
        """Write `agent` (idle or paused: 3004 while a turn runs) into the store's `slot`,
        replacing what it held; past `max_slots_per_agent`, the agent's oldest slots go."""
        shelf = shelf_of(self.store, "save")
        name = checked_slot(slot, "save")
        agent.check_at_rest("save")
        document = bytes(take_snapshot(agent))
        info = SlotInfo(name, agent.agent_id, self._absolute_now(), len(document))
        shelf.save_slot(info, document)
        # Listed in the order saved (never a tie, whatever the clock): the one just written is
        # first, and the oldest go.
        for old in shelf.slots(agent.agent_id)[self.settings.max_slots_per_agent :]:
            shelf.delete_slot(old.slot)
        return info

    def load_slot(
        self,
        slot: str,
        listener: AgentListener,
        *,
        replace: int | None = None,
        graph: GraphDescription | None = None,
        migrate: Migration | None = None,
        durable: bool | None = None,
        operation: str = "load",
    ) -> AgentCore:
        """A new agent from the store's `slot` (3007 if there is none), or, with `replace`, the
        agent of that id destroyed and the slot's agent in its place, under its id. Every
        argument is checked before anything changes (3007 naming it)."""
        shelf = shelf_of(self.store, operation)
        name = checked_slot(slot, operation)
        if replace is not None:  # True would be agent 1, and the loaded agent's id a bool
            replace = checked_agent_id(replace, operation, "replace")
        stored = self._durable(durable, operation)
        document = shelf.load_slot(name)
        if document is None:
            known = [info.slot for info in shelf.slots()]
            raise InvalidParamValue(f"{operation}: no save slot {name!r} (slots: {some(known)})")
        return self._descend(document, listener, name, replace, graph, migrate, stored, operation)

    def fork(
        self, source: AgentCore | str, listener: AgentListener, *, durable: bool | None = None
    ) -> AgentCore:
        """A new agent that goes on on its own from where `source` stands: an agent (idle or
        paused) or a save slot's name (3007 for anything else)."""
        if isinstance(source, str):
            return self.load_slot(source, listener, durable=durable, operation="fork")
        if not isinstance(source, AgentCore):
            raise InvalidParamValue(
                "fork: source must be an agent of this engine (idle or paused) or a save "
                f"slot's name, got {brief(source)}"
            )
        stored = self._durable(durable, "fork")
        source.check_at_rest("fork")
        snapshot = take_snapshot(source)
        return self._descend(snapshot, listener, "", None, None, None, stored, "fork")

    def _descend(
        self,
        document: bytes,
        listener: AgentListener,
        slot: str,
        replace: int | None,
        graph: GraphDescription | None,
        migrate: Migration | None,
        stored: bool,
        operation: str,
    ) -> AgentCore:
        plan = self._plan(document, graph, migrate, operation)
        now = self._absolute_now()
        keep_time_left(plan, now)
        descend(plan, slot, now)
        if replace is not None:
            self.agent(replace).destroy()  # 3001 if there is none; its id is then free
            if stored and isinstance(self.store, SharedStore):
                self.store.claim(replace, adopt=True)  # this worker holds the id it reuses
        agent_id = self._next_agent_id(stored) if replace is None else replace
        return self._come_back(agent_id, plan, listener, stored)

    def list_slots(self, agent_id: int | None = None, operation: str = "slots") -> list[SlotInfo]:
        """The store's slots (of the agent `agent_id`, or all), newest first; 3007 for an
        `agent_id` no agent can have, [] for one no slot names."""
        shelf = shelf_of(self.store, operation)
        if agent_id is None:
            return shelf.slots()
        return shelf.slots(checked_agent_id(agent_id, operation, "agent_id"))

    def delete_slot(self, slot: str, operation: str = "delete_slot") -> bool:
        """Remove the store's `slot`; False if there was none."""
        return shelf_of(self.store, operation).delete_slot(checked_slot(slot, operation))

    def _absolute_now(self) -> float:
        return self.clock.now() + absolute_offset(self.clock)

    def _restore(
        self, agent_id: int, plan: SnapshotPlan, listener: AgentListener, durable: bool
    ) -> AgentCore:
        agent = self._new_agent(
            agent_id, plan.graph, listener, plan.enable_diagnostics, plan.max_steps, durable
        )
        apply_snapshot(agent, plan)
        if plan.max_turn_id:
            # Turn ids stay unique in the engine: new ones continue past the restored ones.
            upcoming = next(self._turn_ids)
            self._turn_ids = itertools.count(max(upcoming, plan.max_turn_id + 1))
        log.debug("agent.restored", agent_id=agent_id, paused=plan.turn is not None)
        if self.observers.agent_added:
            tell(self.observers, "agent_added", agent)
        return agent

    def restore_stored(self, listener_for: Callable[[], AgentListener]) -> list[AgentCore]:
        """Bring back every agent in the store, under its own id (on engine start).

        A stored snapshot this engine cannot restore (say, its model is gone) is logged and
        left in the store untouched; the others come back.
        """
        if self.store is None:
            return []
        restored = []
        # Restoring allocates millions of objects that all live on: the cyclic collector would
        # walk the growing heap again and again (most of the time, at 100,000 agents) to find
        # nothing. It is off for the loop; what was restored then skips the young generations.
        pause = CollectorPause()
        try:
            for agent_id, document in self.store.load_all():
                if agent_id in self.agents:
                    continue
                try:
                    plan = read_snapshot(document, self._model_error)
                except Exception as exc:
                    log.error("store.restore_failed", agent_id=agent_id, reason=str(exc))
                    if isinstance(self.store, SharedStore):  # for a worker that can
                        self.store.release([agent_id])
                    # Its row stays; no new agent may take its id and overwrite it.
                    self._held_ids.add(agent_id)
                    self._last_agent_id = max(self._last_agent_id, agent_id)
                    continue
                restored.append(self._restore(agent_id, plan, listener_for(), True))
        finally:
            pause.release()
        # The stall watch keeps its pauses in the order they began; handed over in that order,
        # each goes to its end in constant time.
        paused = [agent for agent in restored if agent.turn.pause is not None]
        paused.sort(key=lambda agent: agent.turn.pause.started_at)  # type: ignore[union-attr]
        for agent in paused:
            watch_stall(agent)
        log.info("store.restored", agents=len(restored))
        return restored

    def take(
        self,
        agent_id: int,
        listener: AgentListener,
        opens: Callable[[SnapshotPlan], bool] = lambda plan: True,
    ) -> AgentCore | None:
        """A stored agent no worker holds, claimed and restored here (shared store only); None
        if there is no such agent, it cannot be restored here, or `opens` refuses it (then it
        is let go again). Held by a live worker: `HeldElsewhere` (3004), after `opens` agreed,
        so a caller without the agent's token learns nothing."""
        store = self.store
        if not isinstance(store, SharedStore) or agent_id in self.agents:
            return self.agents.get(agent_id)
        claim = store.claim(agent_id)
        if claim.status == "missing" or claim.document is None:
            return None
        try:
            plan = read_snapshot(claim.document, self._model_error)
        except Exception as exc:
            log.error("store.restore_failed", agent_id=agent_id, reason=str(exc))
            plan = None
        if plan is None or not opens(plan):
            if claim.status == "claimed":
                store.release([agent_id])
            return None
        if claim.status == "busy":
            raise HeldElsewhere(
                f"agent {agent_id} is held by another worker sharing the store (a session there "
                "has it, or its turn is running there); attach there, or again once it is let go"
            )
        agent = self._restore(agent_id, plan, listener, True)
        watch_stall(agent)
        return agent

    def adopt_due(self, agent_id: int, document: bytes) -> None:
        """Restore an agent this worker claimed because its pause deadline came while nobody
        held it: the deadline fires at once, and the agent is let go at its next rest."""
        plan = read_snapshot(document, self._model_error)
        agent = self._restore(agent_id, plan, AgentListener(), True)
        assert isinstance(agent, DurableAgentCore)
        agent.release_at_rest = True
        watch_stall(agent)
        log.debug("lease.deadline_adopted", agent_id=agent_id)

    def evict(self, agent: AgentCore) -> None:
        """Let go of a durable agent at rest (idle or paused): it leaves memory, its stored
        snapshot stays, and its lease is released for any worker to claim. One whose turn is
        running is let go at its next rest instead (`release_at_rest`)."""
        if not isinstance(agent, DurableAgentCore) or agent.destroyed or agent.store is None:
            return
        if agent.turn.state not in (TurnState.IDLE, TurnState.PAUSED):
            agent.release_at_rest = True
            return
        store = agent.store
        deadline = pause_deadline(agent.turn, absolute_offset(self.clock))
        agent.listener = AgentListener()
        agent.unload()
        if isinstance(store, SharedStore):
            try:
                store.release([agent.agent_id])
            except Exception:
                log.exception("lease.release_failed", agent_id=agent.agent_id)
            if deadline is not None and self.leases is not None:
                self.leases.wake_at(deadline)
        log.debug("agent.released", agent_id=agent.agent_id)

    def lease_lost(self, agent: AgentCore) -> None:
        """Another worker holds this agent now: its copy here writes nothing more and ends
        (on the loop's next turn: this may be called from inside a write of its walk)."""
        if not isinstance(agent, DurableAgentCore) or agent.store is None:
            return
        agent.store = None
        log.warning("lease.lost", agent_id=agent.agent_id)
        if self.on_lease_lost is not None:
            self.on_lease_lost(agent)
        agent.listener = AgentListener()
        self.loop.call_soon(self._end_copy, agent)

    @staticmethod
    def _end_copy(agent: AgentCore) -> None:
        if not agent.destroyed:
            agent.destroy()

    def agent(self, agent_id: int) -> AgentCore:
        """The live agent with this id (3001 if there is none)."""
        agent = self.agents.get(agent_id)
        if agent is None:
            raise UnknownAgent(f"no agent with id {brief(agent_id)}")
        return agent

    def forget(self, agent_id: int) -> None:
        """Drop a destroyed agent."""
        if self.agents.pop(agent_id, None) is not None and self.observers.agent_removed:
            tell(self.observers, "agent_removed", agent_id)

    def close(self) -> None:
        """Cancel every open turn and destroy every agent; stored agents stay stored (their
        writes stop first), and the store is closed."""
        if self.leases is not None:
            self.leases.stop()  # the agents are let go for other workers, as stored
        store, self.store = self.store, None
        for agent in list(self.agents.values()):
            if isinstance(agent, DurableAgentCore):
                agent.store = None
            agent.destroy()
        self.stall_watch.close()
        if store is not None:
            store.close()
