"""The demo: a shopkeeper NPC whose turns pause, get their params changed, jump and time out.

Runs on the embedded engine. `python -m turnloom demo`.
"""

from __future__ import annotations

from collections.abc import Callable

from .engine.backends.base import GenerationRequest, ModelBackend
from .engine.backends.mock import MockModel
from .engine.core import EngineSettings
from .engine.graph import GraphDescription
from .engine.params import CannedResponseParams, GenerateParams, PauseParams
from .host.sync import Engine

#: How long the shopkeeper waits for the game at the offer before shrugging.
OFFER_TIMEOUT_MS = 1500


def shop_graph(model_name: str) -> GraphDescription:
    """The shopkeeper's graph: listen ⏸ → answer → offer ⏸ (timeout) → confirm | decline | shrug."""
    return (
        GraphDescription()
        .add_node("listen", PauseParams(default_exit="answer"))
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
    system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
    mood = "Welcome back, friend!" if "trusted" in system else "Hm. Strangers pay double."
    return f"{mood} A fine steel sword is 40 gold."


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
