"""Property: an agent restored from a snapshot taken at any rest point behaves as the original.

Hypothesis plays a random story on one agent (messages, plain and jump resumes, tool results,
param changes, cancels, time passing past deadlines), snapshots it at a random moment where it
is idle or paused, restores the copy in the same engine, and then plays the rest of the story
on both: every step, result, dialog and param must match.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import turnloom as tl
from tests.durable import scenario

GRAPH = (
    tl.GraphDescription()
    .add_node(
        "act",
        tl.ToolCallParams(
            tools=[scenario.LOOK],
            disposition=tl.ToolCallDisposition.AwaitResult,
            tool_called_exit="gate",
            pause_timeout_ms=3000,
            timeout_exit="say",
        ),
    )
    .add_node("gate", tl.PauseParams(default_exit="say", pause_timeout_ms=2000))
    .add_node("say", tl.GenerateParams(system_prompt="Mira"))
    .add_node(
        "pick", tl.CannedResponseParams(lines=["a", "b", "c", "d"], selection=tl.Selection.Random)
    )
    .set_start_node("act")
    .set_default_model_name("mock")
)

ops = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.sampled_from(["hi", "swords?", "bye"])),
        st.tuples(st.just("resume"), st.sampled_from(["", "pick", "say"])),
        st.tuples(st.just("results"), st.just("")),
        st.tuples(st.just("prompt"), st.sampled_from(["Mira", "Mira, kind", "Mira, cross"])),
        st.tuples(st.just("cancel"), st.just("")),
        st.tuples(st.just("time"), st.sampled_from([0.5, 1.5, 2.5])),
    ),
    max_size=14,
)


def _do(agent: tl.Agent, clock: tl.VirtualClock, op: tuple[str, Any]) -> Any:
    kind, arg = op
    try:
        if kind == "send":
            return ("step", agent.send_message(arg, timeout=10))
        if kind == "resume":
            return ("step", agent.resume(arg, timeout=10))
        if kind == "results":
            step = agent.wait(timeout=10)
            calls = step.pause.pending_calls if step.pause else ()
            return ("step", agent.resume(tool_results=[(c.call_id, "seen") for c in calls]))
        if kind == "prompt":
            agent.change_params("say", {"system_prompt": arg})
            return ("ok",)
        if kind == "cancel":
            return ("cancel", agent.cancel())
        clock.advance(arg)
        return ("time", agent.wait(timeout=10))
    except tl.TurnloomError as error:
        return ("error", int(error.code))


def _view(result: Any) -> Any:
    """A step or result without what differs by nature (the agent's id, measured durations)."""
    if isinstance(result, tuple) and result and isinstance(result[-1], tl.Step):
        step = result[-1]
        final = step.result
        if final is not None:
            return (result[0], step.pause, final.status, final.text)
        return (result[0], step.pause)
    return result


@settings(max_examples=60, deadline=None)
@given(before=ops, after=ops)
def test_a_restored_agent_goes_on_as_the_original(before: list[Any], after: list[Any]) -> None:
    clock = tl.VirtualClock()
    with tl.Engine(scenario.model(), clock=clock) as engine:
        original = engine.create_agent(GRAPH, enable_diagnostics=True)
        for op in before:
            _do(original, clock, op)
        copy = engine.restore(original.snapshot())
        for op in after:
            # The same moment for both: apply to one, then the other, time only once.
            if op[0] == "time":
                clock.advance(op[1])
                assert _view(("time", copy.wait(timeout=10))) == _view(
                    ("time", original.wait(timeout=10))
                )
                continue
            assert _view(_do(copy, clock, op)) == _view(_do(original, clock, op)), op
        assert copy.dialog == original.dialog
        assert copy.get_params("say") == original.get_params("say")
        assert copy.wait(timeout=10).pause == original.wait(timeout=10).pause
