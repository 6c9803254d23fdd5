"""Generate and CannedResponse nodes, streaming, completion and diagnostics, max steps per turn
(docs/reference/streaming.md)."""

from __future__ import annotations

import asyncio
import threading

import pytest

import turnloom as tl
from tests.helpers import Recorder, graph_of

Code = tl.ErrorCode


@pytest.mark.parametrize(
    "placement, expected",
    [
        (tl.Placement.InPlaceOfUser, [("user", "<hi>")]),
        (tl.Placement.BeforeUserAsUser, [("user", "<hi>"), ("user", "hi")]),
        (tl.Placement.BeforeUserAsSystem, [("system", "<hi>"), ("user", "hi")]),
        (tl.Placement.AfterUserAsUser, [("user", "hi"), ("user", "<hi>")]),
        (tl.Placement.AfterUserAsSystem, [("user", "hi"), ("system", "<hi>")]),
    ],
)
def test_generate_template_and_placement(
    engine: tl.Engine,
    mock_model: tl.MockModel,
    placement: tl.Placement,
    expected: list[tuple[str, str]],
) -> None:
    params = tl.GenerateParams(
        system_prompt="sys", template="<{{human_message}}>", placement=placement
    )
    agent = engine.create_agent(graph_of(("gen", params)))
    agent.send_message("hi")
    chat = [(m["role"], m["content"]) for m in mock_model.requests[-1].messages]
    assert chat == [("system", "sys"), *expected]


def test_template_text_is_not_html_escaped(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    agent = engine.create_agent(
        graph_of(("gen", tl.GenerateParams(template="Q: {{human_message}}")))
    )
    agent.send_message('<b>"Tom & Jerry"</b>')
    assert mock_model.requests[-1].messages[-1]["content"] == 'Q: <b>"Tom & Jerry"</b>'


def test_history_is_projected_in_order(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push("first reply", "second reply")
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams())))
    agent.send_message("one")
    agent.send_message("two")
    assert mock_model.requests[-1].messages == [
        {"role": "user", "content": "one"},
        {"role": "assistant", "content": "first reply"},
        {"role": "user", "content": "two"},
    ]


def test_streaming_deltas_then_exactly_one_final_chunk(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push("a b c")
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams(stream=True))))
    rec = Recorder(agent)
    result = agent.send_message("hi").result
    texts = [e[1:] for e in rec.events if e[0] == "text"]
    assert texts == [
        ("a", True, False),
        (" b", True, False),
        (" c", True, False),
        ("a b c", False, True),
    ]
    assert result is not None and result.text == "a b c" and result.tokens_generated == 3


def test_without_stream_the_reply_comes_in_one_chunk(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push("a b c")
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams(stream=False))))
    rec = Recorder(agent)
    agent.send_message("hi")
    assert [e[1:] for e in rec.events if e[0] == "text"] == [
        ("a b c", True, False),
        ("a b c", False, True),
    ]


def test_replies_of_several_nodes_are_joined_by_newlines(engine: tl.Engine) -> None:
    g = graph_of(
        ("one", tl.CannedResponseParams(lines=["first"], default_exit="two")),
        ("two", tl.CannedResponseParams(lines=["second"])),
    )
    rec = Recorder(agent := engine.create_agent(g))
    result = agent.send_message("hi").result
    assert result is not None and result.text == "first\nsecond"
    deltas = "".join(str(e[1]) for e in rec.events if e[0] == "text" and e[2])
    assert deltas == result.text


def test_sampling_reaches_the_model(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push("one two three four five")
    sampling = tl.SamplingParams(max_tokens=2, temperature=0.0)
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams(sampling=sampling))))
    result = agent.send_message("hi").result
    assert mock_model.requests[-1].sampling == sampling
    assert result is not None and result.text == "one two" and result.tokens_generated == 2


@pytest.mark.parametrize(
    "selection, expected",
    [
        (tl.Selection.First, ["a", "a", "a", "a"]),
        (tl.Selection.Cycle, ["a", "b", "c", "a"]),
    ],
)
def test_canned_selection(engine: tl.Engine, selection: tl.Selection, expected: list[str]) -> None:
    agent = engine.create_agent(
        graph_of(("say", tl.CannedResponseParams(lines=["a", "b", "c"], selection=selection)))
    )
    assert [agent.send_message("x").result.text for _ in expected] == expected  # type: ignore[union-attr]


def test_canned_random_uses_every_line_and_repeats_per_agent_id() -> None:
    g = graph_of(
        ("say", tl.CannedResponseParams(lines=list("abcd"), selection=tl.Selection.Random))
    )
    runs = []
    for _ in range(2):  # two engines: each one's first agent has id 1
        with tl.Engine(tl.MockModel("mock")) as engine:
            agent = engine.create_agent(g)
            runs.append([agent.send_message("x").result.text for _ in range(40)])  # type: ignore[union-attr]
    assert set(runs[0]) == set("abcd")
    assert runs[0] == runs[1]


def test_debug_info_shape(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    mock_model.push("x y")
    g = graph_of(
        ("gate", tl.PauseParams(default_exit="gen")),
        ("gen", tl.GenerateParams()),
    )
    agent = engine.create_agent(g, enable_diagnostics=True)
    agent.send_message("hi")
    result = agent.resume().result
    assert result is not None and result.debug_info is not None
    info = result.debug_info
    assert set(info) == {"status", "nodes", "paused_duration_s", "pause_count", "tokens_generated"}
    assert info["status"] == "success" and info["tokens_generated"] == 2
    pause, gen = info["nodes"]
    assert set(pause) == {"_type", "name", "exit_route", "duration_s"}
    assert pause["_type"] == "PauseNode" and pause["exit_route"] == "default"
    assert gen["_type"] == "GenerateNode" and gen["diagnostics"]["tokens_generated"] == 2


def test_no_debug_info_unless_enabled(engine: tl.Engine) -> None:
    agent = engine.create_agent(graph_of(("say", tl.CannedResponseParams(lines=["x"]))))
    assert agent.send_message("hi").result.debug_info is None  # type: ignore[union-attr]


def test_max_steps_ends_the_turn_4003_and_the_agent_stays_usable(engine: tl.Engine) -> None:
    g = graph_of(
        ("ping", tl.CannedResponseParams(lines=["ping"], default_exit="pong")),
        ("pong", tl.CannedResponseParams(lines=["pong"], default_exit="ping")),
    )
    agent = engine.create_agent(g, max_steps_per_turn=5)
    rec = Recorder(agent)
    result = agent.send_message("go").result
    assert result is not None and result.status == tl.TurnStatus.ERROR
    assert result.error_code == Code.MaxStepsExceeded and "max_steps_per_turn is 5" in (
        result.error_message
    )
    assert rec.finals() == ["ping\npong\nping\npong\nping"]
    assert agent.send_message("again").result.status == tl.TurnStatus.ERROR  # type: ignore[union-attr]
    assert len(rec.results) == 2


def test_default_max_steps_is_64(engine: tl.Engine) -> None:
    g = graph_of(("loop", tl.CannedResponseParams(lines=["."], default_exit="loop")))
    result = engine.create_agent(g).send_message("go").result
    assert result is not None and result.text.count(".") == 64


def test_backend_failure_is_4001_and_the_agent_stays_usable(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(RuntimeError("GPU on fire"), "fine again")
    agent = engine.create_agent(graph_of(("gen", tl.GenerateParams())))
    result = agent.send_message("hi").result
    assert result is not None and result.status == tl.TurnStatus.ERROR
    assert result.error_code == Code.InferenceFailed
    assert "GPU on fire" in result.error_message and "'gen'" in result.error_message
    assert agent.send_message("hi").result.text == "fine again"  # type: ignore[union-attr]


class StallingModel(tl.MockModel):
    """Hangs on the message 'stall' until cancelled, like a model stuck on a huge prompt."""

    stalled = threading.Event()

    async def generate(self, request, on_delta=None):  # type: ignore[no-untyped-def]
        if request.messages[-1]["content"] == "stall":
            self.stalled.set()
            await asyncio.Event().wait()
        return await super().generate(request, on_delta)


def test_generation_over_its_budget_is_4002_and_the_agent_stays_usable(
    clock: tl.VirtualClock,
) -> None:
    with tl.Engine(StallingModel("mock"), clock=clock) as engine:
        sampling = tl.SamplingParams(timeout_ms=2000)
        agent = engine.create_agent(graph_of(("gen", tl.GenerateParams(sampling=sampling))))
        agent.send_message_async("stall")
        assert StallingModel.stalled.wait(5)
        clock.advance(1.9)
        assert agent.wait_async().done() is False
        clock.advance(0.1)
        result = agent.wait_complete(timeout=5)
        assert result is not None and result.status == tl.TurnStatus.ERROR
        assert result.error_code == Code.InferenceTimeout and "2000 ms" in result.error_message
        assert agent.send_message("fast").result.text == "You said: fast"  # type: ignore[union-attr]
        assert clock.pending() == 0


def test_a_long_walk_without_a_model_still_yields_to_the_loop(mock_model: tl.MockModel) -> None:
    g = graph_of(("loop", tl.CannedResponseParams(lines=["."], default_exit="loop")))

    async def main() -> None:
        async with tl.AsyncEngine(mock_model) as engine:
            agent = await engine.create_agent(g, max_steps_per_turn=1000)
            streamed: list[str] = []
            agent.set_on_answer_text(lambda text, is_delta, is_final: streamed.append(text))
            turn = asyncio.ensure_future(agent.send_message("go"))
            while not streamed:
                await asyncio.sleep(0)
            # The walk yielded to the loop in mid-walk, which lets this cancel in.
            assert await agent.cancel() is True
            result = (await turn).result
            assert result is not None and result.status == tl.TurnStatus.CANCELLED
            assert 0 < result.text.count(".") < 1000

    asyncio.run(main())
