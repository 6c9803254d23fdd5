"""A small request about a node whose params are heavy to copy or check (a ToolCall
node of 128 tools of 64 parameters) is answered in stages too, with the answer it always got."""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.server.test_large_frames import Client, run
from turnloom.engine.turns import param_change
from turnloom.server import Server, answers


def tools(parameters: int) -> list[dict[str, Any]]:
    return [
        {
            "name": f"t{i}",
            "description": "",
            "parameters": [{"name": f"p{k}", "type": "string"} for k in range(parameters)],
        }
        for i in range(128)
    ]


def tool_graph(parameters: int) -> dict[str, Any]:
    return {
        "nodes": [
            {"name": "gate", "type": "Pause", "params": {"default_exit": "tools"}},
            {"name": "tools", "type": "ToolCall", "params": {"tools": tools(parameters)}},
        ],
        "start_node": "gate",
        "default_model_name": "mock",
    }


REQUESTS = {
    "GetAgentParam": {"type": "GetAgentParam", "node_name": "tools"},
    "ChangeAgentParam, some fields": {
        "type": "ChangeAgentParam",
        "node_name": "tools",
        "params": {"system_prompt": "be brief"},
    },
    "ChangeAgentParam, a structural field": {
        "type": "ChangeAgentParam",
        "node_name": "tools",
        "params": {"tools": []},
    },
    "ChangeAgentParam, an unknown node": {
        "type": "ChangeAgentParam",
        "node_name": "zz",
        "params": {"system_prompt": "x"},
    },
}


@pytest.mark.parametrize("case", sorted(REQUESTS))
def test_a_request_about_a_heavy_node_is_staged_and_answered_as_before(
    case: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged: list[str] = []
    handle_staged = answers.SessionAnswers.handle_staged

    def counted(self: answers.SessionAnswers, frame: dict[str, Any]) -> Any:
        staged.append(frame["type"])
        return handle_staged(self, frame)

    monkeypatch.setattr(answers.SessionAnswers, "handle_staged", counted)
    outcomes = []

    async def scenario(server: Server, connect: Callable[[], Awaitable[Client]]) -> None:
        client = await connect()
        # No parameters: light, answered at once; 64 a tool: heavy, answered in stages.
        for parameters in (0, 64):
            created = await client.request(
                {"type": "CreateAgent", "request_id": 1, "graph": tool_graph(parameters)}
            )
            agent_id = created["agent_id"]
            await client.request(
                {"type": "SendMessage", "request_id": 2, "agent_id": agent_id, "text": "hi"}
            )
            staged.clear()
            reply = await client.request({**REQUESTS[case], "request_id": 3, "agent_id": agent_id})
            answered_in_stages = list(staged)
            reply.pop("agent_id", None)
            if reply["type"] == "AgentParamResponse":
                reply["params"]["tools"] = len(reply["params"]["tools"])
            else:
                # Up to what it quotes of the node's current tools (which differ here).
                reply["message"] = reply.get("message", "").replace(str(agent_id), "N")
                reply["message"] = reply["message"].split("; current")[0]
            after = await client.request(
                {
                    "type": "GetAgentParam",
                    "request_id": 4,
                    "agent_id": agent_id,
                    "node_name": "tools",
                }
            )
            outcomes.append((reply, after["params"]["system_prompt"], answered_in_stages))

    run(scenario)
    (light, light_prompt, light_staged), (heavy, heavy_prompt, heavy_staged) = outcomes
    # A node that does not exist weighs nothing: refused at once.
    expected = [] if "unknown node" in case else [REQUESTS[case]["type"]]
    assert light_staged == [] and heavy_staged == expected
    assert light == heavy and light_prompt == heavy_prompt
    assert gc.isenabled()


def test_the_weight_of_params_counts_tools_and_their_parameters() -> None:
    from turnloom.protocol.graph_codec import params_from_wire

    heavy = params_from_wire("t", "ToolCall", {"tools": tools(64)})
    light = params_from_wire("t", "CannedResponse", {"lines": ["x"] * 1024})
    assert param_change.params_weight(heavy) == 1 + 128 * (1 + 64)
    assert param_change.params_weight(light) == 1
    assert param_change.params_weight(heavy) > param_change.HEAVY > 1 + 128
