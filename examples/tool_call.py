"""A tool call answered by the game: the shopkeeper asks the game what is in stock.

Shows: a ToolCall node with the AwaitResult disposition, which pauses the turn with the call
pending; the game reading the call's tool and typed arguments, doing the work and resuming with
the result, which the model sees before it writes its reply. On the second turn the game has
registered a handler for the tool instead, and the engine runs it and resumes by itself.

    python examples/tool_call.py

It runs on the scripted mock model, whose script plays the model's side: a call written in the
model's markup, then a reply.
"""

from __future__ import annotations

from typing import Any

import turnloom as tl

STOCK = {"sword": "3 steel swords, 40 gold each", "shield": "no shields left"}

CHECK_STOCK = tl.ToolDefinition(
    name="check_stock",
    description="Look up what the shop has of an item, and its price.",
    parameters=[tl.ToolParamDefinition("item", "string", "The item, e.g. 'sword'.")],
)

GRAPH = (
    tl.GraphDescription()
    .add_node(
        "stock",
        tl.ToolCallParams(
            tools=[CHECK_STOCK],
            disposition=tl.ToolCallDisposition.AwaitResult,
            mode=tl.ToolCallMode.DetectOnly,  # the Generate node below writes the reply
            tool_called_exit="answer",
            no_tool_called_exit="answer",
        ),
    )
    .add_node("answer", tl.GenerateParams(system_prompt="You are Mira, a shopkeeper."))
    .set_start_node("stock")
    .set_default_model_name("mock")
)


def call(item: str) -> str:
    """A call as the mock model writes it (Hermes markup)."""
    return f'<tool_call>{{"name": "check_stock", "arguments": {{"item": "{item}"}}}}</tool_call>'


def look_up(arguments: dict[str, Any]) -> str:
    """The game's side of check_stock."""
    return STOCK.get(str(arguments["item"]), "never heard of it")


def main() -> int:
    model = tl.MockModel(
        "mock",
        script=[
            call("sword"),
            "I have three steel swords, 40 gold each.",
            call("shield"),
            "Sorry, I sold my last shield this morning.",
        ],
    )
    with tl.Engine(model) as engine:
        agent = engine.create_agent(GRAPH)

        # Turn 1: the game answers the call itself, at the pause.
        print("Player: Do you have swords?")
        step = agent.send_message("Do you have swords?")
        assert step.pause is not None and step.pause.awaits_results
        results = []
        for pending in step.pause.pending_calls:
            print(f"  [the model calls {pending.tool_name}({pending.arguments})]")
            results.append((pending.call_id, look_up(pending.arguments)))
        step = agent.resume(tool_results=results)
        print(f"Mira: {step.final.text}")

        # Turn 2: a registered handler answers; the turn resumes without the game's help.
        agent.register_tool("check_stock", lambda event: look_up(event.arguments))
        print("Player: And shields?")
        result = agent.send_message("And shields?").final
        print(f"Mira: {result.text}")
        print(
            f"  [the tool's result the model saw: {model.requests[-1].messages[-1]['content']!r}]"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
