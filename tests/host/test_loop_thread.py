"""The loop a blocking caller drives itself (host/loop_thread.py): who runs what, and when.

These run on the real clock (a pause timer must fire while no call is being made), with
generous limits that only a hang would exceed; nothing here asserts how long anything took.
"""

from __future__ import annotations

import asyncio
import threading

import pytest

import turnloom as tl
from turnloom.host.loop_thread import LoopThread

from ..helpers import Recorder, graph_of

PATIENCE_S = 10.0


def gate(timeout_ms: int = 0) -> tl.GraphDescription:
    return graph_of(
        (
            "gate",
            tl.PauseParams(default_exit="reply", timeout_exit="late", pause_timeout_ms=timeout_ms),
        ),
        ("reply", tl.CannedResponseParams(lines=["done"])),
        ("late", tl.CannedResponseParams(lines=["too late"])),
    )


def test_a_blocking_call_runs_the_turn_and_its_callbacks_on_the_calling_thread() -> None:
    with tl.Engine(tl.MockModel("mock")) as engine:
        agent = engine.create_agent(gate())
        threads: list[str] = []
        agent.set_on_paused(lambda node, exit_: threads.append(threading.current_thread().name))
        assert agent.send_message("hi").paused
        assert threads == [threading.current_thread().name]


def test_a_timer_armed_by_a_blocking_call_fires_while_no_call_is_made() -> None:
    # The loop thread slept with no deadline before the call armed the pause timer: it must be
    # woken to keep it, since nobody calls the engine afterwards.
    with tl.Engine(tl.MockModel("mock")) as engine:
        agent = engine.create_agent(gate(timeout_ms=50))
        ended = threading.Event()
        results: list[tl.TurnResult] = []
        threads: list[str] = []

        def complete(result: tl.TurnResult) -> None:
            results.append(result)
            threads.append(threading.current_thread().name)
            ended.set()

        agent.set_on_turn_complete(complete)
        assert agent.send_message("hi").paused
        assert ended.wait(PATIENCE_S), "the pause timer never fired"
        assert results[0].text == "too late"
        assert threads == ["turnloom-loop"]


def test_blocking_calls_leave_the_loop_thread_asleep_until_its_own_timer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The loop thread sleeps until the stall warning's timer, which outlives the turns; a
    # blocking call that armed nothing earlier must not wake it (each wake-up is a thread
    # switch, a fifth of a blocking turn).
    wakes = [0]
    wake = LoopThread._wake

    def counted(self: LoopThread) -> None:
        wakes[0] += 1
        wake(self)

    monkeypatch.setattr(LoopThread, "_wake", counted)
    with tl.Engine(tl.MockModel("mock")) as engine:
        agent = engine.create_agent(gate())
        assert agent.send_message("hi").paused  # arms the stall timer: the loop thread is woken
        runner = engine._runner
        for _ in range(1000):  # until it sleeps again, now until that timer
            if runner.loop_thread_sleeps_for is not None:
                break
            threading.Event().wait(0.01)
        assert runner.loop_thread_sleeps_for is not None
        wakes[0] = 0
        agent.resume()
        for _ in range(50):
            assert agent.send_message("hi").paused
            assert agent.resume().result is not None  # type: ignore[union-attr]
        assert wakes[0] == 0


def test_an_async_call_made_before_a_blocking_one_runs_first() -> None:
    with tl.Engine(tl.MockModel("mock")) as engine:
        agent = engine.create_agent(gate())
        rec = Recorder(agent)
        assert agent.send_message("hi").paused
        resumed = agent.resume_async()
        cancelled = agent.cancel()
        # The resume was made first (answered, not 3012), then the cancel met the resumed turn.
        step = resumed.result(PATIENCE_S)
        assert step.result is not None
        expected = tl.TurnStatus.CANCELLED if cancelled else tl.TurnStatus.SUCCESS
        assert [r.status for r in rec.results] == [expected]


def test_blocking_calls_from_many_threads_each_get_their_own_answer() -> None:
    with tl.Engine(tl.MockModel("mock")) as engine:
        agents = [engine.create_agent(gate()) for _ in range(8)]
        failures: list[BaseException] = []

        def drive(agent: tl.Agent) -> None:
            try:
                for _ in range(100):
                    assert agent.send_message("hi", timeout=PATIENCE_S).paused
                    step = agent.resume(timeout=PATIENCE_S)
                    assert step.result is not None and step.result.text == "done"
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=drive, args=(a,)) for a in agents]
        for t in threads:
            t.start()
        for t in threads:
            t.join(PATIENCE_S * 10)
        assert not any(t.is_alive() for t in threads), "a blocking call hung"
        assert failures == []


def test_a_caller_waiting_on_the_loop_thread_is_woken_when_its_answer_arrives() -> None:
    runner = LoopThread("test-loop")
    try:
        answer = runner.loop.create_future

        async def wait_for_other_thread() -> str:
            future = answer()
            # Resolved later by a callback the loop thread runs; the caller has nothing to run
            # meanwhile, so it waits for its call to end while the loop thread watches.
            runner.loop.call_later(0.05, future.set_result, "answered")
            return await future

        assert runner.block(wait_for_other_thread(), "wait", PATIENCE_S) == "answered"
    finally:
        runner.stop()


def test_a_blocking_call_gives_up_with_1003_when_its_answer_is_late() -> None:
    runner = LoopThread("test-loop")
    try:
        with pytest.raises(tl.TurnloomError) as info:
            runner.block(asyncio.sleep(PATIENCE_S), "sleep", 0.05)
        assert info.value.code == tl.ErrorCode.Timeout
        assert runner.block(asyncio.sleep(0, "still serving"), "sleep", PATIENCE_S) == (
            "still serving"
        )
    finally:
        runner.stop()


def test_a_blocking_call_from_a_callback_on_the_calling_thread_is_refused() -> None:
    with tl.Engine(tl.MockModel("mock")) as engine:
        agent = engine.create_agent(gate())
        refused: list[BaseException] = []

        def paused(node: str, exit_: str) -> None:
            try:
                agent.resume()
            except BaseException as exc:
                refused.append(exc)

        agent.set_on_paused(paused)
        assert agent.send_message("hi").paused  # the callback ran on this thread
        assert len(refused) == 1 and isinstance(refused[0], tl.BlockingCallInCallback)
        assert "resume_async" in str(refused[0])
        assert agent.wait().paused  # and the refused call changed nothing


def test_an_engine_refused_at_construction_leaves_no_loop_thread() -> None:
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises((TypeError, ValueError, tl.TurnloomError)):
        tl.Engine(tl.MockModel("mock"), store=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tl.Engine(tl.MockModel("mock"), settings={"pause_stall_warn_ms": 1})  # type: ignore[arg-type]
    left = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    assert left == []


def test_a_blocking_call_of_something_not_a_coroutine_is_refused_at_once() -> None:
    runner = LoopThread("test-loop")
    try:
        future = runner.loop.create_future()
        with pytest.raises(TypeError, match="coroutine is required"):
            runner.block(future, "wait")  # type: ignore[arg-type]
    finally:
        runner.stop()
