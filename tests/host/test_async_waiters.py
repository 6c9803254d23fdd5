"""`await agent.send_message()` / `resume()` return even when the step ends at once.

The defect this guards against: the asyncio face used to start the operation and only then
register the caller as a waiter, so a step that ended synchronously in between was lost: with an
eager task factory a graph starting with a Pause node never returned from `send_message`, and a
cancel run from the `on_resumed` callback left `resume` hanging.
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Coroutine, Generator
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import graph_of

TIMEOUT_S = 5.0


def _gate_graph() -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="say")),
        ("say", tl.CannedResponseParams(lines=["done"])),
    )


@types.coroutine
def _drive(coro: Coroutine[Any, Any, Any], first: Any) -> Generator[Any, Any, Any]:
    """Go on driving `coro` after its first step ran eagerly (Python 3.11 has no eager tasks)."""
    pending = first
    while True:
        try:
            yield pending
        except BaseException as exc:  # a cancel thrown into the task goes into the coroutine
            try:
                pending = coro.throw(exc)
            except StopIteration as stop:
                return stop.value
        else:
            try:
                pending = coro.send(None)
            except StopIteration as stop:
                return stop.value


def _eager_factory(
    loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any
) -> asyncio.Future[Any]:
    """A task factory that runs a coroutine's first step at once, as Python 3.12's
    `asyncio.eager_task_factory` does."""
    native = getattr(asyncio, "eager_task_factory", None)
    if native is not None:
        return native(loop, coro, **kwargs)  # type: ignore[no-any-return]
    try:
        first = coro.send(None)
    except StopIteration as stop:
        done: asyncio.Future[Any] = loop.create_future()
        done.set_result(stop.value)
        return done
    return asyncio.Task(_drive(coro, first), loop=loop)


def test_send_message_returns_when_the_walk_pauses_at_once() -> None:
    async def main() -> tl.Step:
        asyncio.get_running_loop().set_task_factory(_eager_factory)
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(_gate_graph())
            step = await asyncio.wait_for(agent.send_message("hello"), TIMEOUT_S)
            final = await asyncio.wait_for(agent.resume(), TIMEOUT_S)
            assert final.result is not None and final.result.text == "done"
            return step

    step = asyncio.run(main())
    assert step.pause is not None and step.pause.node_name == "gate"


def test_resume_returns_when_a_callback_cancels_the_turn_at_once() -> None:
    async def main() -> tl.Step:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(_gate_graph())
            core = engine.core.agents[agent.agent_id]
            # The engine-side cancel is synchronous: the turn ends inside `resume`, before the
            # coroutine gets to wait for it.
            agent.set_on_resumed(lambda node, to: core.cancel())
            await agent.send_message("hello")
            return await asyncio.wait_for(agent.resume(), TIMEOUT_S)

    step = asyncio.run(main())
    assert step.result is not None and step.result.status is tl.TurnStatus.CANCELLED


def test_a_refused_send_leaves_no_waiter_behind() -> None:
    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(_gate_graph())
            await agent.send_message("hello")
            with pytest.raises(tl.AgentBusy):
                await agent.send_message("again")
            assert engine.core.agents[agent.agent_id].turn.waiters is None

    asyncio.run(main())
