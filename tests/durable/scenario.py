"""The agents the durability tests pause, crash and resume: graphs, a model whose replies
depend on everything it is shown, and the moves that finish each agent's turn.

Kinds of agent (by index % 3):

* 0, "await": a ToolCall node with AwaitResult: pauses with a pending call (its id is the
  agent's call counter at work), resumed with a result that names the call;
* 1, "pause": a Pause node waiting forever, with a param changed while paused;
* 2, "deadline": a Pause node with a 5 s timeout leading to a canned line; a restart after the
  deadline makes it fire at once.
"""

from __future__ import annotations

import json
from typing import Any

import turnloom as tl
from turnloom.engine.inference.base import GenerationRequest

LOOK = tl.ToolDefinition(
    name="look",
    description="Look at something.",
    parameters=[tl.ToolParamDefinition("what", "string", "The thing.")],
)
KINDS = ("await", "pause", "deadline")
TIMEOUT_MS = 5000


def reply(request: GenerationRequest) -> str:
    """A reply that depends on the whole chat: a restored agent that lost anything differs."""
    if request.tools:
        call = {"name": "look", "arguments": {"what": str(request.messages[-1]["content"])}}
        return f"<tool_call>{json.dumps(call)}</tool_call>"
    chat = request.messages
    system = next((m["content"] for m in chat if m["role"] == "system"), "")
    return f"[{system}] {len(chat)} messages, last {chat[-1]['content']!r}"


def model() -> tl.MockModel:
    """The mock model every engine of these tests loads."""
    return tl.MockModel("mock", fallback=reply)


def graph(kind: str, timeout_ms: int = TIMEOUT_MS) -> tl.GraphDescription:
    """The graph of one kind of agent (a "deadline" one times out after `timeout_ms`)."""
    g = tl.GraphDescription()
    if kind == "await":
        g.add_node(
            "act",
            tl.ToolCallParams(
                tools=[LOOK],
                disposition=tl.ToolCallDisposition.AwaitResult,
                tool_called_exit="answer",
            ),
        )
    else:
        timeout = timeout_ms if kind == "deadline" else 0
        g.add_node(
            "act",
            tl.PauseParams(
                default_exit="answer",
                pause_timeout_ms=timeout,
                timeout_exit="late" if timeout else "",
            ),
        )
        g.add_node("late", tl.CannedResponseParams(lines=["Too late.", "Late again."],
                                                   selection=tl.Selection.Cycle))  # fmt: skip
    g.add_node("answer", tl.GenerateParams(system_prompt="Mira"))
    return g.set_start_node("act").set_default_model_name("mock")


def kind_of(index: int) -> str:
    """The kind of the agent made `index`-th."""
    return KINDS[index % len(KINDS)]


def finish(agent: tl.Agent, step: tl.Step, kind: str) -> tl.TurnResult:
    """Take a paused turn to its end the way the game would (with no timeout firing)."""
    assert step.pause is not None, step
    if kind == "await":
        results = [(c.call_id, f"saw {c.arguments['what']} ({c.call_id})")
                   for c in step.pause.pending_calls]  # fmt: skip
        return agent.resume(tool_results=results).final
    if kind == "pause":
        agent.change_params("answer", {"system_prompt": "Mira, trusted"})
    return agent.resume().final


def record(agent: tl.Agent, result: tl.TurnResult | None) -> dict[str, Any]:
    """What must come out the same, crash or not: the reply, the dialog, the result."""
    return {
        "status": None if result is None else result.status.value,
        "text": None if result is None else result.text,
        "turn_id": None if result is None else result.turn_id,
        "dialog": agent.dialog,
    }
