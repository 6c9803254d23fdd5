"""A shopkeeper who waits at a pause, so the game can change her mind before she answers.

Shows: a Pause node in front of a Generate node; what the game sees at the pause; changing a
later node's params while the turn is paused (her system prompt, from the game's own state);
resuming along the wired exit; and, on the second turn, resuming by jumping to another node
instead (the shop has closed).

    python examples/shopkeeper.py          # on the scripted mock model: instant, no weights
    python examples/shopkeeper.py --real   # on the default model, Gemma 3 270M (short, greedy)

The 270M model is a tiny base model: what it says is often odd. The example is about what the
game does around it.
"""

from __future__ import annotations

import argparse

import turnloom as tl

PROMPT = "You are Mira, who keeps the general store in Oakvale. Answer in one short sentence."
TRUSTED = " The customer is an old friend: offer a discount."


def shop_graph(model_name: str) -> tl.GraphDescription:
    """listen (pause) -> answer (the model's reply); closed is reached only by a jump."""
    return (
        tl.GraphDescription()
        .add_node("listen", tl.PauseParams(default_exit="answer"))
        .add_node(
            "answer",
            tl.GenerateParams(
                system_prompt=PROMPT,
                sampling=tl.SamplingParams(temperature=0.0, max_tokens=24),  # greedy, short
            ),
        )
        .add_node("closed", tl.CannedResponseParams(lines=["Sorry, the shop is closed."]))
        .set_start_node("listen")
        .set_default_model_name(model_name)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="use the default model")
    args = parser.parse_args(argv)

    if args.real:
        engine = tl.Engine()  # the default model, loaded at the first generation
        model_name = tl.models.DEFAULT_MODEL
    else:
        engine = tl.Engine(tl.MockModel("mock", script=["Swords are 40 gold; 30 for you."]))
        model_name = "mock"
    player = {"name": "Ada", "friend_of_mira": True}  # the game's own state

    with engine:
        agent = engine.create_agent(shop_graph(model_name))

        print("Player: Do you sell swords?")
        step = agent.send_message("Do you sell swords?")
        assert step.pause is not None
        print(f"  [paused at {step.pause.node_name!r}, next: {step.pause.pending_target!r}]")
        if player["friend_of_mira"]:
            agent.change_params("answer", {"system_prompt": PROMPT + TRUSTED})
            print("  [the game tells Mira the player is a friend]")
        result = agent.resume().final
        print(f"Mira: {result.text}   ({result.status.value})")

        print("Player: And a shield?")
        step = agent.send_message("And a shield?")
        print("  [the game closes the shop: jump to 'closed']")
        result = agent.resume(resume_node="closed").final
        print(f"Mira: {result.text}   ({result.status.value})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
