"""What the inspector pushes and serves, read as a page would without a browser: agents made
and gone reach the page from the engine's own notes (the list is never copied to find them);
the agent a page shows is the only one it is told to fetch again; a refresh of that agent
leaves out its graph, params and the ended turns the page already has."""

from __future__ import annotations

import asyncio
import itertools
import json
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import aiohttp

import turnloom as tl
from tests.helpers import SET_LIGHT, graph_of
from turnloom.engine.turns.turn import LOG_KEPT_EVENTS
from turnloom.inspect.app import Inspector
from turnloom.inspect.recorder import TimelineRecorder


def paused_graph() -> tl.GraphDescription:
    return graph_of(
        ("wait", tl.PauseParams(default_exit="bye")),
        ("bye", tl.CannedResponseParams(lines=["farewell"])),
    )


class CountingAgents(dict[int, Any]):
    """The engine's agents, counting every walk over all of them."""

    walks = 0

    def __iter__(self) -> Iterator[int]:
        type(self).walks += 1
        return super().__iter__()

    def keys(self) -> Any:
        type(self).walks += 1
        return super().keys()

    def values(self) -> Any:
        type(self).walks += 1
        return super().values()

    def items(self) -> Any:
        type(self).walks += 1
        return super().items()

    def copy(self) -> dict[int, Any]:
        type(self).walks += 1
        return super().copy()


class Page:
    """A page's WebSocket: the messages pushed to it, one batch at a time."""

    def __init__(self, socket: aiohttp.ClientWebSocketResponse) -> None:
        self.socket = socket

    async def next(self) -> dict[str, Any]:
        """The next pushed message."""
        batch = json.loads(await asyncio.wait_for(self.socket.receive_str(), 10))
        assert len(batch) == 1, batch
        message: dict[str, Any] = batch[0]
        return message

    async def until(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first pushed message that is `wanted` (others are skipped)."""
        for _ in range(100):
            message = await self.next()
            if wanted(message):
                return message
        raise AssertionError("not pushed")


def live(
    body: Callable[[tl.AsyncEngine, Inspector, Page, aiohttp.ClientSession], Awaitable[None]],
) -> None:
    async def scenario() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            inspector = await engine.inspect()
            async with aiohttp.ClientSession() as session:
                url = inspector.url.replace("http", "ws") + "api/ws"
                async with session.ws_connect(url) as socket:
                    page = Page(socket)
                    assert (await page.next())["type"] == "hello"
                    await body(engine, inspector, page, session)

    asyncio.run(scenario())


def test_agents_made_and_gone_are_pushed_without_walking_the_list() -> None:
    async def body(
        engine: tl.AsyncEngine, inspector: Inspector, page: Page, session: aiohttp.ClientSession
    ) -> None:
        engine.core.agents = CountingAgents(engine.core.agents)
        CountingAgents.walks = 0
        made = await engine.create_agent(paused_graph(), tags={"graph": "guard"})
        message = await page.until(lambda m: m["agents"])
        assert message["type"] == "changed"
        assert [(row["id"], row["graph"], row["state"]) for row in message["agents"]] == [
            (made.agent_id, "guard", "idle")
        ]
        # Turns and more agents for a good many pushes (one per tick, 0.1 s apart), then the
        # first agent goes.
        other = await engine.create_agent(paused_graph())
        for _ in range(8):
            assert (await other.send_message("hi")).paused
            await page.until(lambda m: any(r["id"] == other.agent_id for r in m["agents"]))
            assert (await other.resume()).final.text == "farewell"  # type: ignore[union-attr]
            await page.until(lambda m: any(r["id"] == other.agent_id for r in m["agents"]))
        await made.destroy()
        message = await page.until(lambda m: m["gone"])
        assert message["gone"] == [made.agent_id] and message["agents"] == []
        assert made.agent_id not in inspector.recorder.tracks  # its timeline went with it
        assert CountingAgents.walks == 0  # 17 pushes, 1.7 s: the list was never walked

    live(body)


def test_only_the_page_showing_an_agent_is_told_to_fetch_it() -> None:
    async def body(
        engine: tl.AsyncEngine, inspector: Inspector, page: Page, session: aiohttp.ClientSession
    ) -> None:
        shown = await engine.create_agent(paused_graph())
        busy = await engine.create_agent(paused_graph())
        await page.until(lambda m: len(m["agents"]) == 2)
        await page.socket.send_json({"watch": shown.agent_id})
        for _ in range(1000):  # until the server has read it
            if inspector.watchers.shown() == {shown.agent_id}:
                break
            await asyncio.sleep(0.01)
        assert inspector.watchers.shown() == {shown.agent_id}
        # The other agent's turns: rows pushed, never "fetch your agent".
        assert (await busy.send_message("hi")).paused
        message = await page.until(lambda m: m["agents"])
        assert "chosen" not in message
        assert (await shown.send_message("hi")).paused
        message = await page.until(lambda m: m.get("chosen", False))
        assert [row["id"] for row in message["agents"]] == [shown.agent_id]
        await page.socket.send_json({"watch": None})  # the page shows no agent now
        for _ in range(1000):
            if not inspector.watchers.shown():
                break
            await asyncio.sleep(0.01)
        assert inspector.watchers.shown() == set()

    live(body)


def test_a_refresh_leaves_out_what_the_page_has() -> None:
    async def body(
        engine: tl.AsyncEngine, inspector: Inspector, page: Page, session: aiohttp.ClientSession
    ) -> None:
        agent = await engine.create_agent(paused_graph())
        for _ in range(3):
            assert (await agent.send_message("hi")).paused
            assert (await agent.resume()).final.text == "farewell"  # type: ignore[union-attr]
        assert (await agent.send_message("again")).paused
        url = inspector.url + f"api/agents/{agent.agent_id}"
        async with session.get(url) as reply:
            full = await reply.json()
        assert full["graph_data"]["start"] == "wait" and set(full["params"]) == {"wait", "bye"}
        ended = [t["turn_id"] for t in full["timeline"] if t["status"] == "success"]
        assert len(ended) == 3 and full["turn_ids"] == [*ended, full["turn_id"]]
        assert full["timeline"][-1]["events"][0] == {
            "turn_id": full["turn_id"],
            "kind": "turn_started",
            "at": full["timeline"][-1]["events"][0]["at"],
            "message": "again",
        }
        have = ",".join(str(t) for t in ended[:2])
        async with session.get(url, params={"full": "0", "have": have}) as reply:
            live = await reply.json()
        assert "graph_data" not in live and "params" not in live
        assert live["turn_ids"] == full["turn_ids"]
        assert [t["turn_id"] for t in live["timeline"]] == [ended[2], full["turn_id"]]
        assert live["timeline"] == full["timeline"][2:]  # the same turns, built once
        async with session.get(url, params={"have": "1,x"}) as reply:
            assert reply.status == 400
            assert "have" in await reply.text()

    live(body)


def test_the_timeline_of_a_tool_calling_turn_as_the_page_reads_it() -> None:
    call = json.dumps({"name": "set_light", "arguments": {"name": "hall", "on": True}})
    graph = graph_of(
        (
            "detect",
            tl.ToolCallParams(
                tools=[SET_LIGHT],
                disposition=tl.ToolCallDisposition.AwaitResult,
                mode=tl.ToolCallMode.DetectOnly,
                tool_called_exit="wait",
                no_tool_called_exit="wait",
            ),
        ),
        ("wait", tl.PauseParams(default_exit="answer")),
        ("answer", tl.CannedResponseParams(lines=["lit"])),
    )
    clock = tl.VirtualClock()
    with tl.Engine(tl.MockModel("mock", [f"<tool_call>{call}</tool_call>"]), clock=clock) as engine:
        inspector = engine.inspect()
        agent = engine.create_agent(graph)
        step = agent.send_message("light the hall")
        told = step.pause.pending_calls[0]  # type: ignore[union-attr]
        call_id = told.call_id
        clock.advance(2)
        assert agent.resume("", [{"call_id": call_id, "result": "done"}]).pause is not None
        clock.advance(3)
        assert agent.resume().final.text == "lit"  # type: ignore[union-attr]
        url = inspector.url + f"api/agents/{agent.agent_id}?full=0"
        with urllib.request.urlopen(url) as reply:
            detail = json.load(reply)
    assert detail["node"] == "" and detail["last_node"] == "answer"
    (turn,) = detail["timeline"]
    events = turn["events"]
    assert [e["kind"] for e in events] == [
        "turn_started",
        "node_started",
        "generation",
        "tool_call",
        "node_ended",
        "paused",
        "resumed",
        "node_started",
        "node_ended",
        "paused",
        "resumed",
        "node_started",
        "node_ended",
        "turn_ended",
    ]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_kind.setdefault(event["kind"], []).append(event)
    assert by_kind["tool_call"][0] | {"at": 0} == {
        "turn_id": turn["turn_id"],
        "kind": "tool_call",
        "at": 0,
        "node": "detect",
        "call_id": call_id,
        "tool": "set_light",
        "arguments": told.arguments_json,
        "disposition": told.disposition,
    }
    assert '"hall"' in told.arguments_json
    first, second = by_kind["paused"]
    assert (first["node"], first["pending_calls"], first["awaits_results"]) == (
        "detect",
        [call_id],
        True,
    )
    assert (second["node"], second["pending_calls"], second["timeout_ms"]) == ("wait", [], 0)
    resumed = by_kind["resumed"]
    assert [(r["paused_seconds"], r["results"]) for r in resumed] == [
        (2.0, {call_id: "done"}),
        (3.0, {}),
    ]
    assert [e["seconds"] for e in by_kind["node_ended"]] == [0.0, 0.0, 0.0]
    assert by_kind["node_ended"][0]["exit_route"] == "tool_called"
    ended = by_kind["turn_ended"][0]
    assert (ended["status"], ended["text"], ended["pause_count"], ended["paused_seconds"]) == (
        "success",
        "lit",
        2,
        5.0,
    )
    assert ended["ended_while_paused_for"] is None
    assert turn["status"] == "success"


def test_a_turn_that_walks_many_nodes_keeps_its_message_and_latest_events() -> None:
    """A turn's timeline is bounded however many nodes it walks: it keeps the player's message
    and its latest events, its end among them."""

    async def scenario() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            inspector = await engine.inspect()
            looping = graph_of(
                ("ping", tl.CannedResponseParams(lines=["."], default_exit="pong")),
                ("pong", tl.CannedResponseParams(lines=["."], default_exit="ping")),
            )
            agent = await engine.create_agent(looping, max_steps_per_turn=500)
            step = await agent.send_message("round and round")
            assert (
                step.result is not None and step.result.error_code == tl.ErrorCode.MaxStepsExceeded
            )
            (turn,) = inspector.recorder.tracks[agent.agent_id].timeline(lambda node: "")
            events = turn["events"]
            # Cut back at a node's start: the few events that follow one (its end, the turn's
            # end) may go past the bound until the next.
            assert len(events) <= LOG_KEPT_EVENTS + 3
            assert events[0]["kind"] == "turn_started"
            assert events[0]["message"] == "round and round"
            assert events[-1]["kind"] == "turn_ended" and turn["status"] == "error"
            # The latest nodes, in order, with nothing missing between them: each node's end
            # names the node it ends.
            walked = [event["node"] for event in events if event["kind"] == "node_started"]
            ended = [event["node"] for event in events if event["kind"] == "node_ended"]
            assert len(walked) > LOG_KEPT_EVENTS // 5
            assert all(a != b for a, b in itertools.pairwise(walked))
            assert ended == walked[: len(ended)] and len(walked) - len(ended) <= 1
            assert walked[-1] == ("ping" if 500 % 2 else "pong")
            await inspector.close()

    asyncio.run(scenario())


def test_a_turn_paused_before_the_inspector_came_is_shown_and_followed() -> None:
    clock = tl.VirtualClock()
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        agent = engine.create_agent(paused_graph())
        clock.advance(1)
        assert agent.send_message("still there?").pause is not None
        clock.advance(4)
        inspector = engine.inspect()
        url = inspector.url + f"api/agents/{agent.agent_id}?full=0"

        def timeline() -> list[dict[str, Any]]:
            with urllib.request.urlopen(url) as reply:
                found: list[dict[str, Any]] = json.load(reply)["timeline"]
                return found

        (turn,) = timeline()
        assert turn["before_inspector"] and turn["status"] == ""
        begun, paused = turn["events"]
        assert (begun["kind"], begun["at"], begun["message"]) == (
            "turn_started",
            None,
            "still there?",
        )
        assert (paused["kind"], paused["node"], paused["at"]) == ("paused", "wait", 1.0)
        clock.advance(2)
        assert agent.resume().final.text == "farewell"  # type: ignore[union-attr]
        (turn,) = timeline()
        kinds = [event["kind"] for event in turn["events"]]
        assert kinds[2:] == ["resumed", "node_started", "node_ended", "turn_ended"]
        assert turn["status"] == "success" and turn["events"][2]["paused_seconds"] == 6.0
        # Closed, the inspector leaves no log on a turn open then.
        assert agent.send_message("again").pause is not None
        core = engine._engine.core.agents[agent.agent_id]
        assert core.turn.log is not None
        engine._runner.block(inspector.close(), "close")
        assert core.turn.log is None


def test_the_ticks_look_only_at_turns_that_walk() -> None:
    with tl.Engine(tl.MockModel("mock"), clock=tl.VirtualClock()) as engine:
        watched = TimelineRecorder()
        engine.add_observer(watched)
        parked, other = engine.create_agent(paused_graph()), engine.create_agent(paused_graph())
        assert watched.take_changes() == {parked.agent_id, other.agent_id}  # made
        assert parked.send_message("wait here").pause is not None
        # Started, then found paused at the tick: no longer looked at.
        assert watched.take_changes() == {parked.agent_id} and not watched.walking
        assert watched.take_changes() == set()
        assert parked.resume().final is not None  # type: ignore[union-attr]
        assert watched.take_changes() == {parked.agent_id} and not watched.walking  # ended
        engine.remove_observer(watched)
