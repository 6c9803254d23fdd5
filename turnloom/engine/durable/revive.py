"""Bringing a checked snapshot to life: a new agent gets the snapshot's state, and
a paused turn gets back its timeout and its place under the stall watch.

`restore.read_snapshot` has checked everything first, so nothing here can fail: a refused
snapshot never gets this far, and a new agent is never half made.
"""

from __future__ import annotations

from ...states import Trigger, fire
from ..turns.agent import AgentCore
from ..turns.executor import on_pause_deadline
from ..turns.turn import OpenPause, Turn
from .restore import PausedTurnPlan, SnapshotPlan
from .snapshot import absolute_offset


def apply_snapshot(agent: AgentCore, plan: SnapshotPlan) -> None:
    """Give a new agent (made over `plan.graph`) the snapshot's state, and re-arm a paused
    turn's timeout (`watch_stall` then watches it). Cannot fail: `read_snapshot` checked all."""
    if plan.params:
        agent.params = {**agent.graph.nodes, **plan.params}
    agent.rng_seed = plan.rng_seed
    agent.tags = plan.tags
    agent.dialog = plan.dialog
    agent.call_seq = plan.call_seq
    agent.node_state = plan.node_state
    if plan.rng_state is not None:
        agent.rng.setstate((3, plan.rng_state, None))
    agent.last_result = plan.last_result
    agent.input_policy = plan.input_policy
    agent.queue = plan.queue
    agent.lineage = plan.lineage
    if plan.turn is not None:
        _restore_turn(agent, plan.turn)
    elif plan.queue:  # stopped between a turn's end and the next's start: start it now
        agent.runtime.loop.call_soon(agent.start_queued)


def _restore_turn(agent: AgentCore, saved: PausedTurnPlan) -> None:
    turn = Turn()
    turn.begin(saved.turn_id, saved.interaction.user_message, saved.debug_nodes is not None)
    turn.interaction = saved.interaction
    # The triggers that brought it there: a restored turn got to `paused` as any did.
    fire(turn, Trigger.START)
    fire(turn, Trigger.PAUSE)
    steps, tokens, pause_count, pause_seq, paused_duration = saved.counters
    turn.steps, turn.tokens, turn.pause_count, turn.pause_seq = (
        steps,
        tokens,
        pause_count,
        pause_seq,
    )
    turn.paused_duration = paused_duration
    turn.reply_parts = saved.reply_parts
    turn.debug_nodes = saved.debug_nodes
    clock = agent.runtime.clock
    offset = absolute_offset(clock)
    started_at = saved.paused_at - offset
    turn.pause = OpenPause(
        saved.info, saved.timeout_target, started_at, pause_seq, saved.debug_index
    )
    agent.turn = turn
    _arm_timeout(agent, turn, None if saved.deadline is None else saved.deadline - offset)


def _arm_timeout(agent: AgentCore, turn: Turn, deadline: float | None) -> None:
    """The timeout `executor` arms at a pause, for a restored one, at `deadline` (engine-clock
    time; None = waits forever).

    A deadline already past fires on the loop's next iteration rather than at the clock's next
    tick, so a deadline that passed while nothing ran fires at once, on a `VirtualClock`
    too. The callback is the executor's own, so the timeout is exactly that of a pause that
    never left memory.
    """
    pause = turn.pause
    assert pause is not None
    engine = agent.runtime
    if deadline is None:
        return
    if deadline <= engine.clock.now():
        turn.timers = (engine.loop.call_soon(on_pause_deadline, agent, turn, pause.seq),)
    else:
        turn.timers = (engine.clock.call_at(deadline, on_pause_deadline, agent, turn, pause.seq),)


def watch_stall(agent: AgentCore) -> None:
    """Put a restored agent's pause under the engine's stall watch, as `executor` does at a
    pause. Separate from `apply_snapshot` so that many restored pauses can be handed to
    the watch in the order they began (it keeps its entries in that order)."""
    if agent.turn.pause is not None:
        agent.runtime.stall_watch.watch(agent, agent.turn)
