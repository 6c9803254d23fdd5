"""An agent: one conversation over a compiled graph, with its current turn.

Every host operation is a trigger on the agent's current turn: the table decides whether
it is legal (`check`), then the operation's argument guards run, then the trigger fires. A
refused call raises a `Rejection` before touching anything, so it changes nothing
(docs/reference/turns.md#operations-are-triggers).
"""

from __future__ import annotations

import asyncio
import copy
import random
from collections.abc import Mapping, Sequence
from typing import Any

from ...states import POLICY_TRIGGERS, InputPolicy, Trigger, TurnState, check, fire, is_legal
from ..graph.builder import CompiledGraph, answers_twice
from ..graph.fields import params_from_mapping
from ..graph.params import NodeParams, check_mutation
from ..support.guards import brief, some
from ..support.logs import get_logger
from ..support.rejections import AgentDestroyed, InvalidParamValue, QueueFull, UnknownNode
from ..support.teardown import TEARDOWN_STEP_ITEMS, free_later
from . import executor
from .agent_tags import NO_TAGS
from .dialog.history import check_fits
from .dialog.projection import Interaction
from .exchanges import check_batch, normalize_tool_results
from .input_queue import WaitingMessage, checked_policy
from .results import AgentListener, MessageEvent, MessageFate, Step, TurnResult, TurnStatus
from .runtime import Runtime
from .turn import Turn

log = get_logger("turnloom.agent")

#: Statuses whose interaction joins the dialog. A cancelled or failed turn leaves no trace; a
#: timed-out one keeps its partial interaction so the conversation stays intact.
KEPT_STATUSES = frozenset({TurnStatus.SUCCESS, TurnStatus.PAUSE_TIMED_OUT})


class AgentCore:
    """The engine-side agent. Hosts reach it through `turnloom.Engine` or the wire server."""

    __slots__ = (
        "_rng",
        "agent_id",
        "call_seq",
        "destroyed",
        "dialog",
        "enable_diagnostics",
        "graph",
        "input_policy",
        "last_result",
        "lineage",
        "listener",
        "max_steps",
        "node_state",
        "params",
        "queue",
        "rng_seed",
        "runtime",
        "tags",
        "turn",
    )

    def __init__(
        self,
        runtime: Runtime,
        agent_id: int,
        graph: CompiledGraph,
        listener: AgentListener,
        *,
        enable_diagnostics: bool,
        max_steps_per_turn: int,
    ) -> None:
        self.runtime = runtime
        self.agent_id = agent_id
        self.graph = graph
        self.listener = listener
        self.enable_diagnostics = enable_diagnostics
        self.max_steps = max_steps_per_turn
        # Shared with the graph until the first change_params (copy on write): agents are many.
        self.params: Mapping[str, NodeParams] = graph.nodes
        self.dialog: list[Interaction] = []
        #: The current turn: the open one, or a fresh idle one when none is open.
        self.turn = Turn()
        self.last_result: TurnResult | None = None
        self.destroyed = False
        #: Per node, what its executions keep between turns (None until a node keeps any:
        #: agents are many, and most nodes keep nothing).
        self.node_state: dict[str, dict[str, Any]] | None = None
        self._rng: random.Random | None = None
        #: What the random source is seeded with: the id, kept by a restore under another id.
        self.rng_seed = agent_id
        #: The host's labels for this agent (`agent_tags`); kept in snapshots, never read here.
        self.tags: Mapping[str, str] = NO_TAGS
        self.call_seq = 0
        #: What a message does while a turn is open (`set_input_policy`).
        self.input_policy = InputPolicy.REJECT
        #: The messages waiting for the open turn to end, oldest first (None when none wait).
        self.queue: list[WaitingMessage] | None = None
        #: Where this agent came from when it was loaded from a save slot or forked: oldest
        #: first, {"agent_id", "slot", "turns", "time"} each (kept in snapshots).
        self.lineage: tuple[Mapping[str, Any], ...] = ()

    @property
    def rng(self) -> random.Random:
        """The agent's random source, seeded by its id so runs repeat.

        Made on first use: a `Random` is ~2.5 KiB and most agents never need one.
        """
        if self._rng is None:
            self._rng = random.Random(self.rng_seed)
        return self._rng

    def peek_rng(self) -> random.Random | None:
        """The random source if it was ever used (a snapshot keeps its state only then)."""
        return self._rng

    def next_call_id(self) -> str:
        """A tool call id, `c%08x`, unique for the agent's lifetime."""
        self.call_seq += 1
        return f"c{self.call_seq - 1:08x}"

    # --- events out --------------------------------------------------------------------------

    def notify(self, method: str, *args: Any) -> None:
        """Call a listener method; a failing host callback never breaks the engine."""
        try:
            getattr(self.listener, method)(self.agent_id, *args)
        except Exception:
            log.exception("listener.failed", agent_id=self.agent_id, callback=method)

    def turn_completed(self, turn: Turn, result: TurnResult) -> None:
        """Book the one completion of `turn`: dialog, a fresh idle turn, the host told."""
        if result.status in KEPT_STATUSES:
            self.dialog.append(turn.interaction)
        self.turn = Turn()
        self.last_result = result
        self.notify("on_answer_text", result.text, False, True)
        self.notify("on_turn_complete", result)
        turn.settle_waiters(Step(result=result))
        if self.queue:
            self.start_queued()

    def start_queued(self) -> None:
        """Start the oldest waiting message's turn (the agent is idle: its turn just ended)."""
        queue = self.queue
        if not queue or self.destroyed or self.turn.state is not TurnState.IDLE:
            return
        message = queue.pop(0)
        if not queue:
            self.queue = None
        turn = self._start(message.text, message.waiter, False)
        fate = message.fate
        event = MessageEvent(message.text, fate, turn.turn_id, message.replaced, len(queue), True)
        self.notify("on_message", event)

    # --- operations --------------------------------------------------------------------------

    def check_alive(self, operation: str) -> None:
        """Refuse `operation` on a destroyed agent (3002)."""
        if self.destroyed:
            raise AgentDestroyed(f"agent {self.agent_id} was destroyed; {operation} refused")

    def _check(self, trigger: Trigger, operation: str) -> None:
        self.check_alive(operation)
        if not is_legal(self.turn.state, trigger):  # the message is only built for a refusal
            check(self.turn, trigger, f"agent {self.agent_id}: {operation} refused")

    def check_at_rest(self, operation: str) -> None:
        """Refuse `operation` unless the agent is idle or paused: the states `edit` is legal in
        (3004 otherwise), the only ones a snapshot can hold."""
        self._check(Trigger.EDIT, operation)

    def send_message(
        self, text: str, waiter: asyncio.Future[Step] | None = None, inline: bool = False
    ) -> Turn:
        """Start a turn for the user message `text` (`start`); while a turn is open, what the
        input policy says: 3004 (`reject`), queue it (`queue`), or cancel the open turn and
        start this one (`interrupt`, `merge`) (docs/reference/turns.md#input-policies).

        `waiter` is resolved at the message's turn's first pause or at its completion; it is
        registered before the walk starts, so a turn that pauses or ends at once still resolves
        it. `inline`: walk the first nodes that need no model before returning (`executor`).
        Returns the agent's current turn (the open one, for a queued message).
        """
        state = self.turn.state
        trigger = Trigger.START if state is TurnState.IDLE else POLICY_TRIGGERS[self.input_policy]
        self._check(trigger, "send_message")
        if not isinstance(text, str):
            raise InvalidParamValue(
                f"agent {self.agent_id}: send_message: the message must be a string, "
                f"got {type(text).__name__}"
            )
        if trigger is Trigger.START:
            turn = self._start(text, waiter, inline)
            if self.listener.hears_messages:
                self.notify("on_message", MessageEvent(text, MessageFate.STARTED, turn.turn_id))
            return turn
        open_turn = self.turn
        queue = self.queue if self.queue is not None else []
        if trigger is Trigger.QUEUE:
            limit = self.runtime.settings.max_queued_messages
            if len(queue) >= limit:
                raise QueueFull(
                    f"agent {self.agent_id}: send_message refused: {len(queue)} messages "
                    f"already wait for turn {open_turn.turn_id} to end "
                    f"(max_queued_messages {limit})"
                )
            fire(open_turn, Trigger.QUEUE)
            queue.append(WaitingMessage(text, waiter))
            self.queue = queue
            self.notify("on_message", MessageEvent(text, MessageFate.QUEUED, queued=len(queue)))
            return open_turn
        fate = MessageFate.INTERRUPTED
        if trigger is Trigger.MERGE:
            text = f"{open_turn.interaction.user_message}\n{text}"
            fate = MessageFate.MERGED
        # First in line: the completion of the cancelled turn starts it (`start_queued`).
        queue.insert(0, WaitingMessage(text, waiter, fate, open_turn.turn_id))
        self.queue = queue
        executor.cancel(self, open_turn, trigger)
        return self.turn

    def _start(self, text: str, waiter: asyncio.Future[Step] | None, inline: bool) -> Turn:
        turn = self.turn
        turn.begin(self.runtime.next_turn_id(), text, self.enable_diagnostics)
        if waiter is not None:
            turn.add_waiter(waiter)
        executor.start(self, turn, inline)
        return turn

    def set_input_policy(self, policy: InputPolicy | str) -> None:
        """What a message does while a turn is open: one of `InputPolicy` (3007 otherwise).

        Legal at rest, idle or paused (3004 while a turn runs); messages already waiting stay
        queued and run in order whatever the new policy.
        """
        # The table first, then the value (as every operation: a bad value on a busy or
        # destroyed agent is 3004 or 3002).
        self._check(Trigger.EDIT, "set_input_policy")
        checked = checked_policy(policy, f"agent {self.agent_id}: set_input_policy")
        fire(self.turn, Trigger.EDIT)
        self.input_policy = checked

    def _node(self, node_name: str, operation: str) -> NodeParams:
        params = self.params.get(node_name) if isinstance(node_name, str) else None
        if params is None:
            raise UnknownNode(
                f"agent {self.agent_id}: {operation}: node {brief(node_name)} is not in the "
                f"graph (nodes: {some(sorted(self.params))})"
            )
        return params

    def change_params(self, node_name: str, params: NodeParams | Mapping[str, Any]) -> None:
        """Replace a node's mutable params, whole (a params object) or some fields (a mapping).

        The `edit` trigger: legal while idle or paused (3004 otherwise).
        """
        self._check(Trigger.EDIT, "change_params")
        current = self._node(node_name, "change_params")
        self.set_params(node_name, proposed_params(self.agent_id, node_name, current, params))

    def set_params(self, node_name: str, proposed: NodeParams) -> None:
        """Make checked params (`proposed_params`) the node's own: the `edit` trigger."""
        # Exits are structural, so only this node's new params can make the turn answer twice.
        twice = answers_twice(self.params, node_name, proposed)
        if twice is not None:
            raise InvalidParamValue(f"agent {self.agent_id}: change_params: {twice}")
        if proposed.uses_model:
            backend = self.runtime.models.get(self.graph.model_for(proposed))
            if backend is not None:
                check_fits(f"agent {self.agent_id}: change_params", node_name, proposed, backend)
        fire(self.turn, Trigger.EDIT)
        if self.params is self.graph.nodes:
            self.params = dict(self.graph.nodes)
        assert isinstance(self.params, dict)
        self.params[node_name] = proposed
        log.debug("params.changed", agent_id=self.agent_id, node=node_name)

    def get_params(self, node_name: str) -> NodeParams:
        """A copy of a node's current params (edit it and pass it to `change_params`)."""
        self.check_alive("get_params")
        return copy.deepcopy(self._node(node_name, "get_params"))

    def resume(
        self,
        resume_node: str = "",
        tool_results: Sequence[Any] = (),
        waiter: asyncio.Future[Step] | None = None,
        inline: bool = False,
    ) -> Turn:
        """Resume the paused turn via its pending exit, or jump to `resume_node` (`resume`).

        `waiter` is resolved at the next pause or completion (registered before the resume);
        `inline` as for `send_message`.
        The batch's shape (a sequence of well-formed results, at most
        `MAX_TOOL_RESULTS_PER_BATCH`) is checked first, as every face does before sending it;
        then the turn's state; then the node and the batch against the pause.
        """
        self.check_alive("resume")
        batch = normalize_tool_results(tool_results, f"agent {self.agent_id}: resume")
        self._check(Trigger.RESUME, "resume")
        turn = self.turn
        assert turn.pause is not None  # a paused turn always holds its pause
        if resume_node is None:  # as over the wire, where nil means the field's default
            resume_node = ""
        if not isinstance(resume_node, str):
            # Even a falsy one (0, [], {}): only '' means "via the pending exit".
            raise UnknownNode(
                f"agent {self.agent_id}: resume: resume_node must be a node name (a string) or "
                f"'' for the pending exit, got {type(resume_node).__name__} {brief(resume_node)}"
            )
        if resume_node:
            self._node(resume_node, "resume")  # UnknownNode leaves the turn paused
        settings = self.runtime.settings
        results = check_batch(
            self.agent_id,
            turn.pause.info,
            batch,
            max_result_bytes=settings.max_tool_result_bytes,
            max_batch_bytes=settings.max_tool_batch_bytes,
        )
        if waiter is not None:
            turn.add_waiter(waiter)
        executor.resume(self, turn, resume_node, results, inline)
        return turn

    def cancel(self) -> bool:
        """End the open turn `cancelled`; False (not an error) when `cancel` is not legal."""
        self.check_alive("cancel")
        if not is_legal(self.turn.state, Trigger.CANCEL):
            return False
        executor.cancel(self, self.turn)
        return True

    def destroy(self) -> None:
        """Cancel any open turn and refuse every later operation (3002)."""
        self.check_alive("destroy")
        queue, self.queue = self.queue, None  # the cancel must not start a waiting message
        self.cancel()  # a no-op when no turn is open
        self.destroyed = True
        for message in queue or ():
            message.drop(self.agent_id)
            self.notify("on_message", MessageEvent(message.text, MessageFate.DROPPED, waited=True))
        self.runtime.forget(self.agent_id)
        self.let_go_of_dialog()

    def let_go_of_dialog(self) -> None:
        """Drop the dialog of an agent leaving memory: a long one a step per loop iteration
        (a dialog of 50,000 turns freed at once holds the loop 35 ms)."""
        if len(self.dialog) > TEARDOWN_STEP_ITEMS:
            dialog, self.dialog = self.dialog, []
            free_later([dialog])

    def wait(self) -> Step | None:
        """The step the agent stands at now, or None if its turn is running (then wait)."""
        self.check_alive("wait")
        turn = self.turn
        if turn.state is TurnState.IDLE:
            return Step(result=self.last_result) if self.last_result else Step()
        if turn.state is TurnState.PAUSED and turn.pause is not None:
            return Step(pause=turn.pause.info)
        return None


def proposed_params(
    agent_id: int, node_name: str, current: NodeParams, params: NodeParams | Mapping[str, Any]
) -> NodeParams:
    """The params `change_params(node_name, params)` sets over `current`, checked (3006,
    3007); creates and changes nothing, so it may run off the loop (`param_change`)."""
    try:
        if isinstance(params, Mapping):
            proposed: NodeParams = params_from_mapping(type(current), params, base=current)
        else:
            proposed = copy.deepcopy(params)
        check_mutation(node_name, current, proposed)
    except RecursionError:
        # Copying or quoting a value nested thousands deep; nothing has changed yet.
        raise InvalidParamValue(
            f"agent {agent_id}: change_params: node '{node_name}': a value is nested too deep"
        ) from None
    return proposed
