"""The soak's own liveness (bench/soak.py): a player who talks over an NPC plays the turn that
message starts, so a driver waiting for its agent's open turn is never left on a pause that
nobody answers. The soak hung on exactly that: a tool-call message queued behind a driver's
turn (Enqueue), its turn paused without a deadline after the driver cancelled its own."""

from __future__ import annotations

import asyncio
import random

import turnloom as tl
from bench import soak


def test_a_queued_players_turn_is_played_so_the_driver_is_not_left_waiting() -> None:
    async def scenario() -> None:
        report = soak.RoundReport()
        fates: list[tl.MessageFate] = []
        ledger = soak.Ledger(policy="enqueue")
        async with tl.AsyncEngine(tl.MockModel("mock"), clock=tl.VirtualClock()) as engine:
            agent = await engine.create_agent(soak.soak_graph(0), input_policy="enqueue")
            agent.set_on_answer_text(ledger.on_answer_text)
            agent.set_on_turn_complete(ledger.on_turn_complete)
            agent.set_on_message(lambda event: (fates.append(event.fate), ledger.on_message(event)))
            assert (await agent.send_message("hello")).paused  # the driver's turn, at "gate"
            door = soak.MESSAGES[2]  # the mock reads it as a call of open_door
            player = asyncio.ensure_future(soak.talk(agent, door, random.Random(1), report))
            for _ in range(100):
                if tl.MessageFate.QUEUED in fates:
                    break
                await asyncio.sleep(0)
            assert tl.MessageFate.QUEUED in fates, fates
            # The driver gives up its turn; the player's starts and waits at its pauses, which
            # have no deadline: only the player can take it to its end.
            assert await agent.cancel()
            # A net against a hang, not a measurement: the turn ends within a few iterations.
            last = await asyncio.wait_for(agent.wait_complete(), 10)
            await asyncio.wait_for(player, 10)
        assert last is not None and last.text == ledger.finals[-1]
        assert ledger.completions[0] == "cancelled" and len(ledger.completions) == 2
        assert ledger.starts == 2 and not report.violations, report.violations

    asyncio.run(scenario())
