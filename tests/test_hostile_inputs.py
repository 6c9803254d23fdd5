"""Hostile values at every argument of every public call, embedded and over the wire.

Whatever a caller passes — deep nesting, huge ints, NaN and infinities, wrong types, huge
strings, non-sequences where sequences are expected — a public call answers with a
`TurnloomError` (3xxx, or 5001 for what the wire cannot carry) or a `TypeError`, and changes
nothing: the agent's state and every node's params are as they were, and the agent still plays
a turn afterwards. Values that a call accepts are fine too; what matters is that nothing else
comes out and nothing hangs (every blocking call here has a `timeout`, and a 1003 Timeout fails
the test).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnloom as tl
from tests.helpers import graph_of, nested

CALL_TIMEOUT = 10.0


class Opaque:
    """An object of no type any call expects."""


class Deep:
    """A stand-in for a value nested 5,000 deep, made real only inside the call (hypothesis
    could not print the real one when it reports an example)."""

    SHAPES: dict[str, Callable[[], Any]] = {
        "list": lambda: nested(5000),
        "dict": lambda: {"a": nested(5000)},
        "list-of": lambda: [nested(5000)],
        "tuple": lambda: (nested(5000),),
    }

    def __init__(self, shape: str) -> None:
        self.shape = shape

    def __repr__(self) -> str:
        return f"Deep({self.shape!r})"


def real(value: Any) -> Any:
    """The value a call gets: `Deep` stand-ins made real."""
    return Deep.SHAPES[value.shape]() if isinstance(value, Deep) else value


#: Values nobody should pass, of every kind the hardening issue found harmful.
HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, 2**64, 10**400, -(10**400), -1]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.text(max_size=20),
    st.sampled_from(["x" * 200_000, "gate", "say", "", "{{nope}}", "{{#x}}"]),
    st.binary(max_size=20),
    st.sampled_from(sorted(Deep.SHAPES)).map(Deep),
    st.lists(st.integers(), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=3),
    st.builds(Opaque),
)

HOSTILE_SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def hostile_graph() -> tl.GraphDescription:
    door = tl.ToolDefinition(
        name="open_door",
        description="Open a door.",
        parameters=[tl.ToolParamDefinition(name="door_id", type="string", description="")],
    )
    return graph_of(
        ("gate", tl.PauseParams(default_exit="door", pause_timeout_ms=60_000)),
        (
            "door",
            tl.ToolCallParams(
                tools=[door],
                disposition=tl.ToolCallDisposition.AwaitResult,
                mode=tl.ToolCallMode.DetectOnly,
                tool_called_exit="say",
                no_tool_called_exit="say",
            ),
        ),
        ("say", tl.GenerateParams(default_exit="")),
    )


NODES = ("gate", "door", "say")


def observed(agent: tl.Agent) -> tuple[Any, ...]:
    """What a caller can see of an agent: its step (pause or idle) and every node's params."""
    step = agent.wait(timeout=CALL_TIMEOUT)
    pause = step.pause
    where = (pause.node_name, pause.pending_exit) if pause is not None else None
    return (where, tuple(repr(agent.get_params(node)) for node in NODES))


def refused(call: Callable[[], Any], *, timed: bool = False) -> bool:
    """Whether `call` was refused; it may only work, or raise a TurnloomError (not a transport
    one) or a TypeError. A call given a `timeout` may also time out (1003), and refuse a timeout
    out of range with ValueError, as the standard library's waits do."""
    try:
        call()
    except tl.Timeout:
        assert timed, "a call without a short timeout hung"
        return False
    except ValueError:
        assert timed, "only a timeout out of range is a ValueError"
        return True
    except tl.TurnloomError as error:
        assert int(error.code) >= 2000, f"{error!r} is a transport failure: the call hung or broke"
        assert len(str(error)) < 10_000, "an error message must stay readable"
        return True
    except TypeError:
        return True
    return False


def still_serves(agent: tl.Agent) -> None:
    """The agent plays a whole turn after the hostile call."""
    agent.cancel()
    step = agent.send_message("hello", timeout=CALL_TIMEOUT)
    assert step.paused and step.pause is not None and step.pause.node_name == "gate"
    step = agent.resume(timeout=CALL_TIMEOUT)
    if step.paused:  # the door node saw no call in "hello", so this does not happen; be safe
        agent.cancel()
    else:
        assert step.result is not None and step.result.status == tl.TurnStatus.SUCCESS


def is_real(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


@pytest.fixture
def paused_agent(engine: tl.Engine) -> tl.Agent:
    agent = engine.create_agent(hostile_graph())
    agent.send_message("hi", timeout=CALL_TIMEOUT)
    return agent


OPERATIONS: dict[str, Callable[[tl.Agent, Any], Any]] = {
    "send_message": lambda a, v: a.send_message(v, timeout=CALL_TIMEOUT),
    "resume_node": lambda a, v: a.resume(v, timeout=CALL_TIMEOUT),
    "tool_results": lambda a, v: a.resume("", v, timeout=CALL_TIMEOUT),
    "tool_result_item": lambda a, v: a.resume("", [v], timeout=CALL_TIMEOUT),
    "tool_result_text": lambda a, v: a.resume("", [("c1", v)], timeout=CALL_TIMEOUT),
    "change_params_node": lambda a, v: a.change_params(v, {"system_prompt": "x"}),
    "change_params_params": lambda a, v: a.change_params("say", v),
    "get_params": lambda a, v: a.get_params(v),
    "wait_timeout": lambda a, v: a.wait(timeout=v),
    "wait_complete_timeout": lambda a, v: a.wait_complete(timeout=v),
    "resume_timeout": lambda a, v: a.resume(timeout=v),
    "set_on_turn_complete": lambda a, v: a.set_on_turn_complete(v),
    "register_tool": lambda a, v: a.register_tool(v, lambda call: "ok"),
}


@pytest.mark.parametrize("operation", OPERATIONS)
@HOSTILE_SETTINGS
@given(value=HOSTILE)
def test_a_hostile_argument_is_refused_and_changes_nothing(
    paused_agent: tl.Agent, operation: str, value: Any
) -> None:
    timed = operation.endswith("_timeout")
    if timed and (value is None or (is_real(value) and value >= 0)):
        # A legal timeout (None and infinity wait forever on a paused turn): keep it short.
        value = 0.01 if value is None else min(value, 0.01)
    before = observed(paused_agent)
    if refused(lambda: OPERATIONS[operation](paused_agent, real(value)), timed=timed):
        assert observed(paused_agent) == before
    paused_agent.set_on_turn_complete(None)
    still_serves(paused_agent)
    paused_agent.send_message("hi", timeout=CALL_TIMEOUT)


def field_names(cls: type) -> list[str]:
    """The declared params fields of `cls` (not its class-level attributes)."""
    return [f.name for f in dataclasses.fields(cls)]


#: Each params field of each node (by node name) as a change_params target.
PARAM_FIELDS = [
    (node, field)
    for node, cls in (
        ("gate", tl.PauseParams),
        ("door", tl.ToolCallParams),
        ("say", tl.GenerateParams),
    )
    for field in field_names(cls)
] + [("say", "sampling." + f) for f in field_names(tl.SamplingParams)]


@pytest.mark.parametrize(("node", "field"), PARAM_FIELDS)
@settings(HOSTILE_SETTINGS, max_examples=8)
@given(value=HOSTILE)
def test_a_hostile_params_field_is_refused_and_changes_nothing(
    paused_agent: tl.Agent, node: str, field: str, value: Any
) -> None:
    before = observed(paused_agent)
    change = {field.split(".")[1]: real(value)} if "." in field else real(value)
    key = "sampling" if "." in field else field
    if refused(lambda: paused_agent.change_params(node, {key: change})):
        assert observed(paused_agent) == before
    else:  # accepted: the pause is untouched
        assert observed(paused_agent)[0] == before[0]
    still_serves(paused_agent)
    paused_agent.send_message("hi", timeout=CALL_TIMEOUT)


PARAM_CLASSES = (
    tl.PauseParams,
    tl.GenerateParams,
    tl.CannedResponseParams,
    tl.ToolCallParams,
    tl.SamplingParams,
)


@pytest.mark.parametrize("cls", PARAM_CLASSES, ids=lambda c: c.__name__)
@settings(HOSTILE_SETTINGS, max_examples=60)
@given(data=st.data(), value=HOSTILE)
def test_params_constructors_refuse_hostile_values(cls: type, data: Any, value: Any) -> None:
    field = data.draw(st.sampled_from(field_names(cls)))
    refused(lambda: cls(**{field: real(value)}))


@settings(HOSTILE_SETTINGS, max_examples=60)
@given(name=HOSTILE, start=HOSTILE, model=HOSTILE, steps=HOSTILE, diagnostics=HOSTILE)
def test_graph_building_and_create_agent_refuse_hostile_values(
    engine: tl.Engine, name: Any, start: Any, model: Any, steps: Any, diagnostics: Any
) -> None:
    def build() -> None:
        graph = tl.GraphDescription().add_node(real(name), tl.CannedResponseParams(lines=["a"]))
        graph.set_start_node(real(start)).set_default_model_name(real(model))
        engine.create_agent(
            graph, max_steps_per_turn=real(steps), enable_diagnostics=real(diagnostics)
        )

    refused(build)
    agent = engine.create_agent(hostile_graph())
    agent.send_message("hi", timeout=CALL_TIMEOUT)
    still_serves(agent)
    agent.destroy()


@settings(HOSTILE_SETTINGS, max_examples=60)
@given(value=HOSTILE)
def test_the_virtual_clock_refuses_what_it_cannot_keep(value: Any) -> None:
    clock = tl.VirtualClock()
    graph = graph_of(("gate", tl.PauseParams(pause_timeout_ms=1000)))
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        agent = engine.create_agent(graph)
        agent.send_message("hi", timeout=CALL_TIMEOUT)
        with contextlib.suppress(ValueError, TypeError):
            clock.advance(real(value))
        clock.advance(2.0)  # the deadline still fires: time was not broken
        result = agent.wait_complete(timeout=CALL_TIMEOUT)
        assert result is not None and result.status == tl.TurnStatus.PAUSE_TIMED_OUT
