"""Seeing inside an engine from the host app: engine-wide observers, the inspector page,
Prometheus metrics and OpenTelemetry spans (docs/guides/inspector.md).

Each is optional: the inspector needs the `inspect` extra (aiohttp), metrics the `metrics`
extra (prometheus-client), spans the `otel` extra (opentelemetry-api). With opentelemetry-api
installed every engine traces its turns to the global tracer provider, which records nothing
until the host app configures one.
"""

from __future__ import annotations

import ssl as ssl_module
from functools import partial
from typing import TYPE_CHECKING, Any

from ..engine.support.extras import install_hint
from ..engine.turns.observers import TurnObserver, implemented_hooks, tell

if TYPE_CHECKING:
    from ..engine.core import EngineCore
    from ..inspect.app import Inspector, KeyCheck
    from ..telemetry.metrics import TurnMetrics


def default_observers() -> list[TurnObserver]:
    """The observers every engine starts with: a `TurnTracer` when opentelemetry-api is
    installed and the app has set a tracer provider before making the engine, else none (an
    engine made before the provider is set takes `engine.add_observer(TurnTracer())`). So
    without a provider, traces cost a turn nothing at all, not even a call."""
    from ..telemetry import tracing

    return [tracing.TurnTracer()] if tracing.provider_is_set() else []


class ObservedEngine:
    """The observing half of `AsyncEngine`: observers, `inspect`, `metrics`."""

    core: EngineCore
    _inspectors: list[Inspector]
    #: Observers that will never record anything (`TurnObserver.records_nothing`): listed,
    #: but kept out of the turns' way, so that they cost a turn nothing.
    _resting_observers: list[TurnObserver]

    def _bind(self) -> None:
        raise NotImplementedError

    def add_observer(self, observer: TurnObserver) -> None:
        """Have `observer` watch every agent of this engine (`TurnObserver`), until removed."""
        if not isinstance(observer, TurnObserver):
            raise TypeError(f"an observer is a TurnObserver, got {type(observer).__name__}")
        if observer in self.core.observers or observer in self._resting_observers:
            return
        if observer.records_nothing():
            self._resting_observers.append(observer)
            return
        self.core.observers.append(observer)
        if "agent_added" in implemented_hooks(observer):
            # The agents already here (a pause restored from a store among them) are news to it.
            for agent in list(self.core.agents.values()):
                tell((observer,), "agent_added", agent)

    def remove_observer(self, observer: TurnObserver) -> None:
        """Stop `observer` watching (nothing if it was not)."""
        for kept in (self.core.observers, self._resting_observers):
            if observer in kept:
                kept.remove(observer)

    @property
    def observers(self) -> list[TurnObserver]:
        """The engine's observers, in the order they are called (a copy), then those that
        record nothing and so are never called (a tracer given a no-op provider)."""
        return [*self.core.observers, *self._resting_observers]

    def metrics(self, registry: Any = None) -> TurnMetrics:
        """Count this engine's turns into a Prometheus `registry` (a new one if None): the
        `TurnMetrics` returned holds it; expose it with prometheus-client as the app likes."""
        from ..telemetry import metrics

        if not metrics.available():
            raise ImportError(f"metrics need prometheus-client: {install_hint('metrics')}")
        observer = metrics.TurnMetrics(registry)
        observer.count_paused(partial(paused_turns, self.core))
        self.add_observer(observer)
        return observer

    async def inspect(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        *,
        ssl: ssl_module.SSLContext | None = None,
        auth_key: KeyCheck | None = None,
        insecure: bool = False,
    ) -> Inspector:
        """Serve the inspector page of this engine on `host`:`port` (0: a free port; its
        `url` says which). Loopback only, unless `ssl` and `auth_key` (e.g.
        `turnloom.server.AuthKey`) are given or `insecure` is True. Closed with the engine."""
        try:
            from ..inspect.app import Inspector
        except ImportError as error:
            raise ImportError(f"the inspector needs aiohttp: {install_hint('inspect')}") from error
        self._bind()
        inspector = Inspector(self.core, ssl=ssl, auth_key=auth_key)
        await inspector.start(host, port, insecure=insecure)
        self._inspectors.append(inspector)
        return inspector

    async def close_inspectors(self) -> None:
        """Stop every inspector page this engine serves."""
        inspectors, self._inspectors = self._inspectors, []
        for inspector in inspectors:
            await inspector.close()


def paused_turns(core: EngineCore) -> int:
    """How many of the engine's agents are paused now (read at a scrape, from any thread: the
    agents are copied out of their dict first)."""
    return sum(1 for agent in list(core.agents.values()) if agent.turn.pause is not None)


async def _on_loop(function: Any, *args: Any) -> Any:
    """Run `function(*args)` on the engine loop (observer lists are read there)."""
    return function(*args)


class ObservedEngineFace:
    """The blocking forms of `ObservedEngine`'s methods (mixed into the embedded `Engine`)."""

    _engine: Any
    _runner: Any

    def add_observer(self, observer: TurnObserver) -> None:
        """Have `observer` watch every agent of this engine (`TurnObserver`), until removed."""
        self._runner.block(_on_loop(self._engine.add_observer, observer), "add_observer")

    def remove_observer(self, observer: TurnObserver) -> None:
        """Stop `observer` watching (nothing if it was not)."""
        self._runner.block(_on_loop(self._engine.remove_observer, observer), "remove_observer")

    @property
    def observers(self) -> list[TurnObserver]:
        """The engine's observers, in the order they are called (a copy), then those that
        record nothing (see `AsyncEngine.observers`)."""
        observers: list[TurnObserver] = self._engine.observers
        return observers

    def metrics(self, registry: Any = None) -> TurnMetrics:
        """Count this engine's turns into a Prometheus `registry` (a new one if None)."""
        result: TurnMetrics = self._runner.block(
            _on_loop(self._engine.metrics, registry), "metrics"
        )
        return result

    def inspect(
        self,
        port: int = 0,
        host: str = "127.0.0.1",
        *,
        ssl: ssl_module.SSLContext | None = None,
        auth_key: KeyCheck | None = None,
        insecure: bool = False,
    ) -> Inspector:
        """Serve the inspector page of this engine (see `AsyncEngine.inspect`); its `url` says
        where. It runs on the engine's loop thread and closes with the engine."""
        inspector: Inspector = self._runner.block(
            self._engine.inspect(port, host, ssl=ssl, auth_key=auth_key, insecure=insecure),
            "inspect",
        )
        return inspector
