"""Fixtures for wire tests: a server in-process on loopback, on the shared clock and model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import turnloom as tl
from tests.protocol.wire import RawSession
from turnloom.host.aio import AsyncEngine
from turnloom.protocol.background import BackgroundServer


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
