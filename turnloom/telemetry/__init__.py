"""Traces and metrics of every turn: OpenTelemetry spans (`tracing`, the `otel` extra) and
Prometheus metrics (`metrics`, the `metrics` extra), each an engine observer
(`engine.turns.observers`). Without their packages nothing here is imported by the library.
May import `protocol`, `engine` and `states`."""
