"""Finding the stuck NPC among 100 from the page, as a developer would.

A game of 100 mock agents in every state a game shows: idle after a finished turn, idle after
a cancelled or timed-out one, running (a generation that is taking its time), and paused for
a few seconds at one of two nodes; one guard has been paused for ten minutes. The test opens
the page with nothing but the page to go on, ticks "paused only", reads the list (sorted by
how long each agent has been paused, the stuck one in red), narrows it with the filter, opens
the agent and reads where it waits and since when. How long that took is printed and kept in
the test report (`seconds_to_find`); it is not asserted, as no test asserts the wall clock.
"""

from __future__ import annotations

import time
from typing import Any

import turnloom as tl
from tests.helpers import graph_of

GRAPHS = ("guard", "merchant", "blacksmith", "villager")


def npc_graph(model: str = "mock") -> tl.GraphDescription:
    return graph_of(
        ("greet", tl.GenerateParams(default_exit="wait")),
        ("wait", tl.PauseParams(default_exit="trade", pause_timeout_ms=0)),
        ("trade", tl.PauseParams(default_exit="bye")),
        ("bye", tl.CannedResponseParams(lines=["farewell"])),
    ).set_default_model_name(model)


def timed_out_graph() -> tl.GraphDescription:
    return graph_of(
        ("wait", tl.PauseParams(default_exit="bye", pause_timeout_ms=1_000)),
        ("bye", tl.CannedResponseParams(lines=["farewell"])),
    )


def crowd(engine: tl.Engine, clock: tl.VirtualClock) -> tuple[int, dict[str, int]]:
    """The 100 agents; the stuck one's id and how many are in each state."""

    def tags(i: int) -> dict[str, str]:
        return {"graph": GRAPHS[i % len(GRAPHS)], "npc": f"npc-{i:03d}"}

    stuck = engine.create_agent(npc_graph(), tags={"graph": "guard", "npc": "npc-gate"})
    assert stuck.send_message("open the gate").pause.node_name == "wait"  # type: ignore[union-attr]
    clock.advance(600)  # ten minutes while the game forgot it
    counts = {"stuck": 1, "idle": 0, "running": 0, "paused": 0}
    kinds = ("idle", "cancelled", "timed_out", "running", "paused", "paused-trade")
    # The paused ones last: each paused a tenth of a second after the one before.
    order = sorted(range(99), key=lambda i: kinds[i % 6].startswith("paused"))
    for i in order:
        kind = kinds[i % 6]
        if kind == "running":
            agent = engine.create_agent(npc_graph("slow"), tags=tags(i))
            agent.send_message_async("tell me a long story")  # its step never comes
            counts["running"] += 1
            continue
        agent = engine.create_agent(
            timed_out_graph() if kind == "timed_out" else npc_graph(), tags=tags(i)
        )
        assert agent.send_message(f"hello {i}").paused
        if kind == "idle":
            agent.resume()
            assert agent.resume().final.status is tl.TurnStatus.SUCCESS
        elif kind == "cancelled":
            assert agent.cancel()
        elif kind == "timed_out":
            clock.advance(1.0)
            assert agent.wait().final.status is tl.TurnStatus.PAUSE_TIMED_OUT
        elif kind == "paused-trade":
            assert agent.resume().pause.node_name == "trade"  # type: ignore[union-attr]
        if kind.startswith("paused"):
            counts["paused"] += 1
            clock.advance(0.1)
        else:
            counts["idle"] += 1
    return stuck.agent_id, counts


def test_a_developer_finds_the_stuck_npc_among_100_from_the_page(
    page: Any, record_property: Any
) -> None:
    from playwright.sync_api import expect

    clock = tl.VirtualClock()
    slow = tl.MockModel("slow")
    slow.hold_after = 1  # a generation that never ends by itself: the agent stays running
    with tl.Engine([tl.MockModel("mock"), slow], clock=clock) as engine:
        stuck_id, counts = crowd(engine, clock)
        assert len(engine.agent_ids()) == 100
        inspector = engine.inspect()

        started = time.perf_counter()
        page.goto(inspector.url)
        rows = page.locator("#agents tbody tr")
        expect(page.locator("#counts")).to_have_text(f"100 agents, {counts['paused'] + 1} paused")
        expect(rows).to_have_count(100)
        expect(page.locator("#agents tbody tr.s-running")).to_have_count(counts["running"])

        # Paused only: sorted by how long, the one paused longest first, and alone in red.
        page.check("#only-paused")
        expect(rows).to_have_count(counts["paused"] + 1)
        top = rows.first
        expect(top).to_have_attribute("data-agent-id", str(stuck_id))
        expect(page.locator("#agents tbody tr.stuck")).to_have_count(1)
        expect(top.locator("td.paused-for")).to_contain_text("s")
        assert float(top.locator("td.paused-for").inner_text().split()[0]) >= 600
        assert float(rows.nth(1).locator("td.paused-for").inner_text().split()[0]) < 15

        # The filter narrows it: the paused guards, the stuck one still first; then its tag.
        page.fill("#filter", "guard")
        expect(top).to_have_attribute("data-agent-id", str(stuck_id))
        for graph in page.locator("#agents tbody tr td:nth-child(2)").all_inner_texts():
            assert graph == "guard"
        page.fill("#filter", "npc-gate")
        expect(rows).to_have_count(1)
        rows.first.click()
        expect(page.locator("#title")).to_contain_text(f"agent {stuck_id} — guard — paused at wait")
        expect(page.locator("#pause-info")).to_contain_text("paused at wait")
        expect(page.locator("#graph g.node.lit title")).to_have_text("wait")
        expect(page.locator("#timeline")).to_contain_text('user: "open the gate"')
        seconds = time.perf_counter() - started

        record_property("seconds_to_find", round(seconds, 2))
        print(f"\nfound the stuck NPC (agent {stuck_id}) among 100 in {seconds:.1f} s")

        # Unstick it from the page: the game sees the turn go on.
        page.click("#resume")
        expect(page.locator("#pause-info")).to_contain_text("paused at trade")
        assert engine.agent(stuck_id).wait().pause.node_name == "trade"  # type: ignore[union-attr]
