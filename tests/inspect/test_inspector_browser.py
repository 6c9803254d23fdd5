"""The inspector page in a real browser: Debian's chromium driven by Playwright (no browser
download). The page watches a mock agent pause (the node lit), changes a param and resumes
from the page, sees the turn finish, sees a rejected action's code, and follows a turn started
by the game while it is open (pushed, not polled).

Without chromium these tests skip saying how to install it (`make chromium`); with $CI set
they fail instead."""

from __future__ import annotations

import os
from typing import Any

import pytest

import turnloom as tl
from tests.helpers import graph_of

#: Set to a file name to save a screenshot of the page there (the docs' picture).
SCREENSHOT = os.environ.get("TURNLOOM_PAGE_SCREENSHOT")


def npc_graph() -> tl.GraphDescription:
    return graph_of(
        ("greet", tl.GenerateParams(default_exit="wait")),
        ("wait", tl.PauseParams(default_exit="bye")),
        ("bye", tl.CannedResponseParams(lines=["farewell"])),
    )


@pytest.mark.parametrize("use_dot", [True, False], ids=["graphviz-svg", "page-drawn"])
def test_watch_a_pause_change_a_param_resume_and_see_a_refusal(page: Any, use_dot: bool) -> None:
    from playwright.sync_api import expect

    clock = tl.VirtualClock()
    with tl.Engine(tl.MockModel("mock"), clock=clock) as engine:
        inspector = engine.inspect()
        inspector.drawings.available = use_dot and inspector.drawings.available
        idle = engine.create_agent(npc_graph(), tags={"graph": "blacksmith"})
        agent = engine.create_agent(npc_graph(), tags={"graph": "guard"})
        assert agent.send_message("hello").paused
        clock.advance(20)  # long enough to be called stuck

        page.goto(inspector.url)
        row = page.locator(f'tr[data-agent-id="{agent.agent_id}"]')
        expect(row.locator("td.state")).to_have_text("paused")
        expect(row.locator("td.node")).to_have_text("wait")
        expect(row).to_have_class("s-paused stuck")
        expect(page.locator(f'tr[data-agent-id="{idle.agent_id}"] td.state')).to_have_text("idle")
        row.click()
        expect(page.locator("#graph g.node.lit title")).to_have_text("wait")
        expect(page.locator("#machine g.node.lit title")).to_have_text("paused")
        expect(page.locator("#timeline")).to_contain_text('user: "hello"')

        # A refused change: a CannedResponse needs at least one line (3007).
        page.select_option("#params-node", "bye")
        page.fill('#params-fields textarea[name="lines"]', "[]")
        page.click("#apply")
        expect(page.locator("#action-result")).to_contain_text("3007 InvalidParamValue")
        assert agent.get_params("bye").lines == ["farewell"]  # nothing changed

        page.fill('#params-fields textarea[name="lines"]', '["see you at dawn"]')
        page.click("#apply")
        expect(page.locator("#action-result")).to_have_text("done")
        assert agent.get_params("bye").lines == ["see you at dawn"]

        page.click("#resume")
        expect(page.locator("#machine g.node.lit title")).to_have_text("idle")
        expect(page.locator("#timeline")).to_contain_text(
            'success: "You said: hello\\nsee you at dawn"'
        )
        result = agent.wait_complete()
        assert result is not None and result.text == "You said: hello\nsee you at dawn"

        # Resuming what is not paused is refused with the API's code.
        page.evaluate(
            "id => fetch(`/api/agents/${id}/resume`, {method: 'POST', "
            "headers: {'Content-Type': 'application/json'}, body: '{}'})"
            ".then(r => r.json()).then(say)",
            agent.agent_id,
        )
        expect(page.locator("#action-result")).to_contain_text("3012 AgentNotPaused")

        # The game starts a turn while the page watches: it is pushed to the page.
        assert agent.send_message("again").paused
        expect(page.locator("#graph g.node.lit title")).to_have_text("wait")
        expect(row.locator("td.state")).to_have_text("paused")
        page.click("#jump-node")
        page.select_option("#jump-node", "greet")
        page.click("#jump")
        expect(page.locator("#graph g.node.lit title")).to_have_text("wait")
        expect(page.locator("#timeline")).to_contain_text("jump to greet")
        if SCREENSHOT:
            page.screenshot(path=SCREENSHOT, full_page=True)
        page.click("#cancel")
        expect(page.locator("#machine g.node.lit title")).to_have_text("idle")
        expect(page.locator("#timeline")).to_contain_text("cancelled")
