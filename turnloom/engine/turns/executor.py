"""The turn executor: walks nodes, fires the machine's triggers, pauses, resumes, completes.

Everything here runs on the engine loop, so turn state needs no locks. A paused turn holds no
task: the walk ends at the pause and a resume (or a timeout with an exit) starts a new one from
the next node. That keeps a parked turn down to a few small objects and its timers.

Where a turn tells its observers, it calls each hook with its arguments spelled out, in a `try`
of its own, and appends the event to the turn's log (when it keeps one) right there: the same
lines at each point, on purpose (a call through `*args` costs a level of the interpreter's C
stack, a call of a helper a frame, and an inspected game would pay either at every event).
This module is longer than 400 lines because those points are spelled out in place.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ...states import IllegalTransition, Trigger, TurnState, fire, is_legal
from ..graph.params import NodeParams
from ..support.logs import get_logger
from .exchanges import result_message, timeout_result
from .node_run import INLINE_NODES, TurnOwner, run_node, run_node_inline
from .nodes import NodeOutcome
from .observers import call_hooks, observer_failed
from .results import (
    MaxStepsExceeded,
    PauseInfo,
    Step,
    TurnFailure,
    TurnResult,
    TurnStatus,
)
from .turn import LOG_CUT_PAST, OpenPause, Turn, cut_log, paused_log_values

log = get_logger("turnloom.turn")

_STEPS_PER_YIELD = 8

_STATUS_OF_STATE = {
    TurnState.DONE: TurnStatus.SUCCESS,
    TurnState.FAILED: TurnStatus.ERROR,
    TurnState.CANCELLED: TurnStatus.CANCELLED,
    TurnState.PAUSE_TIMED_OUT: TurnStatus.PAUSE_TIMED_OUT,
}
#: What a turn's log says of its final status: the status's value, looked up here rather than
#: read through the enum's `value` descriptor (two Python-level calls) at every turn's end.
_LOGGED_STATUS = {state: status.value for state, status in _STATUS_OF_STATE.items()}


def start(agent: TurnOwner, turn: Turn, inline: bool = False) -> None:
    """Start `turn` at the graph's start node (`inline`: see `_launch`)."""
    fire(turn, Trigger.START)
    runtime = agent.runtime
    if runtime.observers.keep_logs:
        turn.log = ["turn_started", runtime.log_time(), turn.interaction.user_message]
    if hooks := runtime.observers.turn_started:
        for hook in hooks:
            try:
                hook(agent, turn)
            except Exception:
                observer_failed(hook, "turn_started")
    if log.debug_on():
        log.debug(
            "turn.started",
            agent_id=agent.agent_id,
            turn_id=turn.turn_id,
            node=agent.graph.start_node,
        )
    _launch(agent, turn, agent.graph.start_node, inline)


def _launch(agent: TurnOwner, turn: Turn, node: str, inline: bool) -> None:
    """Walk the running `turn` from `node` in a new task. `inline` (the embedded faces ask for
    it): first walk the nodes that need no model on this stack, so a turn that pauses or ends
    there (a Pause, a CannedResponse) costs no task and no loop iteration; a node that must
    await goes to the task. The server does not ask: its reply to a request goes out before
    the events the request causes."""
    if inline:
        next_node = _walk_inline(agent, turn, node)
        if next_node is None:
            return
        node = next_node
    turn.task = agent.runtime.loop.create_task(_walk(agent, turn, node))


async def _continue(agent: TurnOwner, turn: Turn, node: str) -> None:
    if not is_legal(turn.state, Trigger.PROCEED):
        return  # cancelled between the resume and this task starting
    fire(turn, Trigger.PROCEED)
    await _walk(agent, turn, node)


def _count_step(agent: TurnOwner, turn: Turn, node: str) -> None:
    if turn.steps >= agent.max_steps:
        raise MaxStepsExceeded(
            f"agent {agent.agent_id}: turn {turn.turn_id} walked {turn.steps} nodes, "
            f"max_steps_per_turn is {agent.max_steps} (next node '{node}')"
        )
    turn.steps += 1


async def _walk(agent: TurnOwner, turn: Turn, node: str) -> None:
    try:
        while node:
            _count_step(agent, turn, node)
            if turn.steps % _STEPS_PER_YIELD == 0:
                # Nodes without a model (CannedResponse, Pause) never await: a long walk of
                # them must still let the loop serve other agents and sockets.
                await asyncio.sleep(0)
                if turn.state is not TurnState.RUNNING:
                    return
            params = agent.params[node]
            started = _node_starts(agent, turn, node)
            outcome = await run_node(agent, turn, node, params)
            next_node = _after_node(agent, turn, node, params, outcome, started)
            if next_node is None:
                return
            node = next_node
        fire(turn, Trigger.FINISH)
        complete(agent, turn)
    except asyncio.CancelledError:
        if turn.result is None:  # the loop itself is going away: end the turn properly
            cancel(agent, turn)
        raise
    except TurnFailure as failure:
        _fail(agent, turn, failure)
    except IllegalTransition:
        if turn.result is None:
            raise


def _node_starts(agent: TurnOwner, turn: Turn, node: str) -> float:
    """Log and tell the observers that the walk entered `node`; when it did, for the
    diagnostics (0.0 without them)."""
    if (events := turn.log) is not None:
        if len(events) > LOG_CUT_PAST:
            cut_log(events)
        events += ("node_started", agent.runtime.log_time(), node)
    if hooks := agent.runtime.observers.node_started:
        for hook in hooks:
            try:
                hook(agent, turn, node)
            except Exception:
                observer_failed(hook, "node_started")
    return time.perf_counter() if turn.debug_nodes is not None else 0.0


def _walk_inline(agent: TurnOwner, turn: Turn, node: str) -> str | None:
    """`_walk` on this stack for as long as the nodes need no model (and not past the walk's
    next yield point); the node a task must go on from, or None if the walk is over for now
    (paused, ended, failed)."""
    try:
        while node:
            params = agent.params[node]
            if not isinstance(params, INLINE_NODES) or (turn.steps + 1) % _STEPS_PER_YIELD == 0:
                return node
            _count_step(agent, turn, node)
            started = _node_starts(agent, turn, node)
            outcome = run_node_inline(agent, turn, node, params)
            next_node = _after_node(agent, turn, node, params, outcome, started)
            if next_node is None:
                return None
            node = next_node
        fire(turn, Trigger.FINISH)
        complete(agent, turn)
    except TurnFailure as failure:
        _fail(agent, turn, failure)
    except IllegalTransition:
        if turn.result is None:
            raise
    return None


def _after_node(
    agent: TurnOwner,
    turn: Turn,
    node: str,
    params: NodeParams,
    outcome: NodeOutcome,
    started: float,
) -> str | None:
    """Book a node's outcome: the next node ("" at the end of the graph), or None if the walk
    stops here (the turn paused, or was ended from a callback while the node ran)."""
    if turn.state is not TurnState.RUNNING:
        return None
    if (events := turn.log) is not None and not outcome.pauses:
        # A node that pauses is ended in the log by its `paused` event, which carries the
        # exit it took (its pending exit): one event fewer per pause.
        events += ("node_ended", agent.runtime.log_time(), outcome.exit_route)
    if hooks := agent.runtime.observers.node_ended:
        for hook in hooks:
            try:
                hook(agent, turn, node, outcome.exit_route)
            except Exception:
                observer_failed(hook, "node_ended")
    debug_index = None
    if turn.debug_nodes is not None:
        entry: dict[str, Any] = {
            "_type": f"{params.node_type}Node",
            "name": node,
            "exit_route": outcome.exit_route,
            "duration_s": time.perf_counter() - started,
        }
        if outcome.diagnostics is not None:
            entry["diagnostics"] = outcome.diagnostics
        debug_index = len(turn.debug_nodes)
        turn.debug_nodes.append(entry)
    target = params.exit_target(outcome.exit_route)
    if outcome.pauses:
        _pause(agent, turn, node, params, outcome, target, debug_index)
        return None
    return target


def _fail(agent: TurnOwner, turn: Turn, failure: TurnFailure) -> None:
    if is_legal(turn.state, Trigger.FAIL):
        fire(turn, Trigger.FAIL)
        complete(agent, turn, failure)


def _pause(
    agent: TurnOwner,
    turn: Turn,
    node: str,
    params: NodeParams,
    outcome: NodeOutcome,
    target: str,
    debug_index: int | None,
) -> None:
    fire(turn, Trigger.PAUSE)
    route = outcome.exit_route
    engine = agent.runtime
    now = engine.clock.now()
    timeout_ms = int(getattr(params, "pause_timeout_ms", 0))
    timeout_target = params.exit_target("timeout") if timeout_ms else ""
    turn.pause_seq += 1
    turn.pause_count += 1
    info = PauseInfo(node, route, target, timeout_ms, outcome.pending_calls, outcome.awaits_results)
    turn.pause = OpenPause(info, timeout_target, now, turn.pause_seq, debug_index)
    if timeout_ms:
        turn.timers = (
            engine.clock.call_at(
                now + timeout_ms / 1000, on_pause_deadline, agent, turn, turn.pause_seq
            ),
        )
    engine.stall_watch.watch(agent, turn, now)
    turn.task = None  # this walk ends here; a parked turn holds no task
    if log.debug_on():
        log.debug(
            "turn.paused",
            agent_id=agent.agent_id,
            turn_id=turn.turn_id,
            node=node,
            pending_exit=route,
            timeout_ms=timeout_ms,
        )
    if (events := turn.log) is not None:
        events += ("paused", engine.log_time(), paused_log_values(info))
    if hooks := engine.observers.paused:
        for hook in hooks:
            try:
                hook(agent, turn, info)
            except Exception:
                observer_failed(hook, "paused")
    agent.notify("on_paused", info, bool(turn.waiters))
    if turn.pause is not None and turn.pause.seq == turn.pause_seq:
        # Still parked (not resumed at once by registered tools): the waiters get the pause.
        turn.settle_waiters(Step(pause=info))


def _end_pause(agent: TurnOwner, turn: Turn) -> OpenPause:
    pause = turn.pause
    assert pause is not None
    for timer in turn.timers:
        timer.cancel()
    turn.timers = ()
    engine = agent.runtime
    # Never below zero (a pause restored into a clock that reads earlier than when it began):
    # a snapshot with a negative paused time is refused.
    turn.paused_duration += max(0.0, engine.clock.now() - pause.started_at)
    turn.pause = None
    engine.stall_watch.ended(pause)
    return pause


def resume(
    agent: TurnOwner,
    turn: Turn,
    resume_node: str,
    results: dict[str, str] | None = None,
    inline: bool = False,
) -> None:
    """Resume a paused turn via its pending exit, or by jumping to `resume_node`.

    `results` (checked by the caller) answer the pause's pending calls, in call order;
    `inline` as for `start`.
    """
    fire(turn, Trigger.RESUME)
    pause = _end_pause(agent, turn)
    if results:
        turn.interaction.messages.extend(
            result_message(call, results[call.call_id]) for call in pause.info.pending_calls
        )
    target = resume_node or pause.info.pending_target
    if log.debug_on():
        log.debug(
            "turn.resumed",
            agent_id=agent.agent_id,
            turn_id=turn.turn_id,
            node=pause.info.node_name,
            resume_node=resume_node,
            next_node=target,
        )
    if (events := turn.log) is not None:  # `results`: made for this resume, kept as it is
        values = (pause.info.node_name, resume_node, results or None)
        events += ("resumed", agent.runtime.log_time(), values)
    if hooks := agent.runtime.observers.resumed:
        for hook in hooks:
            try:
                hook(agent, turn, pause.info.node_name, resume_node)
            except Exception:
                observer_failed(hook, "resumed")
    agent.notify("on_resumed", pause.info.node_name, resume_node)
    if not inline:
        turn.task = agent.runtime.loop.create_task(_continue(agent, turn, target))
    elif is_legal(turn.state, Trigger.PROCEED):  # not cancelled by an on_resumed callback
        fire(turn, Trigger.PROCEED)
        _launch(agent, turn, target, inline)


def on_pause_deadline(agent: TurnOwner, turn: Turn, seq: int) -> None:
    """The deadline of `turn`'s pause number `seq` has come: time it out, unless that pause
    has already ended (the resume won the race: docs/reference/pauses.md#races)."""
    if not is_legal(turn.state, Trigger.TIME_OUT) or turn.pause is None or turn.pause.seq != seq:
        return  # the resume won the race
    fire(turn, Trigger.TIME_OUT)  # the table picks resuming or pause_timed_out
    pause = _end_pause(agent, turn)
    if turn.debug_nodes is not None and pause.debug_index is not None:
        turn.debug_nodes[pause.debug_index]["exit_route"] = "timeout"
    if pause.info.awaits_results:
        # The model saw these calls; close them so the kept interaction stays well-formed.
        content = timeout_result(pause.info.timeout_ms)
        turn.interaction.messages.extend(
            result_message(call, content) for call in pause.info.pending_calls
        )
    log.info(
        "turn.pause_timed_out",
        agent_id=agent.agent_id,
        turn_id=turn.turn_id,
        node=pause.info.node_name,
        timeout_exit=pause.timeout_target,
    )
    if turn.state is TurnState.RESUMING:
        node, target = pause.info.node_name, pause.timeout_target
        if (events := turn.log) is not None:
            sent = None
            if pause.info.awaits_results:
                sent = {call.call_id: content for call in pause.info.pending_calls}
            events += ("resumed", agent.runtime.log_time(), (node, target, sent))
        if hooks := agent.runtime.observers.resumed:
            call_hooks(hooks, "resumed", agent, turn, node, target)
        agent.notify("on_resumed", node, target)
        turn.task = agent.runtime.loop.create_task(_continue(agent, turn, pause.timeout_target))
    else:
        complete(agent, turn)


def cancel(agent: TurnOwner, turn: Turn, trigger: Trigger = Trigger.CANCEL) -> None:
    """End an open turn `cancelled`, stopping a running node (`trigger`: `cancel`, or the
    `interrupt` or `merge` of a message that replaces the turn)."""
    fire(turn, trigger)
    if turn.pause is not None:
        _end_pause(agent, turn)
    task = turn.task
    if task is not None and not task.done():
        task.cancel()
    complete(agent, turn)


def complete(agent: TurnOwner, turn: Turn, failure: BaseException | None = None) -> None:
    """Report the one completion of a turn that reached a terminal state
    (docs/reference/turns.md#one-completion-per-turn)."""
    if turn.result is not None:
        return
    for timer in turn.timers:
        timer.cancel()
    turn.timers = ()
    status = _STATUS_OF_STATE[turn.state]
    text = "".join(turn.reply_parts or ())
    debug_info = None
    if turn.debug_nodes is not None:
        debug_info = {
            "status": status.value,
            "nodes": turn.debug_nodes,
            "paused_duration_s": turn.paused_duration,
            "pause_count": turn.pause_count,
            "tokens_generated": turn.tokens,
        }
    result = TurnResult(
        turn_id=turn.turn_id,
        status=status,
        text=text,
        tokens_generated=turn.tokens,
        error_code=agent.runtime.error_code_of(failure) if failure is not None else None,
        error_message=str(failure) if failure is not None else "",
        paused_duration_s=turn.paused_duration,
        pause_count=turn.pause_count,
        debug_info=debug_info,
    )
    turn.result = result
    turn.task = None
    if log.debug_on():
        log.debug(
            "turn.completed",
            agent_id=agent.agent_id,
            turn_id=turn.turn_id,
            status=status.value,
            error_code=result.error_code,
        )
    if (events := turn.log) is not None:
        # Plain values only (the status's value, not the enum member): a tuple of those
        # leaves the garbage collector's lists at its first collection.
        code, message = result.error_code, result.error_message
        ended = (
            _LOGGED_STATUS[turn.state],
            text,
            turn.tokens,
            code,
            message,
            turn.pause_count,
            turn.paused_duration,
        )
        events += ("turn_ended", agent.runtime.log_time(), ended)
    if hooks := agent.runtime.observers.turn_ended:
        for hook in hooks:
            try:
                hook(agent, turn, result)
            except Exception:
                observer_failed(hook, "turn_ended")
    agent.turn_completed(turn, result)
