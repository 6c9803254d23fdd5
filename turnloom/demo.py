"""The demo: a shopkeeper NPC whose turns pause, get their params changed, call a tool, jump and
time out — on the real embedded default model (Gemma 3 270M), with nothing to set up.

`turnloom demo` (or `python -m turnloom demo`); `--mock` plays the same story on a scripted
model, at once and identically every run. The graph is built for a model this small: the model
decides (which tool, which item, or small talk) by comparing the likelihood of each option, the
`score` decision, and Mira's lines are short templates the game fills from its own data while the
turn is paused. A bigger model could write the lines itself (a Generate node after the tool).
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from collections.abc import Callable

from .engine.graph.builder import GraphDescription
from .engine.graph.params import (
    CannedResponseParams,
    NodeParams,
    PauseParams,
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

#: What the game's ledger holds: item -> (how many, what they are, price in gold).
LEDGER = {
    "sword": (3, "steel swords", 40),
    "shield": (1, "oak shield", 25),
    "bow": (0, "yew bows", 30),
    "potion": (12, "healing potions", 5),
}

#: How long the shopkeeper waits for the game at the offer before shrugging.
OFFER_TIMEOUT_MS = 1500

#: Where the narration wraps.
WIDTH = 88

#: The tool the shopkeeper uses to ask the game what is in stock. The item is one of the
#: ledger's: the model chooses among those words, it never has to spell one out.
CHECK_STOCK = ToolDefinition(
    name="check_stock",
    description="Look up how many of an item the shop has, and its price.",
    parameters=[
        ToolParamDefinition("item", "string", "The item the customer asks about.", enum=[*LEDGER])
    ],
)

#: The quote's line until the game writes the real one (shown only if it never does).
QUOTE_PLACEHOLDER = "Let me check the ledger..."


def shop_graph(model_name: str) -> GraphDescription:
    """listen ⏸ → ask (ToolCall, AwaitResult ⏸) → quote → offer ⏸ (timeout) → confirm | shrug
    on timeout; no tool called → chat; decline is reached only by a jump."""
    return (
        GraphDescription()
        .add_node("listen", PauseParams(default_exit="ask"))
        .add_node(
            "ask",
            ToolCallParams(
                tools=[CHECK_STOCK],
                disposition=ToolCallDisposition.AwaitResult,
                mode=ToolCallMode.DetectOnly,
                # decision '' = the model's default: `score` on the tiny default model (the
                # call chosen by likelihood), `generate` on models that write calls well.
                tool_called_exit="quote",
                no_tool_called_exit="chat",
            ),
        )
        .add_node("quote", CannedResponseParams(lines=[QUOTE_PLACEHOLDER], default_exit="offer"))
        .add_node(
            "offer",
            PauseParams(
                pause_timeout_ms=OFFER_TIMEOUT_MS, default_exit="confirm", timeout_exit="shrug"
            ),
        )
        .add_node("confirm", CannedResponseParams(lines=["Deal! Pleasure doing business."]))
        .add_node("decline", CannedResponseParams(lines=["Maybe next time, traveller."]))
        .add_node("shrug", CannedResponseParams(lines=["...I'll take that as a no."]))
        .add_node(
            "chat", CannedResponseParams(lines=["Any time, traveller. Safe roads out there!"])
        )
        .set_start_node("listen")
        .set_default_model_name(model_name)
    )


def demo_graph() -> GraphDescription:
    """The demo's graph on the default model, for `turnloom diagrams --graph`."""
    return shop_graph(DEFAULT_MODEL)


def _scripted_shopkeeper(request: GenerationRequest) -> str:
    """The ToolCall node's call for the item the player named, else a plain answer (no call)."""
    last_user = next(m["content"] for m in reversed(request.messages) if m["role"] == "user")
    item = next((name for name in LEDGER if name in last_user.lower()), None)
    if item is None:
        return "Thank you!"
    return f'<tool_call>{{"name": "check_stock", "arguments": {{"item": "{item}"}}}}</tool_call>'


def scripted_model() -> MockModel:
    """A scripted stand-in for the demo's model (deterministic, no weights): `demo --mock`."""
    return MockModel("shopkeeper", fallback=_scripted_shopkeeper)


def demo_model() -> ModelBackend:
    """The model the demo runs on: the catalog's default, the embedded Gemma 3 270M."""
    return LlamaModel.from_catalog(DEFAULT_MODEL)


def stock_answer(call: ToolCallEvent) -> str:
    """What the game answers to a check_stock call: the ledger's entry for the item."""
    item = str(call.arguments.get("item", "")).strip().lower()
    if item not in LEDGER:
        return f"no {item or 'such item'} in the ledger"
    count, what, price = LEDGER[item]
    return f"{count} {what} at {price} gold" if count else f"no {what} left"


def quote_line(call: ToolCallEvent) -> str:
    """Mira's line for a check_stock call, filled from the ledger by the game."""
    item = str(call.arguments.get("item", "")).strip().lower()
    if item not in LEDGER:
        return "I don't stock that, I'm afraid."
    count, what, price = LEDGER[item]
    if not count:
        return f"Sorry, I'm out of {what} until the caravan comes."
    if count == 1:
        return f"I have one {what} left, {price} gold. Shall I wrap it up?"
    return f"I have {count} {what}, {price} gold each. Shall I wrap one up?"


def call_text(call: ToolCallEvent) -> str:
    """A tool call as a reader writes it: `check_stock(item="sword")`."""
    args = ", ".join(f"{name}={json.dumps(value)}" for name, value in call.arguments.items())
    return f"{call.tool_name}({args})"


#: ANSI colours of the step tags, by tag (the engine's moves, the game's, the model's).
TAG_COLORS = {
    "PAUSE": "33",
    "RESUME": "32",
    "JUMP": "32",
    "TIMEOUT": "31",
    "CHANGE": "36",
    "GAME": "36",
    "ANSWER": "36",
    "TOOL": "35",
    "DECIDE": "35",
    "REPLY": "1",
    "END": "2",
}


def use_colour(stream: object = None) -> bool:
    """Colours when the output is a terminal and NO_COLOR is not set (https://no-color.org)."""
    stream = stream or sys.stdout
    isatty = getattr(stream, "isatty", None)
    return (
        bool(isatty and isatty())
        and not os.environ.get("NO_COLOR")
        and (os.environ.get("TERM") != "dumb")
    )


class Story:
    """Narrates a demo turn step by step: the engine's events (pauses, resumes, timeouts)
    arrive through the agent's callbacks, the game's moves from the demo's own code."""

    def __init__(
        self, say: Callable[[str], None], graph: GraphDescription, colour: bool = False
    ) -> None:
        self.say = say
        self.colour = colour
        self.nodes: dict[str, NodeParams] = dict(graph.nodes)
        self.pending: dict[str, str] = {}  # paused node -> where a plain resume goes
        self.jumping_to = ""

    def tell(self, tag: str, text: str, *quoted: str) -> None:
        """One step: a tag, what happened, then any quoted text wrapped in full below it."""
        line = textwrap.fill(text, WIDTH, initial_indent=f"  {tag:<8}", subsequent_indent=" " * 10)
        if self.colour and tag in TAG_COLORS:
            # Only the tag is coloured, after wrapping, so the widths stay those of the text.
            line = f"  \x1b[{TAG_COLORS[tag]}m{tag:<8}\x1b[0m{line[10:]}"
        self.say(line)
        for block in quoted:
            for part in block.splitlines() or [""]:
                self.say(
                    textwrap.fill(
                        part,
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
            text = f"'{node}' ({params.node_type}) chose a tool call: the turn waits for its result"
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

    def answer_calls(self, agent: Agent, pause: PauseInfo) -> Step:
        """Look up every pending call of `pause`, write Mira's quote from the ledger into the
        'quote' node (a param change while paused), and resume with the game's results."""
        results = []
        for call in pause.pending_calls:
            answer = stock_answer(call)
            self.tell(
                "TOOL", f"the model asks the game: {call_text(call)} (call id {call.call_id})"
            )
            self.tell("ANSWER", f"the game looks it up in its ledger: {answer!r}")
            results.append((call.call_id, answer))
            before = getattr(agent.get_params("quote"), "lines", [""])[0]
            agent.change_params("quote", {"lines": [quote_line(call)]})
            after = getattr(agent.get_params("quote"), "lines", [""])[0]
            self.tell(
                "CHANGE",
                "quote.lines, while the turn waits: Mira's line filled from the ledger",
                f"before: {before}",
                f"after:  {after}",
            )
        return agent.resume(tool_results=results)

    def decision(self, result: TurnResult | None) -> None:
        """How the model decided at 'ask' (from the turn's diagnostics), when it called nothing."""
        nodes = (result.debug_info or {}).get("nodes", []) if result is not None else []
        for entry in nodes:
            if entry["name"] == "ask" and entry["exit_route"] == "no_tool_called":
                self.tell("DECIDE", "the model chose no tool: small talk goes to 'chat'")

    def end(self, result: TurnResult | None) -> None:
        """The turn's reply in full, wrapped, and how the turn ended."""
        if result is None:
            self.tell("END", "(the turn is still open)")
            return
        walked = [n["name"] for n in (result.debug_info or {}).get("nodes", [])]
        writers = [f"'{n}'" for n in walked if isinstance(self.nodes[n], CannedResponseParams)]
        self.tell(
            "REPLY",
            f"what Mira says, the lines of {' then '.join(writers) or 'no node'}:",
            result.text,
        )
        detail = f", error {result.error_code}: {result.error_message}" if result.error_code else ""
        route = " -> ".join(walked)
        pauses = f"{result.pause_count} pause{'s' if result.pause_count != 1 else ''}"
        self.tell("END", f"{result.status} after {pauses}{detail}; {route}")


def run_demo(
    say: Callable[[str], None], model: ModelBackend | None = None, *, colour: bool = False
) -> None:
    """Play three turns and narrate them through `say` (on `model`, default `demo_model()`;
    `colour`: ANSI colours on the step tags)."""
    model = model or demo_model()
    demo_started = time.perf_counter()
    if isinstance(model, LlamaModel):
        started = time.perf_counter()
        # Said before the path is asked for: on first use that unpacks the GGUF (253 MB).
        say(f"Loading the model '{model.name}' (the first run also unpacks its file)...")
        path = model.model_path()
        model.load()
        say(f"  {path.name} loaded in {time.perf_counter() - started:.1f} s.")
    else:
        say(f"On the scripted model '{model.name}': no weights, the same story every run.")
    graph = shop_graph(model.name)
    say(
        textwrap.fill(
            "Mira's agent: listen (pause) -> ask (the model picks a tool call or none; the "
            "turn pauses for the result) -> quote -> offer (pause, "
            f"{OFFER_TIMEOUT_MS} ms timeout) -> confirm, or shrug on timeout; small talk goes "
            "to chat; decline is reached only by a jump. Picture: docs/assets/demo_graph.svg.",
            WIDTH,
        )
    )
    story = Story(say, graph, colour)
    with Engine(model, settings=EngineSettings(pause_stall_warn_ms=10_000)) as engine:
        agent = engine.create_agent(graph, enable_diagnostics=True)
        story.watch(agent)
        _turn(agent, story, 1, "Do you sell swords?", "walks away")
        _turn(agent, story, 2, "And a shield, how much?", "silent")
        _turn(agent, story, 3, "Thank you, goodbye!", "silent")
    if isinstance(model, LlamaModel):
        gens = [g for g in model.generations if g.started >= demo_started]
        say(
            f"Model: {len(gens)} generations, {sum(g.tokens for g in gens)} tokens sampled "
            f"in {sum(g.seconds for g in gens):.1f} s; its tool decisions are scored, not written."
        )


def _turn(agent: Agent, story: Story, number: int, line: str, at_offer: str) -> None:
    """One turn of the story: the player says `line`; at the offer the player either walks
    away (the game jumps to 'decline') or stays silent (the offer times out)."""
    story.say("")
    story.say(f"Turn {number}. The player says: {line!r}")
    step = agent.send_message(line)
    while step.pause is not None:
        pause = step.pause
        if pause.node_name == "listen":
            story.tell("GAME", "the player is not in a fight: the game lets Mira answer")
            step = agent.resume()
        elif pause.pending_calls:
            step = story.answer_calls(agent, pause)
        elif pause.node_name == "offer" and at_offer == "walks away":
            story.tell("GAME", "the player walks away from the offer: the game jumps to 'decline'")
            story.jumping_to = "decline"
            step = agent.resume("decline")
        elif pause.node_name == "offer":
            story.tell("GAME", "the player says nothing: the game leaves the offer unanswered")
            step = Step(result=agent.wait_complete())
        else:  # a pause this story has no move for: end it cleanly
            story.tell("GAME", f"nothing to do at '{pause.node_name}': the game cancels the turn")
            agent.cancel()
            step = Step(result=agent.last_result)
    story.decision(step.result)
    story.end(step.result)
