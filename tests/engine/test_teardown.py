"""Freeing large values a step per loop iteration (engine/teardown.py): a destroyed agent's
long dialog, as a large frame's decoded value, never all in one call."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.support import teardown
from turnloom.engine.turns.dialog.projection import Interaction


def graph() -> tl.GraphDescription:
    return graph_of(("reply", tl.CannedResponseParams(lines=["ok"])))


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Each teardown step run by `free_later`, as whether it finished."""
    done: list[bool] = []
    step = teardown.Teardown.step

    def counted(self: teardown.Teardown, budget: int = teardown.TEARDOWN_STEP_ITEMS) -> bool:
        done.append(step(self, budget))
        return done[-1]

    monkeypatch.setattr(teardown.Teardown, "step", counted)
    return done


@pytest.mark.parametrize(
    "turns, freed_in_steps", [(5 * teardown.TEARDOWN_STEP_ITEMS, True), (3, False)]
)
def test_a_destroyed_agents_long_dialog_is_freed_a_step_per_iteration(
    steps: list[bool], turns: int, freed_in_steps: bool
) -> None:
    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(graph())
            assert (await agent.send_message("hi")).result is not None
            agent._core.dialog.extend(Interaction(f"m{i}") for i in range(turns - 1))
            await agent.destroy()
            assert steps == []  # nothing freed on the way out
            assert len(agent._core.dialog) == (0 if freed_in_steps else turns)
            for _ in range(20):
                await asyncio.sleep(0)

    asyncio.run(main())
    if freed_in_steps:
        assert len(steps) >= 5 and steps[-1] is True and not any(steps[:-1])
    else:
        assert steps == []


def test_an_unloaded_durable_agents_long_dialog_is_freed_a_step_per_iteration(
    steps: list[bool], tmp_path: Path
) -> None:
    # As when another worker takes the agent over, or its session lets it go.
    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock"), store=tmp_path / "agents.db") as engine:
            agent = await engine.create_agent(graph())
            assert (await agent.send_message("hi")).result is not None
            agent._core.dialog.extend(Interaction(f"m{i}") for i in range(10_000))
            agent._core.unload()
            assert steps == [] and agent._core.dialog == []
            for _ in range(20):
                await asyncio.sleep(0)

    asyncio.run(main())
    assert len(steps) >= 5 and steps[-1] is True
