"""Tests of the engine observers, OpenTelemetry spans and Prometheus metrics."""
