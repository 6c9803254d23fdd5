"""Shared fixtures: an engine on a virtual clock with a scripted mock model, embedded or remote,
and a server on loopback for the wire tests.

Every test that takes `engine` runs twice: against the embedded `tl.Engine`, and against a
`tl.connect` client of a server started in-process on 127.0.0.1 that hosts an engine with the
same `clock` and `mock_model`, so a test that advances the clock or scripts the model works for
both. Tests that reach into the embedded engine's internals are marked `embedded_only`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import turnloom as tl
from tests.wire import RawSession
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer

ENGINE_KINDS = ("embedded", "remote")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "embedded_only: run only against the embedded engine (uses its internals)"
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "engine" in metafunc.fixturenames:
        embedded_only = metafunc.definition.get_closest_marker("embedded_only") is not None
        metafunc.parametrize("engine_kind", ENGINE_KINDS[:1] if embedded_only else ENGINE_KINDS)


@pytest.fixture
def clock() -> tl.VirtualClock:
    """Time that only moves when the test says so."""
    return tl.VirtualClock()


@pytest.fixture
def mock_model() -> tl.MockModel:
    """The scripted model every test engine loads, named 'mock'."""
    return tl.MockModel("mock")


@pytest.fixture
def engine(
    engine_kind: str, clock: tl.VirtualClock, mock_model: tl.MockModel
) -> Iterator[tl.Engine | tl.RemoteEngine]:
    """The engine under test on the virtual clock: embedded, or over the wire (loopback)."""
    if engine_kind == "embedded":
        with tl.Engine(mock_model, clock=clock) as eng:
            yield eng
        return
    with (
        BackgroundServer(lambda: AsyncEngine(mock_model, clock=clock)) as server,
        tl.connect(*server.address) as remote,
    ):
        yield remote


@pytest.fixture
def server(clock: tl.VirtualClock, mock_model: tl.MockModel) -> Iterator[BackgroundServer]:
    """A server on 127.0.0.1 (a free port) hosting the mock model on the virtual clock."""
    with BackgroundServer(lambda: AsyncEngine(mock_model, clock=clock)) as bg:
        yield bg


@pytest.fixture
def raw_session(server: BackgroundServer) -> Iterator[Callable[..., RawSession]]:
    """Open raw sessions (to `server` by default); they are closed before the server is."""
    opened: list[RawSession] = []

    def open_session(address: tuple[str, int] | None = None, **kwargs: Any) -> RawSession:
        session = RawSession(address or server.address, **kwargs)
        opened.append(session)
        return session

    yield open_session
    for session in opened:
        session.close()
