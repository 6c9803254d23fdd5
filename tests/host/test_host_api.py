"""The host API: blocking and async faces, callbacks, blocking calls from callbacks, structured
logs (docs/reference/host.md)."""

from __future__ import annotations

import asyncio
import threading

import pytest
import structlog

import turnloom as tl
from tests.helpers import Recorder, graph_of


def gate_graph() -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="say")),
        ("say", tl.CannedResponseParams(lines=["done"])),
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda a: a.resume(),
        lambda a: a.send_message("x"),
        lambda a: a.change_params("say", {"lines": ["y"]}),
        lambda a: a.get_params("say"),
        lambda a: a.cancel(),
        lambda a: a.wait(),
    ],
)
def test_blocking_call_from_a_callback_raises_at_once(engine: tl.Engine, call: object) -> None:
    agent = engine.create_agent(gate_graph())
    caught: list[BaseException] = []

    def on_paused(node: str, exit_: str) -> None:
        try:
            call(agent)  # type: ignore[operator]
        except BaseException as exc:
            caught.append(exc)

    agent.set_on_paused(on_paused)
    agent.send_message("hi", timeout=5)
    assert len(caught) == 1 and isinstance(caught[0], tl.BlockingCallInCallback)
    assert "_async()" in str(caught[0])
    assert agent.resume(timeout=5).result.text == "done"  # type: ignore[union-attr]


def test_async_forms_from_callbacks_drive_the_turn(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    done = threading.Event()

    def on_paused(node: str, exit_: str) -> None:
        agent.change_params_async("say", {"lines": ["changed in callback"]})
        agent.resume_async()

    agent.set_on_paused(on_paused)
    agent.set_on_turn_complete(lambda result: done.set())
    agent.send_message_async("hi")
    assert done.wait(5)
    assert agent.last_result is not None and agent.last_result.text == "changed in callback"


def test_a_failing_callback_does_not_break_the_turn(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())

    def explode(*args: object) -> None:
        raise ValueError("host bug")

    agent.set_on_paused(explode)
    agent.set_on_answer_text(explode)
    with structlog.testing.capture_logs() as logs:
        assert agent.send_message("hi", timeout=5).paused
        assert agent.resume(timeout=5).result.text == "done"  # type: ignore[union-attr]
    assert any(e["event"] == "listener.failed" for e in logs)


@pytest.mark.embedded_only  # blocks the engine's own loop; tests/protocol covers the client
def test_blocking_timeout_is_1003(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    agent.send_message("hi")
    gate_release, busy = threading.Event(), threading.Event()

    def keep_busy() -> None:
        busy.set()
        gate_release.wait(2)

    # Keep the loop thread busy (it holds the loop) so wait() cannot be answered in time.
    engine._runner.loop.call_soon_threadsafe(keep_busy)  # type: ignore[attr-defined]
    assert busy.wait(2)
    with pytest.raises(tl.TurnloomError) as info:
        agent.wait(timeout=0.05)
    gate_release.set()
    assert info.value.code == tl.ErrorCode.Timeout


def test_closing_the_engine_cancels_open_turns() -> None:
    with tl.Engine(tl.MockModel("mock")) as engine:
        agent = engine.create_agent(gate_graph())
        rec = Recorder(agent)
        agent.send_message("hi")
    assert [r.status for r in rec.results] == [tl.TurnStatus.CANCELLED]


def test_asyncio_face_runs_on_the_callers_loop() -> None:
    async def main() -> None:
        loop_thread = threading.get_ident()
        seen: list[int] = []
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(gate_graph())
            agent.set_on_paused(lambda node, exit_: seen.append(threading.get_ident()))
            step = await agent.send_message("hi")
            assert step.pause is not None and step.pause.node_name == "gate"
            with pytest.raises(tl.TurnloomError) as info:
                await agent.resume("nowhere")
            assert info.value.code == tl.ErrorCode.UnknownNode
            result = (await agent.resume()).result
            assert result is not None and result.text == "done"
        assert seen == [loop_thread]

    asyncio.run(main())


def test_turn_lifecycle_and_rejections_are_logged_with_context(engine: tl.Engine) -> None:
    agent = engine.create_agent(gate_graph())
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(0))
    try:
        with structlog.testing.capture_logs() as logs:
            agent.send_message("hi")
            with pytest.raises(tl.TurnloomError):
                agent.send_message("busy")
            agent.resume()
    finally:
        structlog.reset_defaults()
    by_event = {e["event"]: e for e in logs}
    for event in ("turn.started", "turn.paused", "turn.resumed", "turn.completed"):
        assert by_event[event]["agent_id"] == agent.agent_id, event
        assert by_event[event]["turn_id"] == 1, event
    for event in ("turn.started", "turn.paused", "turn.resumed"):
        assert by_event[event]["node"] == "gate", event
    assert by_event["turn.completed"]["status"] == "success"
    assert by_event["rejected"]["code"] == 3004
    assert by_event["rejected"]["operation"] == "send_message"
