"""Test helpers: small graphs and a recorder of agent callbacks."""

from __future__ import annotations

import turnloom as tl


def graph_of(*nodes: tuple[str, tl.NodeParams], start: str | None = None) -> tl.GraphDescription:
    """A graph of `nodes`, starting at the first, on the mock model."""
    g = tl.GraphDescription()
    for name, params in nodes:
        g.add_node(name, params)
    return g.set_start_node(start or nodes[0][0]).set_default_model_name("mock")


class Recorder:
    """Collects every callback of one agent, in order."""

    def __init__(self, agent: tl.Agent) -> None:
        self.events: list[tuple[object, ...]] = []
        self.results: list[tl.TurnResult] = []
        agent.set_on_paused(lambda node, exit_: self.events.append(("paused", node, exit_)))
        agent.set_on_resumed(lambda node, to: self.events.append(("resumed", node, to)))
        agent.set_on_answer_text(lambda t, d, f: self.events.append(("text", t, d, f)))
        agent.set_on_turn_complete(self._complete)

    def _complete(self, result: tl.TurnResult) -> None:
        self.events.append(("complete", result.status.value))
        self.results.append(result)

    def finals(self) -> list[str]:
        """The text of every is_final chunk."""
        return [str(e[1]) for e in self.events if e[0] == "text" and e[3]]
