"""The collector pause (engine/collector.py): off while any pause is held, back on after, and
what was built meanwhile goes to the oldest generation unwalked, unless the host froze objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from turnloom.engine.support.collector import CollectorPause


@pytest.fixture
def collecting() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


class Node:
    """A container the collector tracks."""

    def __init__(self, index: int) -> None:
        self.index = index


def in_generation(objects: list[Node], generation: int) -> int:
    ids = {id(o) for o in objects}
    return sum(1 for o in gc.get_objects(generation) if id(o) in ids)


def test_the_collector_is_off_while_any_pause_is_held(collecting: None) -> None:
    first, second = CollectorPause(), CollectorPause()
    assert not gc.isenabled()
    first.release()
    assert not gc.isenabled()
    second.release()
    second.release()  # twice is once
    assert gc.isenabled()


def test_what_was_built_under_a_pause_lands_in_the_oldest_generation(collecting: None) -> None:
    pause = CollectorPause()
    built = [Node(i) for i in range(1000)]
    assert in_generation(built, 0) == 1000
    pause.release()
    assert in_generation(built, 0) == in_generation(built, 1) == 0
    assert in_generation(built, 2) == 1000
    assert gc.get_freeze_count() == 0  # nothing left exempt from collection


def test_objects_the_host_froze_stay_frozen(collecting: None) -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        pause = CollectorPause()
        built = [Node(i) for i in range(100)]
        pause.release()
        assert gc.get_freeze_count() == frozen
        assert in_generation(built, 0) == 100  # left where the collector put them
    finally:
        gc.unfreeze()


def test_a_host_that_turned_the_collector_off_keeps_it_off() -> None:
    was = gc.isenabled()
    gc.disable()
    try:
        CollectorPause().release()
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()
