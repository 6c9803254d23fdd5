"""Prometheus metrics of an engine's turns (`prometheus-client`, the `metrics` extra).

`TurnMetrics` is an engine observer that counts into its own registry (or the one it is
given): turns by final status, turns paused now, turn and pause durations, time to the first
token, tokens, rejections by code and, where a server tells it how, open sessions. Durations
are on the engine's clock (a virtual one in tests); a turn's duration leaves out the time it
spent paused, as its diagnostics do. Time to the first token is wall time, as the model took it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..engine.support.extras import install_hint
from ..engine.turns.observers import GenerationRecord, TurnObserver
from ..engine.turns.results import PauseInfo, TurnResult
from ..engine.turns.turn import Turn

try:
    import prometheus_client as prom
except ImportError:  # pragma: no cover - exercised by the test that hides the package
    prom = None  # type: ignore[assignment]

#: Buckets of turn and pause durations, in seconds: a canned line takes microseconds, a
#: generation seconds, a pause for the game anything up to minutes.
DURATION_BUCKETS = (0.001, 0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)
#: Buckets of the time to the first token, in seconds.
FIRST_TOKEN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def available() -> bool:
    """Whether `prometheus-client` is installed."""
    return prom is not None


class TurnMetrics(TurnObserver):
    """Counts an engine's turns into a Prometheus registry (`registry`, a new one if None)."""

    def __init__(self, registry: Any = None) -> None:
        if prom is None:
            raise ImportError(f"TurnMetrics needs prometheus-client: {install_hint('metrics')}")
        self.registry = prom.CollectorRegistry() if registry is None else registry
        reg = self.registry
        self.turns = prom.Counter(
            "turnloom_turns", "Turns ended, by final status.", ["status"], registry=reg
        )
        self.paused_now = prom.Gauge("turnloom_turns_paused", "Turns paused now.", registry=reg)
        self.turn_seconds = prom.Histogram(
            "turnloom_turn_duration_seconds",
            "Turn duration, start to completion, less the time it spent paused.",
            buckets=DURATION_BUCKETS,
            registry=reg,
        )
        self.pause_seconds = prom.Histogram(
            "turnloom_pause_duration_seconds",
            "How long a pause lasted, until its resume, timeout or cancel.",
            buckets=DURATION_BUCKETS,
            registry=reg,
        )
        self.first_token_seconds = prom.Histogram(
            "turnloom_time_to_first_token_seconds",
            "Time from a generation's request to its first token, by model.",
            ["model"],
            buckets=FIRST_TOKEN_BUCKETS,
            registry=reg,
        )
        self.generated_tokens = prom.Counter(
            "turnloom_generated_tokens",
            "Tokens the models generated, by model.",
            ["model"],
            registry=reg,
        )
        self.prompt_tokens = prom.Counter(
            "turnloom_prompt_tokens",
            "Prompt tokens the models were given, by model.",
            ["model"],
            registry=reg,
        )
        self.generations = prom.Counter(
            "turnloom_generations",
            "Generations, by model and outcome (ok, cancelled, timeout, error).",
            ["model", "outcome"],
            registry=reg,
        )
        self.rejections = prom.Counter(
            "turnloom_rejections", "Host operations refused, by error code.", ["code"], registry=reg
        )
        self.sessions = prom.Gauge("turnloom_sessions_open", "Open wire sessions.", registry=reg)
        #: Per agent with an open turn: (its turn id, when it started), on the engine clock.
        self._started: dict[int, tuple[int, float]] = {}
        #: Per agent with a paused turn: (its turn id, when the pause began).
        self._paused: dict[int, tuple[int, float]] = {}
        #: The labelled children in use, by their labels (made once each).
        self._models: dict[str, tuple[Any, Any, Any]] = {}
        self._outcomes: dict[tuple[str, str], Any] = {}
        self._statuses: dict[Any, Any] = {}
        # Counted at each scrape: the pauses seen here, until `count_paused` says better.
        self.paused_now.set_function(lambda: len(self._paused))

    def count_paused(self, count: Callable[[], float]) -> None:
        """Read the turns paused now from `count` at each scrape (the engine's own agents, so
        that a turn restored paused from a store counts too: it paused in another process)."""
        self.paused_now.set_function(count)

    def count_sessions(self, count: Callable[[], float]) -> None:
        """Read the open sessions from `count` at each scrape (the server's session count)."""
        self.sessions.set_function(count)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format, as a scrape gets it."""
        return bytes(prom.generate_latest(self.registry))

    # --- the observer ------------------------------------------------------------------------

    def turn_started(self, agent: Any, turn: Turn) -> None:
        """Note when the turn started."""
        self._started[agent.agent_id] = (turn.turn_id, agent.runtime.clock.now())

    def paused(self, agent: Any, turn: Turn, info: PauseInfo) -> None:
        """Count the pause and note when it began."""
        self._paused[agent.agent_id] = (turn.turn_id, agent.runtime.clock.now())

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """Book the pause that just ended."""
        self._pause_ended(agent, turn.turn_id)

    def agent_added(self, agent: Any) -> None:
        """An agent restored paused: its pause began in another process (or before these
        metrics), when its snapshot says; it is booked when it ends, like any other."""
        turn = agent.turn
        if turn.pause is not None:
            self._paused[agent.agent_id] = (turn.turn_id, turn.pause.started_at)

    def agent_removed(self, agent_id: int) -> None:
        """Forget what was noted of an agent gone (destroyed, or let go to its store paused:
        its pause is booked where it ends)."""
        self._paused.pop(agent_id, None)
        self._started.pop(agent_id, None)

    def _pause_ended(self, agent: Any, turn_id: int) -> None:
        noted = self._paused.pop(agent.agent_id, None)
        if noted is not None and noted[0] == turn_id:
            self.pause_seconds.observe(agent.runtime.clock.now() - noted[1])

    def _of_model(self, model: str) -> tuple[Any, Any, Any]:
        """The model's children of the token counters and the first-token histogram, made
        once: prometheus-client's `labels()` costs more than the count itself."""
        found = self._models.get(model)
        if found is None:
            found = self._models[model] = (
                self.generated_tokens.labels(model),
                self.prompt_tokens.labels(model),
                self.first_token_seconds.labels(model),
            )
        return found

    def generation_ended(self, agent: Any, turn: Turn, node: str, record: GenerationRecord) -> None:
        """Count the generation's tokens and time to the first token."""
        model = record.model
        generated, prompt, first_token = self._models.get(model) or self._of_model(model)
        generated.inc(record.tokens)
        prompt.inc(record.prompt_tokens)
        if record.seconds_to_first_token is not None:
            first_token.observe(record.seconds_to_first_token)
        error = record.error
        outcome = "ok" if not error else error if error in ("cancelled", "timeout") else "error"
        counter = self._outcomes.get((model, outcome))
        if counter is None:
            counter = self._outcomes[model, outcome] = self.generations.labels(model, outcome)
        counter.inc()

    def turn_ended(self, agent: Any, turn: Turn, result: TurnResult) -> None:
        """Count the turn by status and observe its duration."""
        self._pause_ended(agent, turn.turn_id)  # a turn cancelled or timed out while paused
        status = result.status
        counter = self._statuses.get(status)
        if counter is None:
            counter = self._statuses[status] = self.turns.labels(status.value)
        counter.inc()
        started = self._started.pop(agent.agent_id, None)
        if started is not None and started[0] == turn.turn_id:  # not one restored mid-way
            elapsed = agent.runtime.clock.now() - started[1] - result.paused_duration_s
            self.turn_seconds.observe(max(0.0, elapsed))

    def rejected(self, agent_id: int | None, operation: str, code: int, message: str) -> None:
        """Count the refusal by its code."""
        self.rejections.labels(str(code)).inc()
