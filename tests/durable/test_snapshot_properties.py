"""Property: an agent restored from a snapshot taken at any rest point behaves as the original.

Hypothesis plays a random story on one agent (messages, plain and jump resumes, tool results,
param changes, cancels, time passing past deadlines), snapshots it at a random moment where it
is idle or paused, restores the copy in the same engine, and then plays the rest of the story
on both: every step, result, dialog and param must match.

And its converse: that snapshot, with one field made inconsistent (a mutation), is refused with
3007 naming the field, and nothing is created (docs/reference/durability.md#refused-snapshots).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable.restore_checks import CALL_IDS

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


def _call_after(doc: dict[str, Any]) -> None:
    """An exchange whose call id is the one the agent hands out next
    (docs/reference/tools.md#call-ids)."""
    call_id = f"c{doc['call_seq']:08x}"
    call = {"id": call_id, "type": "function", "function": {"name": "look", "arguments": {}}}
    doc["dialog"] += [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "content": "seen", "tool_call_id": call_id, "name": "look"},
    ]


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = doc
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[last] = value

    return mutate


def _paused(doc: dict[str, Any]) -> bool:
    return doc["turn"] is not None


def _calls(doc: dict[str, Any]) -> bool:
    return _paused(doc) and bool(doc["turn"]["pause"]["pending_calls"])


#: name: (applies to the document, the mutation, what the refusal must name).
MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], bool], Callable[..., None], str]] = {
    "agent_id": (lambda d: True, _set("agent_id", 2**64 - 1), "agent_id"),
    "rng_seed": (lambda d: True, _set("rng_seed", 2**200), "rng_seed"),
    "call_seq": (lambda d: True, _set("call_seq", CALL_IDS), "call_seq"),
    "max_steps": (lambda d: True, _set("options.max_steps_per_turn", 2**70), "max_steps_per_turn"),
    "fingerprint": (lambda d: True, _set("graph_fingerprint", "0" * 16), "graph_fingerprint"),
    "version": (lambda d: True, _set("graph_version", "9"), "graph_version"),
    "clock": (lambda d: True, _set("clock", "lunar"), "clock"),
    "saved_at": (lambda d: True, _set("saved_at", float("nan")), "saved_at"),
    "node_state": (lambda d: True, _set("node_state", {"pick": {"next": "x"}}), "node_state.pick"),
    "last_result": (lambda d: True, _set("last_result", 0), "last_result"),
    "dialog call id": (lambda d: True, _call_after, "at or past call_seq"),
    "structural params": (lambda d: True, _set("params", {"act": {"tools": []}}), "params['act']"),
    "turn_id": (_paused, _set("turn.turn_id", 2**64 - 1), "turn.turn_id"),
    "steps": (_paused, _set("turn.steps", 10**6), "turn.steps"),
    "paused_at": (_paused, _set("turn.pause.paused_at", float("inf")), "paused_at"),
    "paused_duration": (_paused, _set("turn.paused_duration_s", -1.0), "paused_duration_s"),
    "deadline": (_paused, _set("turn.pause.deadline", float("nan")), "deadline"),
    "pending_target": (_paused, _set("turn.pause.pending_target", "pick"), "pending_target"),
    "user message": (
        _paused,
        lambda d: d["turn"]["messages"].append({"role": "user", "content": "again"}),
        "is a user message",
    ),
    "no call message": (_calls, _set("turn.messages", []), "turn.messages"),
    "disposition": (
        _calls,
        _set("turn.pause.pending_calls.0.disposition", "notify"),
        "disposition",
    ),
    "arguments": (_calls, _set("turn.pause.pending_calls.0.arguments_json", "{}"), "arguments"),
}


@settings(max_examples=60, deadline=None)
@given(before=ops, data=st.data())
def test_a_mutated_snapshot_is_refused_naming_the_field(before: list[Any], data: Any) -> None:
    clock = tl.VirtualClock()
    with tl.Engine(scenario.model(), clock=clock) as engine:
        original = engine.create_agent(GRAPH, enable_diagnostics=True)
        for op in before:
            _do(original, clock, op)
        doc = original.snapshot().to_dict()
        applicable = sorted(name for name, (applies, _, _) in MUTATIONS.items() if applies(doc))
        name = data.draw(st.sampled_from(applicable), label="mutation")
        _, mutate, named = MUTATIONS[name]
        mutate(doc)
        try:
            engine.restore(doc)
        except tl.InvalidParamValue as refused:
            assert refused.message.startswith("snapshot:"), refused.message
            assert named in refused.message, refused.message
        else:
            raise AssertionError(f"the mutation {name!r} was restored")
        assert engine.agent_ids() == [original.agent_id]
        assert engine.create_agent(GRAPH).agent_id == original.agent_id + 1  # no id used up
