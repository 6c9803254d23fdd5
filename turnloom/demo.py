"""The demo: a shopkeeper NPC whose turns pause, get their params changed, call a tool, jump and
time out — on the real embedded default model (Gemma 3 270M), with nothing to set up.

`python -m turnloom demo`. The model is a tiny base model: what it says is narrated as it comes,
whatever it is; the demo is about what the engine does around it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from .engine.backends.base import GenerationRequest, ModelBackend
from .engine.backends.catalog import DEFAULT_MODEL
from .engine.backends.llama import LlamaModel
from .engine.backends.mock import MockModel
from .engine.graph import GraphDescription
from .engine.params import (
    CannedResponseParams,
    GenerateParams,
    PauseParams,
    SamplingParams,
    ToolCallDisposition,
    ToolCallMode,
    ToolCallParams,
    ToolDefinition,
    ToolParamDefinition,
)
from .engine.results import Step, ToolCallEvent
from .engine.runtime import EngineSettings
from .host.sync import Agent, Engine

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
                # Greedy and short: a call is some twenty tokens.
                sampling=SamplingParams(temperature=0.0, max_tokens=40),
                tool_called_exit="answer",
                no_tool_called_exit="answer",
            ),
        )
        .add_node(
            "answer",
            GenerateParams(
                system_prompt="You are Mira, a shopkeeper in a fantasy town.",
                sampling=SamplingParams(temperature=0.0, max_tokens=24, repeat_penalty=1.3),
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


def scripted_model() -> MockModel:
    """A scripted stand-in for the demo's model (deterministic, no weights), for tests."""
    return MockModel("shopkeeper", fallback=_scripted_shopkeeper)


def demo_model() -> ModelBackend:
    """The model the demo runs on: the catalog's default, the embedded Gemma 3 270M."""
    return LlamaModel.from_catalog(DEFAULT_MODEL)


def stock_answer(call: ToolCallEvent) -> str:
    """What the game answers to a check_stock call, whatever item the model asked about."""
    item = str(call.arguments.get("item", "")).strip().lower()
    for name, line in INVENTORY.items():
        if name in item:
            return line
    return f"no {item or 'such item'} in the ledger"


def _quote(text: str, limit: int = 90) -> str:
    """Model text on one line, shortened: a small model may ramble."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def run_demo(say: Callable[[str], None], model: ModelBackend | None = None) -> None:
    """Play two turns and narrate them through `say` (on `model`, default `demo_model()`)."""
    model = model or demo_model()
    demo_started = time.perf_counter()
    if isinstance(model, LlamaModel):
        started = time.perf_counter()
        say(f"Loading '{model.name}' ({model.model_path().name})...")
        model.load()
        say(
            f"  loaded in {time.perf_counter() - started:.1f} s. Every model line below is real "
            "output of this small base model, odd as it may read; bring your own GGUF for "
            "quality (README, 'Models')."
        )
    with Engine(model, settings=EngineSettings(pause_stall_warn_ms=10_000)) as engine:
        agent = engine.create_agent(shop_graph(model.name), enable_diagnostics=True)
        agent.set_on_paused(lambda node, exit_: say(f"  [event] paused at '{node}' -> {exit_}"))

        def on_text(text: str, is_delta: bool, is_final: bool) -> None:
            if is_final:
                say(f"  [event] final text: {_quote(text)}")

        agent.set_on_answer_text(on_text)
        _turn_one(agent, say)
        _turn_two(agent, say)
    if isinstance(model, LlamaModel):
        gens = [g for g in model.generations if g.started >= demo_started]
        say(
            f"Model: {len(gens)} generations ({sum(g.grammar == 'required' for g in gens)} "
            f"grammar-constrained tool calls), {sum(g.tokens for g in gens)} tokens sampled "
            f"in {sum(g.seconds for g in gens):.1f} s"
        )


def _turn_one(agent: Agent, say: Callable[[str], None]) -> None:
    say("Turn 1 — player: 'Do you sell swords?'")
    step = agent.send_message("Do you sell swords?")
    if step.pause is None:
        _narrate_end(step, say)
        return
    say(f"  game: paused at '{step.pause.node_name}'; the player is trusted, tell the NPC")
    params = agent.get_params("answer")
    assert isinstance(params, GenerateParams)
    params.system_prompt += " The customer is trusted: be warm."
    agent.change_params("answer", params)
    step = agent.resume()
    if step.pause is not None and step.pause.pending_calls:
        calls = step.pause.pending_calls
        results = [(call.call_id, stock_answer(call)) for call in calls]
        for call, (_, answer) in zip(calls, results, strict=True):
            say(
                f"  game: paused at '{step.pause.node_name}': the NPC calls {call.tool_name}"
                f"({json.dumps(call.arguments)}) as {call.call_id}; the game answers {answer!r}"
            )
        step = agent.resume(tool_results=results)
    elif step.pause is not None:
        say(f"  game: the NPC called no tool; it goes on to '{step.pause.node_name}'")
    if step.pause is not None and step.pause.node_name != "offer":
        say(f"  game: unexpected pause at '{step.pause.node_name}'; cancelling the turn")
        agent.cancel()
        step = Step(result=agent.last_result)
    if step.pause is None:
        _narrate_end(step, say)
        return
    say(
        f"  game: paused at '{step.pause.node_name}' (would go '{step.pause.pending_exit}'"
        f" -> '{step.pause.pending_target}'); the player walks away, jump to 'decline'"
    )
    _narrate_end(agent.resume("decline"), say)


def _turn_two(agent: Agent, say: Callable[[str], None]) -> None:
    say(
        f"Turn 2 — player: 'And a shield?' (the game ignores the offer; it times out after "
        f"{OFFER_TIMEOUT_MS} ms)"
    )

    def check_stock(call: ToolCallEvent) -> str:
        answer = stock_answer(call)
        say(f"  game: handler check_stock({json.dumps(call.arguments)}) -> {answer!r}")
        return answer

    agent.register_tool("check_stock", check_stock)
    say("  game: registers a check_stock handler, so the tool pause resumes by itself")
    step = agent.send_message("And a shield?")
    if step.pause is not None and step.pause.node_name == "listen":
        step = agent.resume()
    if step.pause is not None:
        say(f"  game: paused at '{step.pause.node_name}'; nobody answers...")
    result = agent.wait_complete()
    if result is None:
        say("  (no turn result)")
        return
    say(f"  NPC: {_quote(result.text)}")
    info = result.debug_info or {}
    route = [f"{n['name']}:{n['exit_route']}" for n in info.get("nodes", [])]
    say(f"  status={result.status} route={' -> '.join(route)}")
    say(f"  paused {result.paused_duration_s:.2f} s in {result.pause_count} pauses")


def _narrate_end(step: Step, say: Callable[[str], None]) -> None:
    result = step.result
    if result is None:
        say("  (the turn is still open)")
        return
    say(f"  NPC: {_quote(result.text)}")
    detail = f" error={result.error_code} {result.error_message}" if result.error_code else ""
    say(f"  status={result.status} pauses={result.pause_count}{detail}")
