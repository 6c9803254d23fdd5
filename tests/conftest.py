"""Shared fixtures: an embedded engine on a virtual clock with a scripted mock model."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import turnloom as tl


@pytest.fixture
def clock() -> tl.VirtualClock:
    """Time that only moves when the test says so."""
    return tl.VirtualClock()


@pytest.fixture
def mock_model() -> tl.MockModel:
    """The scripted model every test engine loads, named 'mock'."""
    return tl.MockModel("mock")


@pytest.fixture
def engine(clock: tl.VirtualClock, mock_model: tl.MockModel) -> Iterator[tl.Engine]:
    """An embedded engine on the virtual clock."""
    with tl.Engine(mock_model, clock=clock) as eng:
        yield eng
