"""Two NPCs answering at once on the game's own asyncio loop.

Shows: `tl.AsyncEngine`, the same API as `tl.Engine` with coroutines; two agents whose turns run
concurrently (`asyncio.gather`); a turn that pauses and is resumed from another task, as a game
would from its own update loop; reply text streamed through `set_on_answer_text`.

    python examples/asyncio_npc.py

It runs on the scripted mock model; its replies depend on who is asked, not on the order the
turns happen to run in.
"""

from __future__ import annotations

import asyncio

import turnloom as tl

REPLIES = {
    "guard": "Halt! The gate opens at dawn.",
    "smith": "Bring me iron and I will forge you a blade.",
}


def reply(request: tl.models.GenerationRequest) -> str:
    """The mock's answer: whichever NPC's system prompt it was given."""
    system = str(request.messages[0]["content"])
    return next(text for name, text in REPLIES.items() if name in system)


def npc_graph(name: str) -> tl.GraphDescription:
    """listen (pause) -> answer, with the NPC's name in its system prompt."""
    return (
        tl.GraphDescription()
        .add_node("listen", tl.PauseParams(default_exit="answer"))
        .add_node("answer", tl.GenerateParams(system_prompt=f"You are the {name} of Oakvale."))
        .set_start_node("listen")
        .set_default_model_name("mock")
    )


async def talk(engine: tl.AsyncEngine, name: str, line: str) -> str:
    """One turn with one NPC: send, wait at the pause a moment, resume, return the reply."""
    agent = await engine.create_agent(npc_graph(name))
    pieces: list[str] = []
    agent.set_on_answer_text(
        lambda text, is_delta, is_final: pieces.append(text) if is_delta else None
    )
    step = await agent.send_message(line)
    assert step.pause is not None
    await asyncio.sleep(0.01)  # the game's loop does other work while the turn is paused
    step = await agent.resume()
    streamed = "".join(pieces)
    assert streamed == step.final.text, (streamed, step.final.text)
    return step.final.text


async def main() -> int:
    async with tl.AsyncEngine(tl.MockModel("mock", fallback=reply)) as engine:
        guard, smith = await asyncio.gather(
            talk(engine, "guard", "Let me through."),
            talk(engine, "smith", "Can you make me a sword?"),
        )
    print(f"Guard: {guard}")
    print(f"Smith: {smith}")
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
