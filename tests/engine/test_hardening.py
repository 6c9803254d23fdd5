"""Hardening, engine side: the virtual clock refuses times that would break it, the
mock model's request log is bounded, the batch checks are linear, and messages quote values
briefly without ever raising."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

import turnloom as tl
from turnloom.engine.inference.base import GenerationRequest
from turnloom.engine.inference.mock import KEPT_REQUESTS
from turnloom.engine.support.guards import LISTED_IDS, brief, some
from turnloom.engine.support.rejections import InvalidToolResults
from turnloom.engine.turns.exchanges import check_batch
from turnloom.engine.turns.results import PauseInfo, ToolCallEvent, ToolResult

# --- the virtual clock ---------------------------------------------------------------------

BAD_STEPS: list[tuple[Any, type[Exception]]] = [
    (math.nan, ValueError),
    (math.inf, ValueError),
    (-1, ValueError),
    (-1e-9, ValueError),
    (10**400, ValueError),
    (1e308, ValueError),  # finite, but the time it leads to is not
    ("1", TypeError),
    (None, TypeError),
    (True, TypeError),
]


@pytest.mark.parametrize("step, error", BAD_STEPS)
def test_advance_refuses_a_step_that_would_break_the_clock(
    step: Any, error: type[Exception]
) -> None:
    clock = tl.VirtualClock(1e308 if step == 1e308 else 0.0)
    fired: list[float] = []
    clock.call_at(clock.now() + 5, lambda: fired.append(clock.now()))
    with pytest.raises(error, match=r"VirtualClock\.advance"):
        clock.advance(step)
    assert clock.now() == (1e308 if step == 1e308 else 0.0) and fired == []
    if step != 1e308:
        clock.advance(5)  # the deadline still fires
        assert fired == [5.0]


@pytest.mark.parametrize("start", [math.nan, math.inf, -1.0, "0"])
def test_a_virtual_clock_starts_at_a_finite_time(start: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="VirtualClock"):
        tl.VirtualClock(start)


def test_advance_from_another_thread_raises_at_the_caller() -> None:
    clock = tl.VirtualClock()
    with tl.Engine(tl.MockModel("mock"), clock=clock):
        for step, error in BAD_STEPS[:5]:
            with pytest.raises(error):
                clock.advance(step)
        assert clock.now() == 0.0

        def boom() -> None:
            raise RuntimeError("a due callback failed")

        clock.call_at(1.0, boom)
        assert asyncio._get_running_loop() is None  # so advance goes through the loop
        with pytest.raises(RuntimeError, match="a due callback failed"):
            clock.advance(2)
        assert clock.now() == 1.0  # time stops where the failing callback was due
        clock.advance(1)
        assert clock.now() == 2.0


# --- the mock model's request log ----------------------------------------------------------


def test_the_mock_model_keeps_only_its_latest_requests() -> None:
    model = tl.MockModel("mock")

    async def generate_all() -> None:
        for i in range(KEPT_REQUESTS + 5):
            await model.generate(GenerationRequest([{"role": "user", "content": str(i)}]))

    asyncio.run(generate_all())
    assert len(model.requests) == KEPT_REQUESTS
    assert model.requests[0].messages[0]["content"] == "5"
    assert model.requests[-1].messages[0]["content"] == str(KEPT_REQUESTS + 4)


# --- batch checks --------------------------------------------------------------------------


class CountingId(str):
    """A call id that counts how often it is hashed or compared."""

    ops = 0

    def __hash__(self) -> int:
        CountingId.ops += 1
        return str.__hash__(self)

    def __eq__(self, other: object) -> bool:
        CountingId.ops += 1
        return str.__eq__(self, other)


def pause_with(count: int) -> PauseInfo:
    calls = tuple(
        ToolCallEvent(f"c{i:08x}", "get_time", "{}", "detect", "AwaitResult") for i in range(count)
    )
    return PauseInfo("detect", "tool_called", "answer", 0, calls, True)


@pytest.mark.parametrize("kind", ["valid", "duplicates", "unknown"])
def test_the_batch_check_is_linear_in_the_batch(kind: str) -> None:
    count = 2000
    info = pause_with(count)
    ids = [CountingId(c.call_id) for c in info.pending_calls]
    if kind == "duplicates":
        ids = [ids[0]] * count
    elif kind == "unknown":
        ids = [CountingId(f"x{i}") for i in range(count)]
    batch = [ToolResult(cid, "r") for cid in ids]
    CountingId.ops = 0
    if kind == "valid":
        assert len(check_batch(1, info, batch, max_result_bytes=99, max_batch_bytes=10**6)) == count
    else:
        with pytest.raises(InvalidToolResults) as caught:
            check_batch(1, info, batch, max_result_bytes=99, max_batch_bytes=10**6)
        assert f"and {count - LISTED_IDS} more" in caught.value.message
        assert len(caught.value.message) < 2000
    # list.count per id would be count**2 = 4,000,000 comparisons.
    assert CountingId.ops < 20 * count


def test_a_result_that_is_not_utf8_text_is_refused() -> None:
    info = pause_with(1)
    batch = [ToolResult("c00000000", "\ud800")]
    with pytest.raises(InvalidToolResults, match="not valid UTF-8"):
        check_batch(1, info, batch, max_result_bytes=99, max_batch_bytes=99)


# --- brief quotes --------------------------------------------------------------------------


class BrokenRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def deep(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value, {"k": value}]
    return value


@pytest.mark.parametrize(
    "value",
    [deep(5000), "x" * 10**6, 10**5000, BrokenRepr(), list(range(10**5))],
    ids=["deep", "long str", "huge int", "broken repr", "long list"],
)
def test_brief_is_short_and_never_raises(value: Any) -> None:
    quoted = brief(value)
    assert 0 < len(quoted) <= 120


def test_some_lists_a_bounded_number_then_counts_the_rest() -> None:
    assert some(["a", "b"]) == "['a', 'b']"
    listed = some(f"c{i}" for i in range(100))
    assert listed.endswith(f"and {100 - LISTED_IDS} more")
    assert "'c15'" in listed and "'c16'" not in listed
