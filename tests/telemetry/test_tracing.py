"""OpenTelemetry spans of turns, checked with the SDK's in-memory exporter: the tree of a
paused, resumed, tool-calling turn and its GenAI attributes; a cancelled and a timed-out turn;
a turn restored from a snapshot; and no spans at all while no provider is configured."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider, StatusCode

import turnloom as tl
from tests.telemetry.conftest import story_graph
from turnloom.telemetry.tracing import TurnTracer


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def traced(
    clock: tl.VirtualClock, scripted: tl.MockModel, exporter: InMemorySpanExporter
) -> Iterator[tl.Engine]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with tl.Engine(scripted, clock=clock) as engine:
        engine.add_observer(TurnTracer(provider))
        yield engine


def by_name(spans: tuple[ReadableSpan, ...] | list[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        found.setdefault(span.name, []).append(span)
    return found


def children(spans: Any, parent: ReadableSpan) -> list[str]:
    return [
        s.name for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id
    ]


def test_a_paused_resumed_tool_calling_turn_is_one_tree(
    traced: tl.Engine, clock: tl.VirtualClock, exporter: InMemorySpanExporter
) -> None:
    agent = traced.create_agent(story_graph())
    step = agent.send_message("lights please")
    assert step.paused and step.pause is not None and step.pause.node_name == "detect"
    assert exporter.get_finished_spans()[-1].name != "turn"  # the turn's span stays open
    clock.advance(3.0)
    step = agent.resume("", [{"call_id": "c00000000", "result": "hall lit"}])
    assert step.paused and step.pause is not None and step.pause.node_name == "wait"
    clock.advance(1.5)
    result = agent.resume().final
    assert result.status is tl.TurnStatus.SUCCESS

    spans = exporter.get_finished_spans()
    named = by_name(spans)
    (turn,) = named["turn"]
    assert turn.parent is None
    assert children(spans, turn) == ["node detect", "node wait", "node answer"]
    assert turn.attributes["turnloom.turn.status"] == "success"
    assert turn.attributes["turnloom.turn.pause_count"] == 2
    assert turn.attributes["turnloom.turn.paused_duration_s"] == pytest.approx(4.5)
    pauses = [e for e in turn.events if e.name == "pause"]
    assert [e.attributes["turnloom.node.name"] for e in pauses] == ["detect", "wait"]
    assert [e.attributes["turnloom.pause.duration_s"] for e in pauses] == [3.0, 1.5]
    assert pauses[0].attributes["turnloom.pause.pending_calls"] == ("c00000000",)
    (sent,) = [e for e in turn.events if e.name == "tool_result"]
    assert sent.attributes["gen_ai.tool.call.id"] == "c00000000"
    assert sent.attributes["turnloom.tool.result"] == "hall lit"

    (detect,) = named["node detect"]
    assert detect.attributes["turnloom.node.type"] == "ToolCall"
    assert detect.attributes["turnloom.node.exit_route"] == "tool_called"
    (call,) = [e for e in detect.events if e.name == "tool_call"]
    assert call.attributes["gen_ai.tool.call.id"] == "c00000000"
    assert call.attributes["gen_ai.tool.name"] == "set_light"
    assert '"hall"' in str(call.attributes["gen_ai.tool.call.arguments"])

    generations = named["chat mock"]
    assert len(generations) == 2  # one under detect, one under answer
    assert [children(spans, named[f"node {n}"][0]) for n in ("detect", "answer")] == [
        ["chat mock"],
        ["chat mock"],
    ]
    answer_id = named["node answer"][0].context.span_id
    answer = next(g for g in generations if g.parent is not None and g.parent.span_id == answer_id)
    attrs = answer.attributes
    assert attrs["gen_ai.operation.name"] == "chat"
    assert attrs["gen_ai.request.model"] == "mock"
    assert (
        attrs["gen_ai.usage.output_tokens"]
        == result.tokens_generated - generations[0].attributes["gen_ai.usage.output_tokens"]
    )
    assert attrs["gen_ai.usage.input_tokens"] > 0
    assert attrs["gen_ai.request.max_tokens"] == 256
    assert attrs["turnloom.generation.time_to_first_token_s"] >= 0


def test_a_turn_cancelled_while_paused_ends_its_span_cancelled(
    traced: tl.Engine, clock: tl.VirtualClock, exporter: InMemorySpanExporter
) -> None:
    agent = traced.create_agent(story_graph())
    agent.send_message("lights")
    clock.advance(2.0)
    assert agent.cancel()
    named = by_name(exporter.get_finished_spans())
    (turn,) = named["turn"]
    assert turn.attributes["turnloom.turn.status"] == "cancelled"
    (pause,) = [e for e in turn.events if e.name == "pause"]
    assert pause.attributes["turnloom.pause.ended_by"] == "cancelled"
    assert pause.attributes["turnloom.pause.duration_s"] == 2.0
    assert set(named) == {"turn", "node detect", "chat mock"}


def test_a_timed_out_pause_ends_the_span_in_error(
    traced: tl.Engine,
    clock: tl.VirtualClock,
    scripted: tl.MockModel,
    exporter: InMemorySpanExporter,
) -> None:
    scripted.script.clear()  # no call: detect exits no_tool_called, straight to the pause
    agent = traced.create_agent(story_graph(pause_timeout_ms=500))
    assert agent.send_message("hello").paused
    clock.advance(0.6)
    result = agent.wait_complete()
    assert result is not None and result.status is tl.TurnStatus.PAUSE_TIMED_OUT
    (turn,) = by_name(exporter.get_finished_spans())["turn"]
    assert turn.status.status_code is StatusCode.ERROR
    assert turn.attributes["turnloom.turn.status"] == "pause_timed_out"
    (pause,) = [e for e in turn.events if e.name == "pause"]
    assert pause.attributes["turnloom.pause.ended_by"] == "pause_timed_out"
    assert pause.attributes["turnloom.pause.duration_s"] == pytest.approx(0.5)


def test_a_restored_paused_turn_continues_in_a_linked_span(
    traced: tl.Engine, clock: tl.VirtualClock, exporter: InMemorySpanExporter
) -> None:
    agent = traced.create_agent(story_graph())
    agent.send_message("lights")
    agent.resume("", [{"call_id": "c00000000", "result": "ok"}])  # now paused at wait
    copy = traced.restore(agent.snapshot())
    assert copy.agent_id != agent.agent_id
    assert copy.resume().final.status is tl.TurnStatus.SUCCESS
    agent.cancel()
    turns = by_name(exporter.get_finished_spans())["turn"]
    restored = [t for t in turns if t.attributes.get("turnloom.turn.restored")]
    original = [t for t in turns if not t.attributes.get("turnloom.turn.restored")]
    assert len(restored) == 1 and len(original) == 1
    (link,) = restored[0].links
    assert link.context.span_id == original[0].context.span_id
    assert restored[0].attributes["turnloom.turn.status"] == "success"


def test_no_provider_records_nothing(clock: tl.VirtualClock, scripted: tl.MockModel) -> None:
    tracer = TurnTracer(NoOpTracerProvider())
    assert TurnTracer().tracer() is None  # the global default: nothing configured
    with tl.Engine(scripted, clock=clock) as engine:
        engine.add_observer(tracer)
        agent = engine.create_agent(story_graph())
        assert agent.send_message("x").paused
        assert tracer._open == {}  # a paused turn holds no span: none was made
        agent.resume("", [{"call_id": "c00000000", "result": "ok"}])
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS
    assert tracer._open == {}


def test_an_observer_that_records_nothing_is_listed_but_never_called(
    clock: tl.VirtualClock, scripted: tl.MockModel
) -> None:
    from turnloom.engine.turns.observers import TurnObserver

    calls: list[str] = []

    class Resting(TurnObserver):
        def records_nothing(self) -> bool:
            return True

        def turn_started(self, agent: Any, turn: Any) -> None:
            calls.append("turn_started")

    class Awake(Resting):
        def records_nothing(self) -> bool:
            return False

    resting, awake, noop = Resting(), Awake(), TurnTracer(NoOpTracerProvider())
    with tl.Engine(scripted, clock=clock) as engine:
        for observer in (resting, awake, noop):
            engine.add_observer(observer)
        assert engine.observers[-3:] == [awake, resting, noop]  # called ones first
        agent = engine.create_agent(story_graph())
        assert agent.send_message("x").paused
        assert calls == ["turn_started"]  # the awake one's: the resting ones are never called
        engine.remove_observer(noop)
        engine.remove_observer(resting)
        assert noop not in engine.observers and resting not in engine.observers
        assert awake in engine.observers
