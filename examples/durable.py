"""Save an NPC in the middle of a turn, close the engine, and carry on in another one.

Shows: a SQLite store (`store=` a file path): every agent is written when it comes to rest (a
pause, a completion, a param change), and a new engine on the same file finds it again, paused
where it was; tags to tell agents apart; `agent.snapshot()` and `engine.restore()` for a save
file the game keeps itself.

    python examples/durable.py

The store lives in a temporary folder, so the example can run any number of times in a row;
a game would keep the file beside its save games.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import turnloom as tl

GRAPH = (
    tl.GraphDescription()
    .add_node("listen", tl.PauseParams(default_exit="answer"))
    .add_node("answer", tl.GenerateParams(system_prompt="You are Mira, a shopkeeper."))
    .set_start_node("listen")
    .set_default_model_name("mock")
)


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        game_db = Path(folder) / "npcs.db"

        # The first session of the game: Mira is asked something, and the game quits while the
        # turn is paused.
        with tl.Engine(tl.MockModel("mock"), store=game_db) as engine:
            mira = engine.create_agent(GRAPH, tags={"npc": "mira"})
            step = mira.send_message("Do you sell swords?")
            assert step.pause is not None
            print(f"session 1: Mira is paused at {step.pause.node_name!r}; the game quits")

        # The next session, a new engine on the same file: she is back, still paused.
        with tl.Engine(tl.MockModel("mock"), store=game_db) as engine:
            (agent_id,) = engine.agent_ids()  # every agent the store holds
            mira = engine.agent(agent_id)
            print(f"session 2: found {mira.tags['npc']!r}, agent {mira.agent_id}")
            result = mira.resume().final
            print(f"session 2: Mira: {result.text}")
            assert len(mira.dialog) == 2  # the player's line and her reply
            saved = mira.snapshot()  # bytes, for a save file of the game's own

        # Without a store: restore the snapshot in an engine of its own.
        with tl.Engine(tl.MockModel("mock")) as engine:
            mira = engine.restore(saved)
            print(f"restored from {len(saved)} bytes: {len(mira.dialog)} messages of dialog")
            mira.send_message("Thanks, bye!")
            print(f"restored: Mira: {mira.resume().final.text}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
