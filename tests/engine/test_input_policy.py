"""Input policies (docs/reference/turns.md#input-policies): what a player's message does while
the agent's turn is open, on the embedded faces and over the wire.

The graph pauses at `gate` (1 s timeout, to `say`) and then says a canned line, so a turn is open
(paused) for as long as the test wants; the clock is virtual.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import turnloom as tl
from turnloom.server import BackgroundServer

GRAPH = (
    tl.GraphDescription()
    .add_node("gate", tl.PauseParams(default_exit="say", pause_timeout_ms=1000, timeout_exit="say"))
    .add_node("say", tl.CannedResponseParams(lines=["ok"]))
    .set_start_node("gate")
    .set_default_model_name("mock")
)


def _engine(**settings: Any) -> tl.Engine:
    return tl.Engine(
        tl.MockModel("mock"), clock=tl.VirtualClock(), settings=tl.EngineSettings(**settings)
    )


def _users(agent: tl.Agent) -> list[str]:
    return [m["content"] for m in agent.dialog if m["role"] == "user"]


def _fates(agent: tl.Agent) -> list[tuple[str, str, int, int]]:
    events: list[tuple[str, str, int, int]] = []
    agent.set_on_message(
        lambda event: events.append((event.fate.value, event.text, event.turn_id, event.queued))
    )
    return events


def test_reject_is_3004_and_changes_nothing() -> None:
    with _engine() as engine:
        agent = engine.create_agent(GRAPH)
        assert agent.send_message("first").paused
        with pytest.raises(tl.AgentBusy, match="send_message refused"):
            agent.send_message("second")
        assert agent.wait().pause is not None
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS
        assert _users(agent) == ["first"]


def test_enqueue_runs_the_message_as_the_next_turn_in_order() -> None:
    with _engine() as engine:
        agent = engine.create_agent(GRAPH, input_policy="enqueue")
        fates = _fates(agent)
        first = agent.send_message("first")
        later = [agent.send_message_async(text) for text in ("second", "third")]
        assert agent.wait().pause is not None  # runs after both sends: they reached the agent
        assert first.paused
        assert fates == [
            ("started", "first", 1, 0),
            ("queued", "second", 0, 1),
            ("queued", "third", 0, 2),
        ]
        assert not later[0].done()
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS  # the first turn ends...
        second = later[0].result(timeout=10)  # ...and the second starts: its own pause
        assert second.paused and not later[1].done()
        assert fates[-1][:2] == ("started", "second") and fates[-1][3] == 1
        agent.resume()
        assert later[1].result(timeout=10).paused
        agent.resume()
        assert _users(agent) == ["first", "second", "third"]


def test_a_full_queue_is_3004_naming_the_limit_and_keeps_the_queue() -> None:
    with _engine(max_queued_messages=1) as engine:
        agent = engine.create_agent(GRAPH, input_policy=tl.InputPolicy.ENQUEUE)
        agent.send_message("first")
        waiting = agent.send_message_async("second")
        agent.wait()
        with pytest.raises(tl.AgentBusy, match=r"max_queued_messages 1"):
            agent.send_message("third")
        agent.resume()
        assert waiting.result(timeout=10).paused
        agent.resume()
        assert _users(agent) == ["first", "second"]


@pytest.mark.parametrize(
    ("policy", "joined"), [("interrupt", "second"), ("merge", "first\nsecond")]
)
def test_interrupt_and_merge_cancel_the_open_turn_and_start_the_new_one(
    policy: str, joined: str
) -> None:
    with _engine() as engine:
        agent = engine.create_agent(GRAPH, input_policy=policy)
        fates = _fates(agent)
        results: list[tl.TurnResult] = []
        agent.set_on_turn_complete(results.append)
        first = agent.send_message("first")
        step = agent.send_message("second")
        assert step.paused  # the new turn, paused at its own gate
        assert [r.status for r in results] == [tl.TurnStatus.CANCELLED]
        fate, text, turn_id, _ = fates[-1]
        assert (fate, text) == ("interrupted" if policy == "interrupt" else "merged", joined)
        assert turn_id > results[0].turn_id
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS
        assert _users(agent) == [joined]  # the cancelled turn left nothing in the dialog
        assert first.paused


def test_a_timeout_or_cancel_ends_the_turn_and_the_queue_goes_on() -> None:
    clock = tl.VirtualClock()
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        agent = engine.create_agent(GRAPH, input_policy="enqueue")
        agent.send_message("first")
        second = agent.send_message_async("second")
        third = agent.send_message_async("third")
        agent.wait()
        clock.advance(1.5)  # the first pause times out: its turn ends through `say`
        assert second.result(timeout=10).paused
        agent.cancel()
        assert third.result(timeout=10).paused
        agent.resume()
        assert _users(agent) == ["first", "third"]


def test_destroy_drops_waiting_messages_with_3002() -> None:
    with _engine() as engine:
        agent = engine.create_agent(GRAPH, input_policy="enqueue")
        fates = _fates(agent)
        agent.send_message("first")
        waiting = agent.send_message_async("second")
        agent.wait()
        agent.destroy()
        with pytest.raises(tl.AgentAlreadyDestroyed, match="waited in its queue"):
            waiting.result(timeout=10)
        assert fates[-1][:2] == ("dropped", "second")


def test_the_policy_changes_at_rest_only_and_is_checked() -> None:
    with _engine() as engine:
        agent = engine.create_agent(GRAPH)
        with pytest.raises(tl.InvalidParamValue, match="reject, enqueue, interrupt, merge"):
            agent.set_input_policy("shout")
        with pytest.raises(tl.InvalidParamValue, match="create_agent: input policy"):
            engine.create_agent(GRAPH, input_policy="later")
        agent.send_message("first")
        agent.set_input_policy("interrupt")  # paused is at rest
        assert agent.send_message("second").paused
        assert _users(agent) == []


def test_the_asyncio_face_awaits_a_queued_message_until_its_turn() -> None:
    async def main() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock()) as engine:
            agent = await engine.create_agent(GRAPH, input_policy="enqueue")
            await agent.send_message("first")
            queued = asyncio.ensure_future(agent.send_message("second"))
            await asyncio.sleep(0)
            assert not queued.done()
            await agent.resume()
            assert (await queued).paused
            await agent.resume()
            assert [m["content"] for m in agent.dialog if m["role"] == "user"] == [
                "first",
                "second",
            ]

    asyncio.run(main())


def test_over_the_wire_policies_and_fates_match_the_embedded_ones(server: BackgroundServer) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(GRAPH, input_policy="enqueue")
        fates = _fates(agent)
        assert agent.send_message("first").paused
        waiting = agent.send_message_async("second")
        agent.wait()
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS
        assert waiting.result(timeout=10).paused
        agent.set_input_policy("merge")
        step = agent.send_message("third")
        assert step.paused
        agent.resume()
        assert [f[:2] for f in fates] == [
            ("started", "first"),
            ("queued", "second"),
            ("started", "second"),
            ("merged", "second\nthird"),
        ]
        with pytest.raises(tl.InvalidParamValue, match="input policy 'loud'"):
            agent.set_input_policy("loud")


def test_over_the_wire_a_message_queued_before_reject_still_finds_its_step(
    server: BackgroundServer,
) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(GRAPH, input_policy="enqueue")
        fates = _fates(agent)
        agent.send_message("A")
        waiting = agent.send_message_async("B")
        agent.wait()
        agent.set_input_policy("reject")  # B keeps its place
        agent.resume()
        assert waiting.result(timeout=10).paused
        assert fates[-1][:2] == ("started", "B")
        agent.resume()


def test_over_the_wire_a_queued_caller_that_gives_up_keeps_the_others_in_line(
    server: BackgroundServer,
) -> None:
    with tl.connect(*server.address) as remote:
        agent = remote.create_agent(GRAPH, input_policy="enqueue")
        fates = _fates(agent)
        agent.send_message("A")
        with pytest.raises(tl.Timeout):
            agent.send_message("B", timeout=0.2)  # B still waits on the server
        c = agent.send_message_async("C")
        agent.wait()
        agent.resume()  # A ends; B's turn starts, and its step is nobody's now
        agent.wait()
        agent.resume()  # B ends; C's turn starts
        assert c.result(timeout=10).paused
        (c_turn,) = [turn for fate, text, turn, _ in fates if (fate, text) == ("started", "C")]
        assert agent.resume().final.turn_id == c_turn  # C's step was C's own turn


def test_a_bad_policy_on_a_destroyed_agent_is_3002_as_any_operation() -> None:
    # The table first, then the value: a destroyed agent refuses before its arguments are read.
    with _engine() as engine:
        agent = engine.create_agent(GRAPH)
        agent.destroy()
        with pytest.raises(tl.AgentAlreadyDestroyed, match="set_input_policy"):
            agent.set_input_policy("shout")


def test_a_stored_agent_keeps_its_policy_and_a_message_queued_behind_its_pause(
    tmp_path: Any,
) -> None:
    store = str(tmp_path / "npcs.db")
    with tl.Engine(tl.MockModel("mock"), clock=tl.VirtualClock(), store=store) as engine:
        agent = engine.create_agent(GRAPH)
        agent.set_input_policy("enqueue")  # at rest: written as a change of params is
        assert agent.send_message("first").paused
        agent.send_message_async("second")  # waits behind the pause, nothing else runs
        assert agent.wait().pause is not None
        agent_id = agent.agent_id
    with tl.Engine(tl.MockModel("mock"), clock=tl.VirtualClock(), store=store) as engine:
        agent = engine.agent(agent_id)
        assert agent.input_policy is tl.InputPolicy.ENQUEUE
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS
        assert agent.wait().pause is not None  # the waiting message's turn
        agent.resume()
        assert _users(agent) == ["first", "second"]


def test_over_the_wire_an_attached_agent_reports_its_own_policy(tmp_path: Any) -> None:
    store = str(tmp_path / "npcs.db")
    engine = lambda: tl.AsyncEngine(tl.MockModel("mock"), store=store)  # noqa: E731
    with BackgroundServer(engine) as server:
        with tl.connect(*server.address) as first:
            made = first.create_agent(GRAPH, durable=True, input_policy="merge")
            agent_id, token = made.agent_id, made.resume_token
        with tl.connect(*server.address) as second:
            attached = second.attach_agent(agent_id, token)
            assert attached.input_policy is tl.InputPolicy.MERGE


@pytest.mark.parametrize("policy", ["interrupt", "merge"])
def test_over_the_wire_a_stored_agents_new_turn_is_the_step_of_an_interrupting_message(
    tmp_path: Any, policy: str
) -> None:
    # The cancelled turn's completion waits for its write; it still comes before the new
    # turn's Ack, so the message's step is the new turn's pause, not the cancelled result.
    store = str(tmp_path / "npcs.db")
    engine = lambda: tl.AsyncEngine(tl.MockModel("mock"), store=store)  # noqa: E731
    with BackgroundServer(engine) as server, tl.connect(*server.address) as remote:
        agent = remote.create_agent(GRAPH, durable=True, input_policy=policy)
        assert agent.send_message("first").paused
        step = agent.send_message("second")
        assert step.pause is not None and step.pause.node_name == "gate"
        assert agent.resume().final.status is tl.TurnStatus.SUCCESS


TOOL = tl.ToolDefinition(
    name="open_door",
    description="Open a door.",
    parameters=[tl.ToolParamDefinition("door", "string", "Which door.")],
)
DOOR = (
    tl.GraphDescription()
    .add_node(
        "act",
        tl.ToolCallParams(
            tools=[TOOL],
            disposition=tl.ToolCallDisposition.Pause,
            tool_called_exit="reply",
            no_tool_called_exit="listen",
            mode=tl.ToolCallMode.DetectOnly,
        ),
    )
    .add_node("listen", tl.PauseParams(default_exit="reply"))
    .add_node("reply", tl.CannedResponseParams(lines=["ok"]))
    .set_start_node("act")
    .set_default_model_name("mock")
)


def test_a_tool_handler_of_an_interrupted_turn_does_not_resume_the_next_turns_pause() -> None:
    call = '<tool_call>{"name": "open_door", "arguments": {"door": "north"}}</tool_call>'

    async def main() -> None:
        model = tl.MockModel("mock", [call, "no tool here"])
        async with tl.AsyncEngine(model, clock=tl.VirtualClock()) as engine:
            agent = await engine.create_agent(DOOR, input_policy="interrupt")
            release = asyncio.Event()
            handled: list[str] = []

            async def open_door(event: tl.ToolCallEvent) -> str:
                await release.wait()
                handled.append(event.call_id)
                return "opened"

            agent.register_tool("open_door", open_door)
            assert (await agent.send_message("open the north door")).pause is not None
            step = await agent.send_message("actually, wait")  # cancels the turn at `act`
            assert step.pause is not None and step.pause.node_name == "listen"
            release.set()  # the first turn's handler ends now
            for _ in range(10):
                await asyncio.sleep(0)
            assert handled  # it ran, and its results went nowhere
            step = await agent.wait()
            assert step.pause is not None and step.pause.node_name == "listen"

    asyncio.run(main())
