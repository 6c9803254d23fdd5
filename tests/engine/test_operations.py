"""Every row of the operations table (docs/reference/errors.md#operations-and-states): a
rejected call changes nothing."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

import turnloom as tl
from tests.helpers import Recorder, graph_of

Code = tl.ErrorCode


def graph() -> tl.GraphDescription:
    return graph_of(
        ("gate", tl.PauseParams(default_exit="answer", pause_timeout_ms=0)),
        ("answer", tl.GenerateParams(system_prompt="be brief")),
    )


def code_of(call: object, *args: object) -> Code:
    with pytest.raises(tl.TurnloomError) as info:
        call(*args)  # type: ignore[operator]
    return info.value.code


def snapshot(agent: tl.Agent) -> tuple[object, ...]:
    step = agent.wait()
    return (step.pause, agent.get_params("gate"), agent.get_params("answer"))


def test_send_message_when_idle_starts_a_turn(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph())
    assert agent.send_message("hi").pause == tl.PauseInfo("gate", "default", "answer", 0)


def test_change_params_when_idle_is_applied_and_used(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    agent = engine.create_agent(graph())
    params = agent.get_params("answer")
    assert isinstance(params, tl.GenerateParams)
    params.system_prompt = "be verbose"
    agent.change_params("answer", params)
    assert agent.get_params("answer") == params
    agent.send_message("hi")
    agent.resume()
    assert mock_model.requests[-1].messages[0] == {"role": "system", "content": "be verbose"}


def test_change_params_accepts_a_mapping_of_fields(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph())
    agent.change_params("answer", {"placement": "before_user_as_system", "stream": False})
    params = agent.get_params("answer")
    assert isinstance(params, tl.GenerateParams)
    assert params.placement is tl.Placement.BeforeUserAsSystem and params.stream is False
    assert params.system_prompt == "be brief"


def test_get_params_returns_a_copy(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph())
    params = agent.get_params("answer")
    assert isinstance(params, tl.GenerateParams)
    params.system_prompt = "mutated locally"
    assert agent.get_params("answer").system_prompt == "be brief"  # type: ignore[attr-defined]


def test_agents_from_one_graph_do_not_share_params(engine: tl.Engine) -> None:
    g = graph()
    a, b = engine.create_agent(g), engine.create_agent(g)
    a.change_params("answer", {"system_prompt": "only a"})
    assert b.get_params("answer").system_prompt == "be brief"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "node, change, code, words",
    [
        ("ghost", {"system_prompt": "x"}, Code.UnknownNode, "'ghost'"),
        ("gate", {"default_exit": ""}, Code.ParamNotMutable, "'default_exit'"),
        ("gate", {"pause_timeout_ms": 5}, Code.ParamNotMutable, "'pause_timeout_ms'"),
        ("answer", {"model_name": "mock"}, Code.ParamNotMutable, "'model_name'"),
        ("answer", {"sampling": {"top_p": 1.5}}, Code.InvalidParamValue, "'sampling.top_p'"),
        ("answer", {"stream": "yes"}, Code.InvalidParamValue, "'stream'"),
        ("answer", {"no_such_field": 1}, Code.InvalidParamValue, "no_such_field"),
        ("answer", tl.PauseParams(), Code.InvalidParamValue, "Generate"),
    ],
)
@pytest.mark.parametrize("phase", ["idle", "paused"])
def test_bad_change_params_is_rejected_and_changes_nothing(
    engine: tl.Engine, node: str, change: object, code: Code, words: str, phase: str
) -> None:
    agent = engine.create_agent(graph())
    if phase == "paused":
        agent.send_message("hi")
    before = snapshot(agent)
    with pytest.raises(tl.TurnloomError) as info:
        agent.change_params(node, change)  # type: ignore[arg-type]
    assert info.value.code == code and words in info.value.message
    assert snapshot(agent) == before


def test_structural_field_set_to_its_current_value_is_fine(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph())
    params = agent.get_params("gate")
    agent.change_params("gate", dataclasses.replace(params))  # type: ignore[type-var]


def test_operations_while_running_or_resuming_are_3004(mock_model: tl.MockModel) -> None:
    """Drive the core directly on its loop, to observe the running and resuming states."""

    async def main() -> None:
        async with tl.AsyncEngine(mock_model) as engine:
            agent = await engine.create_agent(graph())
            await agent.send_message("hi")
            core = agent._core
            # The core's own resume (the server's way: not inline, see `executor._launch`):
            # accepted now, its continuation a task of the next loop iteration.
            step = asyncio.get_running_loop().create_future()
            core.resume("", (), step)
            assert core.turn is not None and core.turn.state == "resuming"
            with pytest.raises(tl.TurnloomError) as info:
                await agent.send_message("x")
            assert info.value.code == Code.AgentBusy
            with pytest.raises(tl.TurnloomError) as info:
                await agent.change_params("answer", {"system_prompt": "x"})
            assert info.value.code == Code.AgentBusy
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            assert core.turn is not None and core.turn.state == "running"  # generating
            for call in (agent.send_message("x"), agent.change_params("answer", {})):
                with pytest.raises(tl.TurnloomError) as info:
                    await call
                assert info.value.code == Code.AgentBusy
            with pytest.raises(tl.TurnloomError) as info:
                await agent.resume()
            assert info.value.code == Code.AgentNotPaused
            assert (await step).result is not None

    asyncio.run(main())


def test_cancel_a_running_turn_stops_generation(mock_model: tl.MockModel) -> None:
    async def main() -> None:
        mock_model.push("one two three four five six seven eight nine ten")
        async with tl.AsyncEngine(mock_model) as engine:
            agent = await engine.create_agent(graph_of(("answer", tl.GenerateParams())))
            deltas: list[str] = []
            agent.set_on_answer_text(lambda t, d, f: deltas.append(t) if d else None)
            turn = asyncio.ensure_future(agent.send_message("hi"))
            while len(deltas) < 3:
                await asyncio.sleep(0)
            assert await agent.cancel() is True
            result = (await turn).result
            assert result is not None and result.status == tl.TurnStatus.CANCELLED
            assert result.text == "one two three"
            await asyncio.sleep(0)
            assert mock_model.cancelled_generations == 1
            assert len(deltas) == 3  # nothing streamed after the cancel

    asyncio.run(main())


def test_cancel_with_no_open_turn_is_not_an_error(engine: tl.Engine) -> None:
    assert engine.create_agent(graph()).cancel() is False


def test_destroyed_agent_rejects_everything_with_3002(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph())
    rec = Recorder(agent)
    agent.send_message("hi")
    agent.destroy()
    assert [r.status for r in rec.results] == [tl.TurnStatus.CANCELLED]
    for call, args in [
        (agent.send_message, ("x",)),
        (agent.resume, ()),
        (agent.change_params, ("answer", {})),
        (agent.get_params, ("answer",)),
        (agent.cancel, ()),
        (agent.destroy, ()),
        (agent.wait, ()),
    ]:
        assert code_of(call, *args) == Code.AgentAlreadyDestroyed, call


def test_a_cancelled_turn_leaves_no_trace_in_the_dialog(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    agent = engine.create_agent(graph())
    agent.send_message("forget me")
    agent.cancel()
    agent.send_message("hello")
    agent.resume()
    users = [m["content"] for m in mock_model.requests[-1].messages if m["role"] == "user"]
    assert users == ["hello"]


def test_a_partial_nested_mapping_changes_only_the_fields_it_names(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph())
    agent.change_params("answer", {"sampling": {"temperature": 0.1, "max_tokens": 9}})
    agent.change_params("answer", {"sampling": {"top_k": 5}})
    sampling = agent.get_params("answer").sampling  # type: ignore[attr-defined]
    assert (sampling.temperature, sampling.max_tokens, sampling.top_k) == (0.1, 9, 5)
    assert sampling.top_p == tl.SamplingParams().top_p
