"""A callback or tool handler with the wrong signature is refused when it is
set (TypeError naming the parameters), on every face; exceptions raised inside a well-formed
callback stay isolated. Timed-out polls of a paused turn leave no waiter behind."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import graph_of

#: Each setter, the parameters its callback is called with, and a callback that fits.
SETTERS: list[tuple[str, tuple[str, ...]]] = [
    ("set_on_paused", ("node_name", "pending_exit")),
    ("set_on_resumed", ("node_name", "resume_node")),
    ("set_on_answer_text", ("text", "is_delta", "is_final")),
    ("set_on_turn_complete", ("result",)),
    ("set_on_tool_call_with_id", ("call_id", "tool_name", "arguments_json")),
    ("set_on_tool_call_event", ("event",)),
    ("register_tool", ("call",)),
]


def gate_graph() -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="say")),
        ("say", tl.CannedResponseParams(lines=["done"])),
    )


def setter(agent: Any, name: str) -> Callable[[Any], None]:
    if name == "register_tool":
        return functools.partial(agent.register_tool, "get_time")
    return getattr(agent, name)  # type: ignore[no-any-return]


def wrong_arity(count: int) -> list[Callable[..., None]]:
    """Callbacks that cannot be called with `count` positional arguments."""

    def one_too_many(*args: Any, extra: Any) -> None: ...

    return [
        lambda: None,
        eval(f"lambda {', '.join(f'a{i}' for i in range(count + 1))}: None"),
        one_too_many,
    ]


def fitting(count: int) -> list[Callable[..., None]]:
    """Callbacks that can."""

    def defaults(*_: Any, unused: int = 0) -> None: ...

    return [
        eval(f"lambda {', '.join(f'a{i}' for i in range(count))}: None"),
        lambda *args: None,
        defaults,
        functools.partial(lambda prefix, *rest: None, "bound"),
    ]


@pytest.mark.parametrize("name, params", SETTERS)
def test_a_callback_with_the_wrong_signature_is_refused_when_set(
    engine: tl.Engine, name: str, params: tuple[str, ...]
) -> None:
    agent = engine.create_agent(gate_graph())
    for callback in wrong_arity(len(params)):
        with pytest.raises(TypeError, match=f"{name}: the callback is called as") as caught:
            setter(agent, name)(callback)
        assert f"callback({', '.join(params)})" in str(caught.value)
    with pytest.raises(TypeError, match="must be callable or None"):
        setter(agent, name)("not a function")
    for callback in fitting(len(params)):
        setter(agent, name)(callback)
    setter(agent, name)(None)


def test_builtins_are_accepted_and_a_refused_callback_keeps_the_previous_one(
    engine: tl.Engine,
) -> None:
    agent = engine.create_agent(gate_graph())
    results: list[tl.TurnResult] = []
    agent.set_on_turn_complete(results.append)  # a builtin method: (object, /)
    agent.set_on_answer_text(max)  # no inspectable signature: taken on trust
    with pytest.raises(TypeError):
        agent.set_on_turn_complete(lambda: None)
    agent.set_on_answer_text(None)
    assert agent.send_message("hi", timeout=5).paused
    agent.resume(timeout=5)
    assert [r.text for r in results] == ["done"]


def test_register_tool_wants_a_string_name(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    with pytest.raises(TypeError, match="register_tool: name must be a string, got int"):
        agent.register_tool(7, lambda call: "x")  # type: ignore[arg-type]
    assert not agent.has_paused_tool_batch()


def test_an_exception_inside_a_well_formed_callback_stays_isolated(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())

    def broken(node_name: str, pending_exit: str) -> None:
        raise RuntimeError("a host bug")

    agent.set_on_paused(broken)
    assert agent.send_message("hi", timeout=5).paused
    step = agent.resume(timeout=5)
    assert step.result is not None and step.result.text == "done"


def test_the_asyncio_face_checks_callbacks_too() -> None:
    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock()) as engine:
            agent = await engine.create_agent(gate_graph())
            with pytest.raises(TypeError, match=r"callback\(result\)"):
                agent.set_on_turn_complete(lambda: None)
            with pytest.raises(TypeError, match=r"callback\(call\)"):
                agent.register_tool("get_time", lambda: "noon")

    asyncio.run(main())


# --- polling a paused turn leaves nothing behind -------------------------------------------

POLLS = 2000


def test_cancelled_polls_of_a_paused_turn_leave_no_waiter() -> None:
    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock()) as engine:
            agent = await engine.create_agent(gate_graph())
            assert (await agent.send_message("hi")).paused
            turn = agent._core.turn
            for _ in range(POLLS):
                task = asyncio.ensure_future(agent.wait_complete())
                await asyncio.sleep(0)  # the poll registers its waiter, then gives up
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
            assert not turn.waiters
            step = await agent.resume()
            assert step.result is not None and step.result.text == "done"

    asyncio.run(main())


def test_timed_out_blocking_polls_leave_no_waiter(engine: tl.Engine, engine_kind: str) -> None:
    agent = engine.create_agent(gate_graph())
    assert agent.send_message("hi", timeout=5).paused
    for _ in range(20):
        with pytest.raises(tl.Timeout):
            agent.wait_complete(timeout=0.01)
    agent.wait(timeout=5)  # a round trip through the loop: the cancellations ran before it
    inner: Any = agent._agent
    if engine_kind == "embedded":
        assert not inner._core.turn.waiters
    else:
        assert inner._completions == [] and inner._steps == []
    assert agent.resume(timeout=5).result is not None
