"""A process for the crash tests: `python -m tests.durable.crash_worker PHASE DB COUNT START`.

* `pause`: on a store at DB, create COUNT agents (kinds from `scenario`), play one whole turn
  on each, then start a second turn on each that pauses; print one JSON line per agent (its id
  and pause), then "ready", and wait to be killed (`kill -9`).
* `resume`: open the same store on a VirtualClock starting at START seconds, and finish each
  restored agent's turn (deadlines that passed fire by themselves); print one JSON line per
  agent with its final state.
* `straight`: the same story with no crash, in one process, for comparison.
* `churn`: (`COUNT` agents, created if the store has none) print "up" with every agent's state
  as restored, then play turns round-robin forever, printing "P id k" once message k paused
  and "C id k" once it completed (each printed after the call returned, so after its write):
  the randomized crash trials kill it at any instant.

A phase named with "-off-loop" (`churn-off-loop`) has every write group made by the store's
writing thread (as a busy worker's are), not on the loop.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import turnloom as tl
from tests.durable import scenario


def _pause_all(engine: tl.Engine, count: int) -> list[tuple[tl.Agent, tl.Step]]:
    paused = []
    for index in range(count):
        kind = scenario.kind_of(index)
        agent = engine.create_agent(scenario.graph(kind), enable_diagnostics=True)
        scenario.finish(agent, agent.send_message(f"hello {index}"), kind)
        paused.append((agent, agent.send_message(f"again {index}")))
    return paused


def _pause_line(agent: tl.Agent, step: tl.Step) -> dict[str, Any]:
    assert step.pause is not None
    calls = [c.call_id for c in step.pause.pending_calls]
    return {"agent_id": agent.agent_id, "node": step.pause.node_name, "calls": calls}


def _finish_all(engine: tl.Engine, late: bool) -> list[dict[str, Any]]:
    lines = []
    for agent_id in engine.agent_ids():
        agent = engine.agent(agent_id)
        kind = scenario.kind_of(agent_id - 1)
        if kind == "deadline" and late:
            result = agent.wait_complete(timeout=30)  # fired at once on restore
        else:
            result = scenario.finish(agent, agent.wait(timeout=30), kind)
        lines.append({"agent_id": agent_id, **scenario.record(agent, result)})
    return lines


CHURN_GRAPH = (
    tl.GraphDescription()
    .add_node("listen", tl.PauseParams(default_exit="answer"))
    .add_node("answer", tl.GenerateParams())
    .set_start_node("listen")
    .set_default_model_name("mock")
)


def _churn_state(engine: tl.Engine, agent_id: int) -> dict[str, Any]:
    agent = engine.agent(agent_id)
    turn = agent.snapshot().to_dict()["turn"]
    return {
        "dialog": agent.dialog,
        "paused": None if turn is None else turn["user_message"],
    }


def churn(engine: tl.Engine, count: int) -> None:
    """Play turns on every agent in turn, forever, reporting each pause and completion."""
    ids = engine.agent_ids() or [engine.create_agent(CHURN_GRAPH).agent_id for _ in range(count)]
    state = {agent_id: _churn_state(engine, agent_id) for agent_id in ids}
    print("up " + json.dumps(state), flush=True)
    agents = [engine.agent(agent_id) for agent_id in ids]
    while True:
        for agent in agents:
            step = agent.wait(timeout=30)
            # The turn paused (or about to) is always the dialog's next one.
            message = str(sum(m["role"] == "user" for m in agent.dialog))
            if not step.paused:
                agent.send_message(message, timeout=30)
                print(f"P {agent.agent_id} {message}", flush=True)
            agent.resume(timeout=30)
            print(f"C {agent.agent_id} {message}", flush=True)


def main(phase: str, db: str, count: int, start: float) -> None:
    if phase.endswith("-off-loop"):  # every write group made by the store's writing thread
        from turnloom.engine.durable.store import write_queue

        write_queue.OFF_LOOP_FROM = 1
        write_queue.OFF_LOOP_WAIT_S = 0
        phase = phase.removesuffix("-off-loop")
    clock = tl.VirtualClock(start=start)
    with tl.Engine(scenario.model(), clock=clock, store=db) as engine:
        if phase == "churn":
            churn(engine, count)
        elif phase == "pause":
            for agent, step in _pause_all(engine, count):
                print(json.dumps(_pause_line(agent, step)), flush=True)
            print("ready", flush=True)
            while True:
                time.sleep(60)
        elif phase == "resume":
            for line in _finish_all(engine, late=True):
                print(json.dumps(line), flush=True)
        else:
            _pause_all(engine, count)
            clock.advance(scenario.TIMEOUT_MS / 1000)  # the deadlines pass, uninterrupted
            for line in _finish_all(engine, late=True):
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]))
