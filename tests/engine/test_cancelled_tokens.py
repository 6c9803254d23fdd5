"""A turn cut short mid-generation counts the tokens the model already produced.

`TurnResult.tokens_generated` (and the wire `TurnComplete.tokens_generated`) of a turn cancelled
mid-stream, or ended with 4002 by `sampling.timeout_ms`, is what the model generated before it
stopped, not 0. The mock model is held mid-reply (`hold_after`) so that the cancel or the clock
reaches it there, embedded and over the wire alike.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator

import pytest

import turnloom as tl
from tests.helpers import GET_TIME, SET_LIGHT, graph_of
from turnloom.engine.inference.base import (
    GenerationProgress,
    GenerationRequest,
    GenerationResult,
)

#: A scripted reply of six mock tokens.
SIX_TOKENS = "one two three four five six"
INFERENCE_TIMEOUT = 4002


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Poll `condition()` (wall time) until it is true."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


class Deltas:
    """Counts the answer deltas an agent streams; `reached(n)` waits for the n-th."""

    def __init__(self, agent: tl.Agent) -> None:
        self.texts: list[str] = []
        self._lock = threading.Lock()
        agent.set_on_answer_text(self._on_text)

    def _on_text(self, text: str, is_delta: bool, is_final: bool) -> None:
        if is_delta:
            with self._lock:
                self.texts.append(text)

    def reached(self, count: int) -> None:
        wait_for(lambda: len(self.texts) >= count, f"{count} deltas")


def held_progress(mock_model: tl.MockModel) -> int:
    """Tokens the mock's latest generation has reported so far (0 before it started)."""
    return mock_model.requests[-1].progress.tokens if mock_model.requests else 0


def test_a_turn_cancelled_mid_stream_counts_the_tokens_streamed(
    engine: tl.Engine, mock_model: tl.MockModel
) -> None:
    mock_model.push(SIX_TOKENS)
    mock_model.hold_after = 2
    agent = engine.create_agent(graph_of(("answer", tl.GenerateParams(stream=True))))
    deltas = Deltas(agent)
    step = agent.send_message_async("hi")
    deltas.reached(2)
    assert agent.cancel() is True
    result = step.result(timeout=10).final
    assert result.status == tl.TurnStatus.CANCELLED
    assert deltas.texts == ["one", " two"]
    assert result.tokens_generated == len(deltas.texts) == 2
    assert mock_model.cancelled_generations == 1


def test_a_free_running_stream_cancelled_counts_what_the_model_produced(
    clock: tl.VirtualClock,
) -> None:
    """No hold: the cancel lands wherever the mock's token loop is, and the count follows it."""
    model = tl.MockModel("mock", [SIX_TOKENS])

    async def main() -> None:
        async with tl.AsyncEngine(model, clock=clock) as engine:
            agent = await engine.create_agent(graph_of(("answer", tl.GenerateParams(stream=True))))
            deltas: list[str] = []
            agent.set_on_answer_text(lambda t, d, f: deltas.append(t) if d else None)
            turn = asyncio.ensure_future(agent.send_message("hi"))
            while len(deltas) < 2:
                await asyncio.sleep(0)
            assert await agent.cancel() is True
            result = (await turn).final
            assert result.status == tl.TurnStatus.CANCELLED
            produced = model.requests[-1].progress.tokens
            assert 2 <= produced < 6
            assert result.tokens_generated == produced == len(deltas)

    asyncio.run(main())


def test_a_time_budget_expiry_mid_stream_counts_the_tokens_generated(
    engine: tl.Engine, mock_model: tl.MockModel, clock: tl.VirtualClock
) -> None:
    mock_model.push(SIX_TOKENS)
    mock_model.hold_after = 3
    sampling = tl.SamplingParams(timeout_ms=500)
    agent = engine.create_agent(
        graph_of(("answer", tl.GenerateParams(stream=True, sampling=sampling)))
    )
    deltas = Deltas(agent)
    step = agent.send_message_async("hi")
    deltas.reached(3)
    clock.advance(0.5)
    result = step.result(timeout=10).final
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, INFERENCE_TIMEOUT)
    assert result.tokens_generated == len(deltas.texts) == 3
    assert mock_model.cancelled_generations == 1


def test_a_tool_call_generation_past_its_budget_counts_the_tokens_generated(
    engine: tl.Engine, mock_model: tl.MockModel, clock: tl.VirtualClock
) -> None:
    mock_model.push('{"name": "set_light", "arguments": {"name": "hall", "on": true}}')
    mock_model.hold_after = 4
    sampling = tl.SamplingParams(timeout_ms=200)
    agent = engine.create_agent(
        graph_of(("detect", tl.ToolCallParams(tools=[SET_LIGHT], sampling=sampling)))
    )
    step = agent.send_message_async("light the hall")
    wait_for(lambda: held_progress(mock_model) == 4, "the mock to hold after 4 tokens")
    clock.advance(0.2)
    result = step.result(timeout=10).final
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, INFERENCE_TIMEOUT)
    assert result.tokens_generated == 4


def test_a_finished_generation_is_counted_once(engine: tl.Engine, mock_model: tl.MockModel) -> None:
    """The running count is replaced by the result's `tokens`, never added to it."""
    mock_model.push(SIX_TOKENS, "a b c", '{"name": "get_time", "arguments": {}}')
    g = graph_of(
        ("first", tl.GenerateParams(stream=True, default_exit="second")),
        ("second", tl.GenerateParams(stream=False, default_exit="detect")),
        (
            "detect",
            tl.ToolCallParams(tools=[GET_TIME], disposition=tl.ToolCallDisposition.RouteOnly),
        ),
    )
    result = engine.create_agent(g, enable_diagnostics=True).send_message("hi").final
    assert result.status == tl.TurnStatus.SUCCESS
    assert [r.progress.tokens for r in mock_model.requests] == [6, 3, 4]
    assert result.tokens_generated == 13
    assert result.debug_info is not None
    per_node = [n["diagnostics"]["tokens_generated"] for n in result.debug_info["nodes"]]
    assert per_node == [6, 3, 4]


def test_progress_counts_and_tells_its_listener() -> None:
    heard: list[int] = []
    progress = GenerationProgress()
    progress.add()
    progress.listener = heard.append
    progress.add(2)
    progress.reach(7)
    progress.reach(5)  # never backwards
    progress.add(0)
    assert progress.tokens == 7 and heard == [2, 4]
    worker_count = 9
    shown: list[str] = []
    relay = progress.tracking(lambda: worker_count, shown.append)
    relay("piece")
    assert progress.tokens == 9 and heard == [2, 4, 2] and shown == ["piece"]
    progress.tracking(lambda: 11, None)("unshown")
    assert progress.tokens == 11 and shown == ["piece"]
    request = GenerationRequest([])
    assert request.progress.tokens == 0 and request.progress is not GenerationRequest([]).progress
    assert request == GenerationRequest([])  # progress is not part of what was asked


class SilentModel(tl.MockModel):
    """A backend written before progress existed: it only returns its count."""

    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        self.requests.append(request)
        await asyncio.sleep(0)
        if on_delta is not None:
            on_delta(SIX_TOKENS)
        if self.hold_after is not None:
            await asyncio.get_running_loop().create_future()
        return GenerationResult(SIX_TOKENS, 6)


@pytest.mark.parametrize("stream", [True, False])
def test_a_backend_that_reports_no_progress_is_counted_by_its_result(
    clock: tl.VirtualClock, stream: bool
) -> None:
    model = SilentModel("mock")

    async def main() -> None:
        async with tl.AsyncEngine(model, clock=clock) as engine:
            agent = await engine.create_agent(
                graph_of(("answer", tl.GenerateParams(stream=stream)))
            )
            result = (await agent.send_message("hi")).final
            assert result.status == tl.TurnStatus.SUCCESS and result.tokens_generated == 6
            # Cancelled, it counts nothing, as before progress existed.
            model.hold_after = 0
            turn = asyncio.ensure_future(agent.send_message("again"))
            while len(model.requests) < 2:
                await asyncio.sleep(0)
            assert await agent.cancel() is True
            result = (await turn).final
            assert result.status == tl.TurnStatus.CANCELLED and result.tokens_generated == 0

    asyncio.run(main())


# --- the llama backend, on the real default model ------------------------------------------


@pytest.fixture(scope="module")
def llama() -> Iterator[tl.LlamaModel]:
    """The catalog's default model, loaded once for this module."""
    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="gemma", n_ctx=512).load()
    yield model
    model.close()


def counting_graph(**sampling: int) -> tl.GraphDescription:
    """One streaming Generate node on the llama model, greedy, long enough to be cut short."""
    params = tl.GenerateParams(
        sampling=tl.SamplingParams(temperature=0.0, max_tokens=400, repeat_penalty=1, **sampling),
        stream=True,
    )
    return graph_of(("say", params)).set_default_model_name("gemma")


COUNT = "Count from one to one hundred: one, two, three,"


def test_llama_counts_the_tokens_of_a_cancelled_and_a_timed_out_turn(
    llama: tl.LlamaModel,
) -> None:
    with tl.Engine(llama) as engine:
        agent = engine.create_agent(counting_graph())
        deltas = Deltas(agent)
        pending = agent.send_message_async(COUNT)
        deltas.reached(3)
        assert agent.cancel()
        seen = len(deltas.texts)
        result = pending.result(30).final
        assert result.status == tl.TurnStatus.CANCELLED
        assert llama.wait_idle(30)
        stats = llama.generations[-1]
        assert stats.cancelled and stats.tokens_at_cancel is not None
        assert seen <= result.tokens_generated <= stats.tokens_at_cancel

        timed = engine.create_agent(counting_graph(timeout_ms=600))
        result = timed.send_message(COUNT).final
        assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, INFERENCE_TIMEOUT)
        assert llama.wait_idle(30)
        stats = llama.generations[-1]
        assert stats.cancelled and stats.tokens_at_cancel is not None
        assert 0 < result.tokens_generated == stats.tokens_at_cancel < 400
