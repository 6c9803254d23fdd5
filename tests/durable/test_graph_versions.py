"""Graph versions (docs/reference/durability.md#graph-versions): a snapshot records the graph's
version and structural fingerprint; restoring it into a patched graph keeps it as it is when only
mutable params changed, and otherwise needs the game's migration, or is refused naming both.

The edits are the ones a game patch makes: a prompt retuned, a node added, a node removed while
an agent is paused on it.
"""

from __future__ import annotations

from typing import Any

import pytest

import turnloom as tl
from turnloom.engine.graph.versions import graph_fingerprint


def shop(version: str, prompt: str = "You are Mira.", extra: bool = False) -> tl.GraphDescription:
    """listen (pause) -> answer; version 2 of the patch adds a `greet` node after listen."""
    graph = tl.GraphDescription().set_version(version)
    graph.add_node("listen", tl.PauseParams(default_exit="greet" if extra else "answer"))
    if extra:
        graph.add_node("greet", tl.CannedResponseParams(lines=["Welcome!"], default_exit="answer"))
    graph.add_node("answer", tl.GenerateParams(system_prompt=prompt))
    return graph.set_start_node("listen").set_default_model_name("mock")


def _paused(local: tl.Engine, graph: tl.GraphDescription) -> tuple[tl.Agent, dict[str, Any]]:
    agent = local.create_agent(graph)
    assert agent.send_message("hello").paused
    return agent, agent.snapshot().to_dict()


@pytest.fixture
def local() -> Any:
    with tl.Engine(tl.MockModel("mock"), clock=tl.VirtualClock()) as eng:
        yield eng


def test_a_snapshot_records_the_version_and_the_structure() -> None:
    assert graph_fingerprint(shop("1")) == graph_fingerprint(shop("2", prompt="You are Mira!"))
    assert graph_fingerprint(shop("1")) != graph_fingerprint(shop("1", extra=True))
    with tl.Engine(tl.MockModel("mock")) as plain:
        _, doc = _paused(plain, shop("1.0"))
    assert doc["graph_version"] == "1.0"
    assert doc["graph_fingerprint"] == graph_fingerprint(shop("1.0"))
    assert doc["graph"]["version"] == "1.0"


def test_a_changed_default_restores_as_it_is_and_changed_params_still_win(
    local: tl.Engine,
) -> None:
    agent, doc = _paused(local, shop("1.0"))
    agent.change_params("answer", {"sampling": {"max_tokens": 7}})
    doc = agent.snapshot().to_dict()
    agent.destroy()
    patched = shop("1.1", prompt="You are Mira, the patched one.")
    restored = local.restore(doc, graph=patched)
    params = restored.get_params("answer")
    assert isinstance(params, tl.GenerateParams)
    assert params.sampling.max_tokens == 7  # the agent's own change
    assert params.system_prompt == "You are Mira."  # changed nodes keep their whole params
    assert restored.snapshot().to_dict()["graph_version"] == "1.1"
    assert restored.resume().final.status is tl.TurnStatus.SUCCESS


def test_an_untouched_node_takes_the_patched_default(local: tl.Engine) -> None:
    agent, doc = _paused(local, shop("1.0"))
    agent.destroy()
    restored = local.restore(doc, graph=shop("1.1", prompt="You are Mira, patched."))
    params = restored.get_params("answer")
    assert (
        isinstance(params, tl.GenerateParams) and params.system_prompt == "You are Mira, patched."
    )


def test_another_structure_is_refused_naming_both_versions_and_creates_nothing(
    local: tl.Engine,
) -> None:
    agent, doc = _paused(local, shop("1.0"))
    agent.destroy()
    before = local.agent_ids()
    with pytest.raises(tl.InvalidParamValue) as refused:
        local.restore(doc, graph=shop("2.0", extra=True))
    message = refused.value.message
    assert "version '1.0'" in message and "version '2.0'" in message and "migrate=" in message
    assert local.agent_ids() == before


def test_a_migration_carries_a_snapshot_into_a_graph_with_a_new_node(local: tl.Engine) -> None:
    agent, doc = _paused(local, shop("1.0"))
    agent.destroy()
    seen: list[str] = []

    def migrate(document: dict[str, Any]) -> dict[str, Any]:
        seen.append(document["graph_version"])
        # The paused pause now leads to the new node.
        document["turn"]["pause"]["pending_target"] = "greet"
        return document

    restored = local.restore(doc, graph=shop("2.0", extra=True), migrate=migrate)
    assert seen == ["1.0"]
    result = restored.resume().final
    assert result.text.startswith("Welcome!")


def test_a_node_removed_while_paused_on_it_needs_the_migration_to_move_the_agent(
    local: tl.Engine,
) -> None:
    # Version 3 drops `listen`, where the saved turn is paused: it cannot stay there.
    v3 = tl.GraphDescription().set_version("3.0")
    v3.add_node("answer", tl.GenerateParams(system_prompt="You are Mira."))
    v3.set_start_node("answer").set_default_model_name("mock")
    paused_agent, paused_doc = _paused(local, shop("2.0", extra=True))
    paused_agent.destroy()
    with pytest.raises(tl.InvalidParamValue, match=r"version '2.0'.*version '3.0'"):
        local.restore(paused_doc, graph=v3)

    def drop_the_open_turn(document: dict[str, Any]) -> dict[str, Any]:
        document["turn"] = None  # the game's choice: the player asks again
        return document

    restored = local.restore(paused_doc, graph=v3, migrate=drop_the_open_turn)
    assert restored.wait().pause is None
    assert restored.send_message("hello again").final.status is tl.TurnStatus.SUCCESS
    # Without the migration's fix the migrated snapshot is checked like any: still refused.
    with pytest.raises(tl.InvalidParamValue, match="not in the graph"):
        local.restore(paused_doc, graph=v3, migrate=lambda document: document)


def test_a_version_too_long_is_3003() -> None:
    with tl.Engine(tl.MockModel("mock")) as engine, pytest.raises(tl.GraphCompilationFailed):
        engine.create_agent(shop("x" * 65))
