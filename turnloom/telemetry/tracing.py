"""OpenTelemetry spans of an engine's turns (`opentelemetry-api`, the `otel` extra).

`TurnTracer` is an engine observer. Each turn is a span ("turn"), each node run a child span
("node NAME"), each generation a child of its node's span, named and attributed after the
GenAI semantic conventions ("chat MODEL", `gen_ai.operation.name`, `gen_ai.request.model`,
`gen_ai.usage.input_tokens`, ...). Tool calls are events of their node's span, with the call
id; a pause is an event of the turn's span, stamped when it began and carrying how long it
lasted. A paused turn's span stays open across the pause: the walk ends at a pause, the span
does not. A turn that comes back from a snapshot mid-way (a durable restore) gets a new span,
marked `turnloom.turn.restored`, linked to the span it continues when this process made it.

Spans go to the tracer provider given, else to the global one; while that is OpenTelemetry's
default (no SDK configured) a turn records nothing, and the global provider is looked at again
at most once a second (so spans begin within a second of an app setting one). Given a no-op
provider it is never called at all (`records_nothing`).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from ..engine.support.extras import install_hint
from ..engine.turns.observers import GenerationRecord, TurnObserver, tool_results_sent
from ..engine.turns.results import PauseInfo, ToolCallEvent, TurnResult, TurnStatus
from ..engine.turns.turn import Turn

try:
    from opentelemetry import trace
except ImportError:  # pragma: no cover - exercised by the test that hides the package
    trace = None  # type: ignore[assignment]

#: The instrumentation scope's name, as a span's `otel.scope.name` shows it.
SCOPE = "turnloom"
#: How many ended turns' span contexts are kept to link a restored turn to.
KEPT_LINKS = 1024
#: While no tracer provider is set, how long the global one is taken as still unset before
#: it is looked at again (a look costs an environment lookup: every hook of every turn would
#: pay it). Spans begin at most this long after an app sets its provider.
UNSET_RECHECK_S = 1.0


def available() -> bool:
    """Whether `opentelemetry-api` is installed."""
    return trace is not None


def provider_is_set() -> bool:
    """Whether opentelemetry-api is installed and the app has set a global tracer provider
    that records (an SDK's), rather than OpenTelemetry's default."""
    return trace is not None and not _records_nothing(trace.get_tracer_provider())


def _records_nothing(provider: Any) -> bool:
    """OpenTelemetry's default provider (before an SDK is set) and its no-op one."""
    return isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


@dataclass(slots=True)
class _OpenTurn:
    span: Any
    node_span: Any = None
    #: The pause the turn is parked in: its info, when it began (engine clock, wall ns).
    pause: PauseInfo | None = None
    pause_clock: float = 0.0
    pause_ns: int = 0
    calls: dict[str, Any] = field(default_factory=dict)


class TurnTracer(TurnObserver):
    """Turns, nodes and generations as OpenTelemetry spans (`tracer_provider`: the global one
    if None)."""

    def __init__(self, tracer_provider: Any = None) -> None:
        if trace is None:
            raise ImportError(f"TurnTracer needs opentelemetry-api: {install_hint('otel')}")
        try:
            self._version: str | None = metadata.version("turnloom")
        except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
            self._version = None
        self._provider = tracer_provider
        #: Given a no-op provider, nothing will ever be recorded: every callback returns at once.
        self._dormant = isinstance(tracer_provider, trace.NoOpTracerProvider)
        self._seen_provider: Any = None
        #: Until when (monotonic clock) the global provider is taken as still unset.
        self._unset_until = 0.0
        self._tracer: Any = None
        self._open: dict[tuple[int, int], _OpenTurn] = {}
        #: turn id -> the context of its latest span, for a restored turn's link.
        self._ended: OrderedDict[int, Any] = OrderedDict()

    def records_nothing(self) -> bool:
        """Given a no-op provider, it never records: the engine leaves it out of the turns."""
        return self._dormant

    def tracer(self) -> Any:
        """The tracer spans go to now, or None while nothing would record them."""
        if self._dormant:
            return None
        provider = self._provider
        if provider is None:
            now = time.monotonic()
            if now < self._unset_until:
                return None
            provider = trace.get_tracer_provider()
            if _records_nothing(provider):
                self._unset_until = now + UNSET_RECHECK_S
                return None
        elif _records_nothing(provider):
            return None
        if provider is not self._seen_provider:
            self._seen_provider = provider
            self._tracer = provider.get_tracer(SCOPE, self._version)
        return self._tracer

    # --- turns -------------------------------------------------------------------------------

    def _start(self, agent: Any, turn: Turn, restored: bool) -> _OpenTurn | None:
        tracer = self.tracer()
        if tracer is None:
            return None
        attributes: dict[str, Any] = {
            "turnloom.agent.id": agent.agent_id,
            "turnloom.turn.id": turn.turn_id,
            "turnloom.graph.start_node": agent.graph.start_node,
        }
        links = []
        if restored:
            attributes["turnloom.turn.restored"] = True
            earlier = self._ended.get(turn.turn_id)
            if earlier is not None:
                links.append(trace.Link(earlier, {"turnloom.link": "continues"}))
        span = tracer.start_span("turn", attributes=attributes, links=links)
        opened = self._open[agent.agent_id, turn.turn_id] = _OpenTurn(span)
        self._remember(turn.turn_id, span)
        return opened

    def _remember(self, turn_id: int, span: Any) -> None:
        self._ended[turn_id] = span.get_span_context()
        self._ended.move_to_end(turn_id)
        while len(self._ended) > KEPT_LINKS:
            self._ended.popitem(last=False)

    def _turn(self, agent: Any, turn: Turn) -> _OpenTurn | None:
        """The turn's open span, or a new one for a turn restored paused from a snapshot."""
        if self._dormant:
            return None
        opened = self._open.get((agent.agent_id, turn.turn_id)) if self._open else None
        if opened is None and turn.pause_count and self.tracer() is not None:
            # Not started here but already paused once: a turn restored from a snapshot.
            opened = self._start(agent, turn, restored=True)
        return opened

    def turn_started(self, agent: Any, turn: Turn) -> None:
        """Open the turn's span."""
        self._start(agent, turn, restored=False)

    def turn_ended(self, agent: Any, turn: Turn, result: TurnResult) -> None:
        """Close the turn's span (and a node span a cancel cut short) with its status."""
        opened = self._turn(agent, turn)
        if opened is None:
            return
        del self._open[agent.agent_id, turn.turn_id]
        span = opened.span
        if opened.pause is not None:  # it ended while paused: cancelled or timed out
            self._pause_event(agent, opened, how=result.status.value, resume_node="")
        if opened.node_span is not None:
            opened.node_span.set_attribute("turnloom.node.ended_by", result.status.value)
            opened.node_span.end()
        span.set_attributes(
            {
                "turnloom.turn.status": result.status.value,
                "turnloom.turn.tokens": result.tokens_generated,
                "turnloom.turn.pause_count": result.pause_count,
                "turnloom.turn.paused_duration_s": result.paused_duration_s,
            }
        )
        if result.status is TurnStatus.ERROR:
            span.set_attribute("error.type", str(result.error_code))
            span.set_status(trace.Status(trace.StatusCode.ERROR, result.error_message))
        elif result.status is TurnStatus.PAUSE_TIMED_OUT:
            span.set_status(trace.Status(trace.StatusCode.ERROR, "the pause timed out"))
        span.end()

    # --- nodes and generations ---------------------------------------------------------------

    def node_started(self, agent: Any, turn: Turn, node: str) -> None:
        """Open the node's span under the turn's."""
        # A turn restored paused is first heard of by `resumed` or `turn_ended`, never here.
        opened = self._open.get((agent.agent_id, turn.turn_id)) if self._open else None
        if opened is None:
            return
        params = agent.params.get(node)
        opened.node_span = self._tracer.start_span(
            f"node {node}",
            context=trace.set_span_in_context(opened.span),
            attributes={
                "turnloom.node.name": node,
                "turnloom.node.type": getattr(params, "node_type", ""),
            },
        )

    def node_ended(self, agent: Any, turn: Turn, node: str, exit_route: str) -> None:
        """Close the node's span with the exit it took."""
        opened = self._open.get((agent.agent_id, turn.turn_id)) if self._open else None
        if opened is None or opened.node_span is None:
            return
        opened.node_span.set_attribute("turnloom.node.exit_route", exit_route)
        opened.node_span.end()
        opened.node_span = None

    def generation_ended(self, agent: Any, turn: Turn, node: str, record: GenerationRecord) -> None:
        """A span for the generation, under its node's, with the GenAI attributes."""
        opened = self._open.get((agent.agent_id, turn.turn_id)) if self._open else None
        if opened is None:
            return
        parent = opened.node_span or opened.span
        end_ns = time.time_ns()
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": record.model,
            "gen_ai.response.model": record.model,
            "gen_ai.request.max_tokens": record.max_tokens,
            "gen_ai.request.temperature": record.temperature,
            "gen_ai.usage.input_tokens": record.prompt_tokens,
            "gen_ai.usage.output_tokens": record.tokens,
        }
        if record.seconds_to_first_token is not None:
            attributes["turnloom.generation.time_to_first_token_s"] = record.seconds_to_first_token
        if record.error:
            attributes["error.type"] = record.error
        span = self._tracer.start_span(
            f"chat {record.model}",
            context=trace.set_span_in_context(parent),
            kind=trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=end_ns - int(record.seconds * 1e9),
        )
        if record.error and record.error != "cancelled":
            span.set_status(trace.Status(trace.StatusCode.ERROR, record.error))
        span.end(end_time=end_ns)

    # --- tool calls and pauses ---------------------------------------------------------------

    def tool_called(self, agent: Any, turn: Turn, event: ToolCallEvent) -> None:
        """An event of the node's span with the call's id, tool and arguments."""
        opened = self._open.get((agent.agent_id, turn.turn_id)) if self._open else None
        if opened is None:
            return
        (opened.node_span or opened.span).add_event(
            "tool_call",
            {
                "gen_ai.tool.call.id": event.call_id,
                "gen_ai.tool.name": event.tool_name,
                "gen_ai.tool.call.arguments": event.arguments_json,
                "turnloom.tool.disposition": event.disposition,
            },
        )

    def paused(self, agent: Any, turn: Turn, info: PauseInfo) -> None:
        """Note the pause; its event goes in when it ends, with its duration."""
        opened = self._open.get((agent.agent_id, turn.turn_id)) if self._open else None
        if opened is None:
            return
        opened.pause = info
        opened.pause_clock = agent.runtime.clock.now()
        opened.pause_ns = time.time_ns()

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """The pause's event, and one per tool result the resume handed back."""
        opened = self._turn(agent, turn)
        if opened is None:
            return
        info = opened.pause
        if info is None:  # restored paused: its pause began before this process saw it
            return
        self._pause_event(agent, opened, how="resumed", resume_node=resume_node)
        if info.pending_calls:
            sent = tool_results_sent(turn, [call.call_id for call in info.pending_calls])
            for call_id, content in sent.items():
                opened.span.add_event(
                    "tool_result",
                    {"gen_ai.tool.call.id": call_id, "turnloom.tool.result": content},
                )

    def _pause_event(self, agent: Any, opened: _OpenTurn, how: str, resume_node: str) -> None:
        info = opened.pause
        assert info is not None
        opened.span.add_event(
            "pause",
            {
                "turnloom.node.name": info.node_name,
                "turnloom.pause.pending_exit": info.pending_exit,
                "turnloom.pause.duration_s": agent.runtime.clock.now() - opened.pause_clock,
                "turnloom.pause.ended_by": how,
                "turnloom.pause.resume_node": resume_node,
                "turnloom.pause.pending_calls": [call.call_id for call in info.pending_calls],
            },
            timestamp=opened.pause_ns,
        )
        opened.pause = None
