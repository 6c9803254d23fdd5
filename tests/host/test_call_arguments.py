"""A public call's own arguments are checked before anything is handed to the engine, so a
refused call never happens anyway, embedded and remote."""

from __future__ import annotations

import math
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import Recorder, graph_of, nested
from turnloom.engine.turns.exchanges import MAX_TOOL_RESULTS_PER_BATCH

Code = tl.ErrorCode
DEEP = 5000


def gate_graph() -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="say")),
        ("say", tl.CannedResponseParams(lines=["done"])),
    )


def paused(engine: tl.Engine) -> tuple[tl.Agent, Recorder]:
    agent = engine.create_agent(gate_graph())
    recorder = Recorder(agent)
    assert agent.send_message("hi", timeout=5).paused
    return agent, recorder


def still_paused(agent: tl.Agent, recorder: Recorder, events: int) -> None:
    """Nothing happened since the pause: no resume, no completion."""
    step = agent.wait(timeout=5)
    assert step.pause is not None and step.pause.node_name == "gate"
    assert len(recorder.events) == events, recorder.events[events:]


@pytest.mark.parametrize(
    "timeout, error",
    [
        ("5", TypeError),
        (b"5", TypeError),
        ({}, TypeError),
        (True, TypeError),
        (-1, ValueError),
        (math.nan, ValueError),
        (2**64, ValueError),
        (10**400, ValueError),
    ],
)
def test_a_refused_timeout_leaves_the_resume_undone(
    engine: tl.Engine, timeout: Any, error: type[Exception]
) -> None:
    agent, recorder = paused(engine)
    events = len(recorder.events)
    with pytest.raises(error, match=r"resume\(\): timeout"):
        agent.resume(timeout=timeout)
    still_paused(agent, recorder, events)
    with pytest.raises(error, match=r"send_message\(\): timeout"):
        agent.send_message("again", timeout=timeout)
    with pytest.raises(error, match=r"wait_complete\(\): timeout"):
        agent.wait_complete(timeout=timeout)
    still_paused(agent, recorder, events)
    assert agent.resume(timeout=5).result is not None


def test_an_infinite_timeout_waits_without_limit(engine: tl.Engine) -> None:
    agent, _ = paused(engine)
    assert agent.wait(timeout=math.inf).paused
    step = agent.resume(timeout=math.inf)
    assert step.result is not None and step.result.text == "done"
    assert agent.wait_complete(timeout=math.inf) == step.result


@pytest.mark.parametrize("batch", ["c00000000", b"c0", bytearray(b"c0"), {"c00000000": "r"}, 42])
def test_tool_results_that_are_not_a_sequence_are_3016_at_once(
    engine: tl.Engine, batch: Any
) -> None:
    agent, recorder = paused(engine)
    events = len(recorder.events)
    with pytest.raises(tl.InvalidToolResults, match="tool_results must be a list") as caught:
        agent.resume(tool_results=batch, timeout=5)
    assert type(batch).__name__ in caught.value.message
    still_paused(agent, recorder, events)


class CountingBatch(list[Any]):
    """A batch that counts how many of its items were read."""

    reads = 0

    def __getitem__(self, index: Any) -> Any:
        CountingBatch.reads += 1
        return super().__getitem__(index)

    def __iter__(self) -> Any:
        for item in super().__iter__():
            CountingBatch.reads += 1
            yield item


def test_a_batch_over_the_cap_is_refused_before_an_item_is_read(engine: tl.Engine) -> None:
    agent, recorder = paused(engine)
    events = len(recorder.events)
    CountingBatch.reads = 0
    batch = CountingBatch([("c00000000", "r")] * (MAX_TOOL_RESULTS_PER_BATCH + 1))
    with pytest.raises(tl.InvalidToolResults, match=f"over the limit of {len(batch) - 1}"):
        agent.resume(tool_results=batch, timeout=5)
    assert CountingBatch.reads == 0
    still_paused(agent, recorder, events)


@pytest.mark.parametrize(
    "item, problem",
    [
        (42, "must be a ToolResult"),
        (("c00000000", "r", "extra"), "must be a ToolResult"),
        ({"result": "r"}, "call_id must be a string"),
        ((7, "r"), "call_id must be a string"),
        (("c00000000", {1, 2}), "JSON-encodable"),
        (("c00000000", nested(DEEP)), "JSON-encodable"),
    ],
)
def test_a_malformed_result_is_3016_naming_its_index(
    engine: tl.Engine, item: Any, problem: str
) -> None:
    agent, recorder = paused(engine)
    events = len(recorder.events)
    with pytest.raises(tl.InvalidToolResults, match=r"tool_results\[1\]") as caught:
        agent.resume(tool_results=[("c00000000", "r"), item], timeout=5)
    assert problem in caught.value.message
    still_paused(agent, recorder, events)


@pytest.mark.parametrize("node", [0, False, [], {}, ()])
def test_a_falsy_resume_node_that_is_not_a_string_is_3005(engine: tl.Engine, node: Any) -> None:
    agent, recorder = paused(engine)
    events = len(recorder.events)
    with pytest.raises(tl.UnknownNode, match="resume_node must be a node name"):
        agent.resume(node, timeout=5)
    still_paused(agent, recorder, events)
    # None is "not given", as nil is over the wire: a plain resume.
    step = agent.resume(None, timeout=5)  # type: ignore[arg-type]
    assert step.result is not None and step.result.text == "done"


def test_values_nested_thousands_deep_are_refused_with_codes_and_change_nothing(
    engine: tl.Engine, engine_kind: str
) -> None:
    agent, recorder = paused(engine)
    events = len(recorder.events)
    # Embedded the engine reads them and names the argument; a remote client cannot even
    # encode them, which is 3007 for every argument.
    remote = engine_kind == "remote"
    calls = [
        (lambda: agent.get_params(nested(DEEP)), Code.UnknownNode),
        (lambda: agent.change_params(nested(DEEP), {}), Code.UnknownNode),
        (lambda: agent.resume(nested(DEEP), timeout=5), Code.UnknownNode),
        (lambda: agent.resume("", [("c0", nested(DEEP))], timeout=5), Code.InvalidToolResults),
        (lambda: agent.resume("", [nested(DEEP)], timeout=5), Code.InvalidToolResults),
        (lambda: engine.create_agent(gate_graph(), max_steps_per_turn=nested(DEEP)), None),
    ]
    for call, code in calls:
        with pytest.raises(tl.TurnloomError) as caught:
            call()
        want = code or Code.InvalidParamValue
        if remote and code in (Code.UnknownNode, None):
            want = Code.InvalidParamValue
        assert caught.value.code == want, caught.value
        assert len(caught.value.message) < 2000
        still_paused(agent, recorder, events)
    assert agent.get_params("say").lines == ["done"]
