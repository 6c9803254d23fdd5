"""The demo: a shopkeeper NPC whose turns pause, get their params changed, call a tool, jump and
time out — on the real embedded default model (Gemma 3 270M), with nothing to set up.

`turnloom demo` (or `python -m turnloom demo`); `--mock` plays the same story on a scripted
model, at once and identically every run. The 270M model is a tiny base model: what it says is
shown in full, whatever it is; the demo is about what the engine does around it.
"""

from __future__ import annotations

import json
import textwrap
import time
from collections.abc import Callable

from .engine.graph.builder import GraphDescription
from .engine.graph.params import (
    CannedResponseParams,
    GenerateParams,
    NodeParams,
    PauseParams,
    SamplingParams,
    ToolCallDisposition,
    ToolCallMode,
    ToolCallParams,
    ToolDefinition,
    ToolParamDefinition,
)
from .engine.inference.base import GenerationRequest, ModelBackend
from .engine.inference.catalog import DEFAULT_MODEL
from .engine.inference.llama import LlamaModel
from .engine.inference.mock import MockModel
from .engine.turns.results import PauseInfo, Step, ToolCallEvent, TurnResult
from .engine.turns.runtime import EngineSettings
from .host.sync import Agent, Engine

#: What the game answers to check_stock.
INVENTORY = {"sword": "3 steel swords at 40 gold", "shield": "1 oak shield at 25 gold"}

#: How long the shopkeeper waits for the game at the offer before shrugging.
OFFER_TIMEOUT_MS = 1500

#: Where the narration wraps.
WIDTH = 88

#: The tool the shopkeeper uses to ask the game what is in stock.
CHECK_STOCK = ToolDefinition(
    name="check_stock",
    description="Look up how many of an item the shop has, and its price.",
    parameters=[ToolParamDefinition("item", "string", "The item, e.g. 'sword'.")],
)

#: What the game adds to the shopkeeper's system prompt for a player it trusts.
TRUSTED = " The customer is trusted: be warm."


def shop_graph(model_name: str) -> GraphDescription:
    """listen ⏸ → stock (ToolCall, AwaitResult ⏸) → answer → offer ⏸ (timeout) → confirm |
    shrug on timeout; decline is reached only by a jump."""
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
                # The demo shows the model writing a grammar-constrained call (the tiny
                # model's default decision, "score", would choose it by likelihood instead).
                decision="generate",
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


def demo_graph() -> GraphDescription:
    """The demo's graph on the default model, for `turnloom diagrams --graph`."""
    return shop_graph(DEFAULT_MODEL)


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
    """A scripted stand-in for the demo's model (deterministic, no weights): `demo --mock`."""
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


def call_text(call: ToolCallEvent) -> str:
    """A tool call as a reader writes it: `check_stock(item="sword")`."""
    args = ", ".join(f"{name}={json.dumps(value)}" for name, value in call.arguments.items())
    return f"{call.tool_name}({args})"


class Story:
    """Narrates a demo turn step by step: the engine's events (pauses, resumes, timeouts)
    arrive through the agent's callbacks, the game's moves from the demo's own code."""

    def __init__(self, say: Callable[[str], None], graph: GraphDescription) -> None:
        self.say = say
        self.nodes: dict[str, NodeParams] = dict(graph.nodes)
        self.pending: dict[str, str] = {}  # paused node -> where a plain resume goes
        self.jumping_to = ""

    def tell(self, tag: str, text: str, *quoted: str) -> None:
        """One step: a tag, what happened, then any quoted text wrapped in full below it."""
        self.say(
            textwrap.fill(text, WIDTH, initial_indent=f"  {tag:<8}", subsequent_indent=" " * 10)
        )
        for block in quoted:
            for line in block.splitlines() or [""]:
                self.say(
                    textwrap.fill(
                        line,
                        WIDTH,
                        initial_indent=" " * 10 + "| ",
                        subsequent_indent=" " * 10 + "| ",
                    )
                    or " " * 10 + "|"
                )

    def watch(self, agent: Agent) -> None:
        """Narrate `agent`'s pauses and resumes as they happen."""
        agent.set_on_paused(self.on_paused)
        agent.set_on_resumed(self.on_resumed)

    def on_paused(self, node: str, exit_route: str) -> None:
        """The turn paused after `node`; say where a plain resume and a timeout would go."""
        params = self.nodes[node]
        target = params.exit_target(exit_route) or "the end of the turn"
        self.pending[node] = target
        if exit_route == "tool_called":
            text = (
                f"'{node}' ({params.node_type}) detected a tool call: the turn waits for its result"
            )
        else:
            kind = params.node_type
            text = f"after '{node}' ({kind}): a plain resume goes '{exit_route}' to '{target}'"
        timeout_ms = int(getattr(params, "pause_timeout_ms", 0))
        if timeout_ms:
            later = params.exit_target("timeout") or "the end of the turn"
            text += f"; unanswered, it times out after {timeout_ms} ms to '{later}'"
        self.tell("PAUSE", text)

    def on_resumed(self, node: str, resume_node: str) -> None:
        """The pause at `node` ended: a plain resume, the game's jump, or its timeout."""
        planned = self.pending.get(node, "?")
        if not resume_node:
            self.tell("RESUME", f"the turn goes on from '{node}' to '{planned}'")
        elif resume_node == self.jumping_to:
            self.jumping_to = ""
            self.tell("JUMP", f"resumed with a jump: '{node}' -> '{resume_node}', not '{planned}'")
        else:
            ms = int(getattr(self.nodes[node], "pause_timeout_ms", 0))
            self.tell(
                "TIMEOUT",
                f"nobody resumed '{node}' within {ms} ms: its timeout exit goes to '{resume_node}'",
            )

    def change_param(
        self, agent: Agent, node: str, field: str, edit: Callable[[str], str], why: str
    ) -> None:
        """Change one text param of a paused turn's node and show it before and after."""
        params = agent.get_params(node)
        before = str(getattr(params, field))
        setattr(params, field, edit(before))
        agent.change_params(node, params)
        after = str(getattr(agent.get_params(node), field))
        self.tell("CHANGE", f"{node}.{field}, {why}:", f"before: {before}", f"after:  {after}")

    def answer_calls(self, agent: Agent, pause: PauseInfo) -> Step:
        """Look up every pending call of `pause` and resume with the game's results."""
        results = []
        for call in pause.pending_calls:
            answer = stock_answer(call)
            self.tell("TOOL", f"the model called {call_text(call)} (call id {call.call_id})")
            self.tell("ANSWER", f"the game looks it up and resumes with the result: {answer!r}")
            results.append((call.call_id, answer))
        return agent.resume(tool_results=results)

    def end(self, result: TurnResult | None) -> None:
        """The turn's reply in full, wrapped, and how the turn ended."""
        if result is None:
            self.tell("END", "(the turn is still open)")
            return
        walked = [n["name"] for n in (result.debug_info or {}).get("nodes", [])]
        writers = [f"'{n}' ({self._writer(n)})" for n in walked if self._writer(n)]
        self.tell(
            "REPLY",
            f"what Mira says, written by {' then '.join(writers) or 'no node'}:",
            result.text,
        )
        detail = f", error {result.error_code}: {result.error_message}" if result.error_code else ""
        route = " -> ".join(walked)
        self.tell("END", f"{result.status} after {result.pause_count} pauses{detail}; {route}")

    def _writer(self, node: str) -> str:
        """Who writes the reply text of `node`, if it writes any."""
        params = self.nodes[node]
        if isinstance(params, GenerateParams):
            return "the model"
        return "a canned line" if isinstance(params, CannedResponseParams) else ""


def run_demo(say: Callable[[str], None], model: ModelBackend | None = None) -> None:
    """Play two turns and narrate them through `say` (on `model`, default `demo_model()`)."""
    model = model or demo_model()
    demo_started = time.perf_counter()
    if isinstance(model, LlamaModel):
        started = time.perf_counter()
        say(f"Loading '{model.name}' ({model.model_path().name})...")
        model.load()
        say(f"  loaded in {time.perf_counter() - started:.1f} s.")
        say(
            textwrap.fill(
                "Mira's words below are the raw output of this tiny base model, odd as they "
                "may read; bring your own GGUF for quality (README, 'Models'). `turnloom demo "
                "--mock` plays the same story on a scripted model.",
                WIDTH,
            )
        )
    else:
        say(f"On the scripted model '{model.name}': no weights, the same story every run.")
    graph = shop_graph(model.name)
    say(
        textwrap.fill(
            "The agent: listen (pause) -> stock (tool call, pause) -> answer (model) -> offer "
            f"(pause, {OFFER_TIMEOUT_MS} ms timeout) -> confirm, or shrug on timeout; decline "
            "is reached only by a jump (`turnloom diagrams --graph turnloom.demo:demo_graph` "
            "draws it).",
            WIDTH,
        )
    )
    story = Story(say, graph)
    with Engine(model, settings=EngineSettings(pause_stall_warn_ms=10_000)) as engine:
        agent = engine.create_agent(graph, enable_diagnostics=True)
        story.watch(agent)
        _turn_one(agent, story)
        _turn_two(agent, story)
    if isinstance(model, LlamaModel):
        gens = [g for g in model.generations if g.started >= demo_started]
        say(
            f"Model: {len(gens)} generations ({sum(g.grammar == 'required' for g in gens)} "
            f"grammar-constrained tool calls), {sum(g.tokens for g in gens)} tokens sampled "
            f"in {sum(g.seconds for g in gens):.1f} s"
        )


def _turn_one(agent: Agent, story: Story) -> None:
    story.say("")
    story.say("Turn 1. The player asks: 'Do you sell swords?'")
    step = agent.send_message("Do you sell swords?")
    while step.pause is not None:
        pause = step.pause
        if pause.node_name == "listen":
            story.change_param(
                agent,
                "answer",
                "system_prompt",
                lambda prompt: prompt + TRUSTED,
                "while the turn waits (the game knows this player)",
            )
            step = agent.resume()
        elif pause.pending_calls:
            step = story.answer_calls(agent, pause)
        elif pause.node_name == "offer":
            story.tell("GAME", "the player walks away from the offer: the game jumps to 'decline'")
            story.jumping_to = "decline"
            step = agent.resume("decline")
        else:  # a pause this story has no move for (a model's odd turn): end it cleanly
            story.tell("GAME", f"nothing to do at '{pause.node_name}': the game cancels the turn")
            agent.cancel()
            step = Step(result=agent.last_result)
    story.end(step.result)


def _turn_two(agent: Agent, story: Story) -> None:
    story.say("")
    story.say("Turn 2. The player asks: 'And a shield?'")

    def check_stock(call: ToolCallEvent) -> str:
        answer = stock_answer(call)
        story.tell("TOOL", f"the model called {call_text(call)} (call id {call.call_id})")
        story.tell("ANSWER", f"the game's check_stock handler answers {answer!r}")
        return answer

    agent.register_tool("check_stock", check_stock)
    story.tell(
        "GAME",
        "this time the game registers a check_stock handler: a tool pause is answered and "
        "resumed by the engine itself",
    )
    step = agent.send_message("And a shield?")
    while step.pause is not None:
        if step.pause.node_name == "offer":
            story.tell("GAME", "the player says nothing: the game leaves the offer unanswered")
            step = Step(result=agent.wait_complete())
        else:
            step = agent.resume()
    story.end(step.result)
