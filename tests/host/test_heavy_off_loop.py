"""Heavy graphs and params are checked on a worker thread by the embedded faces (no request
holds the engine loop for long), answered exactly as light ones are.

A graph of hundreds of lines or tools (the largest the limits allow takes 300-500 ms to check
and compile) is prepared off the loop, and the loop goes on serving other agents meanwhile; a
heavy node's `change_params` / `get_params` likewise. Light ones stay on the loop.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import blocked_prepare
from turnloom.engine.core import EngineCore
from turnloom.engine.turns.param_change import HEAVY
from turnloom.host import aio

MANY = HEAVY + 44  # lines: a graph and a node heavier than HEAVY


def lines_graph(count: int, exit_to: str = "") -> tl.GraphDescription:
    lines = [f"line {i}" for i in range(count)]
    return (
        tl.GraphDescription()
        .add_node("gate", tl.PauseParams(default_exit="say"))
        .add_node("say", tl.CannedResponseParams(lines=lines, default_exit=exit_to))
        .set_start_node("gate")
    )


def tools_graph(count: int) -> tl.GraphDescription:
    """A ToolCall node of `count` tools of one parameter each (128: heavier than HEAVY)."""
    tools = [
        tl.ToolDefinition(f"tool_{i}", "A tool.", [tl.ToolParamDefinition("x", "string", "X.")])
        for i in range(count)
    ]
    return (
        tl.GraphDescription()
        .add_node("act", tl.ToolCallParams(tools=tools))
        .set_start_node("act")
        .set_default_model_name("mock")
    )


def threads_of(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[threading.Thread]:
    """Record the thread each call of `owner.name` runs on."""
    seen: list[threading.Thread] = []
    original = getattr(owner, name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        seen.append(threading.current_thread())
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, recorded)
    return seen


def test_a_heavy_graph_is_prepared_on_a_worker_thread_a_light_one_on_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = threads_of(monkeypatch, EngineCore, "prepare_agent")

    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            heavy = await engine.create_agent(lines_graph(MANY))
            light = await engine.create_agent(lines_graph(3))
            for agent in (heavy, light):
                assert (await agent.send_message("hi")).paused
                assert (await agent.resume()).final.text == "line 0"
        loop_thread = threading.current_thread()
        assert seen[0] is not loop_thread and seen[1] is loop_thread

    asyncio.run(main())


def test_the_loop_serves_other_agents_while_a_heavy_graph_is_prepared(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            other = await engine.create_agent(lines_graph(3))
            started, release = blocked_prepare(monkeypatch)
            creating = asyncio.ensure_future(engine.create_agent(lines_graph(MANY)))
            while not started.is_set():
                await asyncio.sleep(0.001)
            # The heavy graph is being checked: another agent plays a whole turn meanwhile.
            assert (await other.send_message("hi")).paused
            assert (await other.resume()).final.text == "line 0"
            assert not creating.done()
            release.set()
            agent = await creating
            assert (await agent.send_message("hi")).paused

    asyncio.run(main())


@pytest.mark.parametrize("count", [3, MANY])
def test_a_refused_graph_gets_the_same_answer_heavy_or_light(count: int) -> None:
    async def main() -> tuple[int, str]:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            with pytest.raises(tl.TurnloomError) as refused:
                await engine.create_agent(lines_graph(count, exit_to="nowhere"))
            assert engine.agent_ids() == []
            return refused.value.code, refused.value.message

    code, message = asyncio.run(main())
    assert code == tl.ErrorCode.InvalidExitTarget
    assert "nowhere" in message


def test_a_heavy_node_is_changed_and_copied_off_the_loop_and_refused_as_a_light_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    checked = threads_of(monkeypatch, aio, "proposed_params")

    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(tools_graph(128))
            loop_thread = threading.current_thread()
            await agent.change_params("act", {"system_prompt": "Be brief."})
            assert checked and checked[0] is not loop_thread
            copy = await agent.get_params("act")
            assert copy.system_prompt == "Be brief."  # type: ignore[attr-defined]
            assert len(copy.tools) == 128  # type: ignore[attr-defined]
            assert copy is not await agent.get_params("act")
            for bad, code in (
                ({"system_prompt": 5}, tl.ErrorCode.InvalidParamValue),
                ({"tools": []}, tl.ErrorCode.ParamNotMutable),
            ):
                with pytest.raises(tl.TurnloomError) as refused:
                    await agent.change_params("act", bad)
                assert refused.value.code == code
            after = await agent.get_params("act")
            assert after.system_prompt == "Be brief."  # type: ignore[attr-defined]
            assert len(after.tools) == 128  # type: ignore[attr-defined]

    asyncio.run(main())
