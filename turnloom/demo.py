"""The demo: a shopkeeper NPC whose turns pause, get their params changed, jump and time out.

Runs on the embedded engine. `python -m turnloom demo`.
"""

from __future__ import annotations

from collections.abc import Callable

from .engine.backends.base import GenerationRequest, ModelBackend
from .engine.backends.mock import MockModel
from .engine.core import EngineSettings
from .engine.graph import GraphDescription
from .engine.params import (
    CannedResponseParams,
    GenerateParams,
    PauseParams,
    ToolCallDisposition,
    ToolCallMode,
    ToolCallParams,
    ToolDefinition,
    ToolParamDefinition,
)
from .host.sync import Engine

#: What the game answers to check_stock.
INVENTORY = {"sword": "3 steel swords at 40 gold", "shield": "1 oak shield at 25 gold"}

#: How long the shopkeeper waits for the game at the offer before shrugging.
OFFER_TIMEOUT_MS = 1500


#: The tool the shopkeeper uses to ask the game what is in stock.
CHECK_STOCK = ToolDefinition(
    name="check_stock",
    description="Look up how many of an item the shop has, and its price.",
    parameters=[ToolParamDefinition("item", "string", "The item, e.g. 'sword'.")],
)


def shop_graph(model_name: str) -> GraphDescription:
    """listen ⏸ → stock (ToolCall, AwaitResult ⏸) → answer → offer ⏸ (timeout) → confirm |
    decline | shrug."""
    return (
        GraphDescription()
        .add_node("listen", PauseParams(default_exit="stock"))
        .add_node(
            "stock",
            ToolCallParams(
                tools=[CHECK_STOCK],
                disposition=ToolCallDisposition.AwaitResult,
                mode=ToolCallMode.DetectOnly,
                system_prompt="Call check_stock when the customer asks about an item.",
                tool_called_exit="answer",
                no_tool_called_exit="answer",
            ),
        )
        .add_node(
            "answer",
            GenerateParams(
                system_prompt="You are Mira, a shopkeeper in a fantasy town.",
                default_exit="offer",
            ),
        )
        .add_node(
            "offer",
            PauseParams(
                pause_timeout_ms=OFFER_TIMEOUT_MS, default_exit="confirm", timeout_exit="shrug"
            ),
        )
        .add_node("confirm", CannedResponseParams(lines=["Deal! Pleasure doing business."]))
        .add_node("decline", CannedResponseParams(lines=["Maybe next time, traveller."]))
        .add_node("shrug", CannedResponseParams(lines=["...I'll take that as a no."]))
        .set_start_node("listen")
        .set_default_model_name(model_name)
    )


def _scripted_shopkeeper(request: GenerationRequest) -> str:
    last_user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    if request.tools:  # the ToolCall node: ask the game about the item the player named
        item = "shield" if "shield" in last_user else "sword"
        return (
            f'<tool_call>{{"name": "check_stock", "arguments": {{"item": "{item}"}}}}</tool_call>'
        )
    system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
    mood = "Welcome back, friend!" if "trusted" in system else "Hm. Strangers pay double."
    stock = next((m["content"] for m in reversed(request.messages) if m["role"] == "tool"), "")
    return f"{mood} The ledger says: {stock}."


def demo_model() -> ModelBackend:
    """The model the demo runs on (scripted until a real default model is wired in)."""
    return MockModel("shopkeeper", fallback=_scripted_shopkeeper)


def run_demo(say: Callable[[str], None]) -> None:
    """Play two turns and narrate them through `say`."""
    model = demo_model()
    with Engine(model, settings=EngineSettings(pause_stall_warn_ms=10_000)) as engine:
        agent = engine.create_agent(shop_graph(model.name), enable_diagnostics=True)
        agent.set_on_paused(lambda node, exit_: say(f"  [event] paused at '{node}' -> {exit_}"))

        def on_text(text: str, is_delta: bool, is_final: bool) -> None:
            if is_final:
                say(f"  [event] final text: {text!r}")

        agent.set_on_answer_text(on_text)

        say("Turn 1 — player: 'Do you sell swords?'")
        step = agent.send_message("Do you sell swords?")
        assert step.pause is not None
        say(f"  game: paused at '{step.pause.node_name}'; the player is trusted, tell the NPC")
        params = agent.get_params("answer")
        assert isinstance(params, GenerateParams)
        params.system_prompt += " The customer is trusted: be warm."
        agent.change_params("answer", params)
        step = agent.resume()
        assert step.pause is not None
        (call,) = step.pause.pending_calls
        say(
            f"  game: paused at '{step.pause.node_name}': the NPC calls {call.tool_name}"
            f"({call.arguments_json}) as {call.call_id}; the game answers from its inventory"
        )
        step = agent.resume(tool_results=[(call.call_id, INVENTORY[call.arguments["item"]])])
        assert step.pause is not None
        say(
            f"  game: paused at '{step.pause.node_name}' (would go '{step.pause.pending_exit}'"
            f" -> '{step.pause.pending_target}'); the player walks away, jump to 'decline'"
        )
        step = agent.resume("decline")
        assert step.result is not None
        say(f"  NPC: {step.result.text}")
        say(f"  status={step.result.status} pauses={step.result.pause_count}")

        say(
            f"Turn 2 — player: 'And a shield?' (the game ignores the offer; it times out after "
            f"{OFFER_TIMEOUT_MS} ms)"
        )
        agent.register_tool("check_stock", lambda call: INVENTORY[call.arguments["item"]])
        say("  game: registers a check_stock handler, so the tool pause resumes by itself")
        step = agent.send_message("And a shield?")
        step = agent.resume()
        assert step.pause is not None
        say(f"  game: paused at '{step.pause.node_name}'; nobody answers...")
        result = agent.wait_complete()
        assert result is not None
        say(f"  NPC: {result.text}")
        info = result.debug_info or {}
        route = [f"{n['name']}:{n['exit_route']}" for n in info.get("nodes", [])]
        say(f"  status={result.status} route={' -> '.join(route)}")
        say(f"  paused {result.paused_duration_s:.2f} s in {result.pause_count} pauses")
