"""The history budget: a long conversation keeps working, its prompts fit the model's context,
the oldest exchanges leave the prompt in chunks (the kept prefix stays for several turns),
and the system prompt, this turn's message, pinned exchanges and whole tool exchanges stay.
Property tests drive the trimmer itself; engine tests run on the mock (a context counted in
words), over the wire too; the real default model shows the prompt cache surviving trims."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnloom as tl
from tests.helpers import graph_of
from turnloom.engine.inference.base import GenerationRequest
from turnloom.engine.inference.mock import count_chat_tokens
from turnloom.engine.turns.dialog.history import START_KEY, choose_start, fit_history
from turnloom.engine.turns.dialog.projection import Interaction, project_chat
from turnloom.engine.turns.results import InferenceFailed

Code = tl.ErrorCode
SYSTEM = "You are Mira, a shopkeeper."


# --- the trimmer, property-tested --------------------------------------------------------


def _interaction(index: int, words: int, with_call: bool, pinned: bool) -> Interaction:
    messages: list[dict[str, Any]] = []
    if with_call:
        call_id = f"c{index:08x}"
        messages.append(
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": call_id, "type": "function", "function": {"name": "t", "arguments": {}}}
                ],
            }
        )
        messages.append({"role": "tool", "content": "done", "tool_call_id": call_id, "name": "t"})
    messages.append({"role": "assistant", "content": " ".join(["reply"] * words)})
    return Interaction(f"line {index} " + "word " * words, messages, pinned=pinned)


DIALOGS = st.lists(
    st.tuples(st.integers(0, 40), st.booleans(), st.just(False)),
    max_size=30,
).map(lambda specs: [_interaction(i, *spec) for i, spec in enumerate(specs)])
PINNED_DIALOGS = st.lists(
    st.tuples(st.integers(0, 40), st.booleans(), st.integers(0, 9).map(lambda n: n == 0)),
    max_size=30,
).map(lambda specs: [_interaction(i, *spec) for i, spec in enumerate(specs)])


def _fit(
    dialog: list[Interaction],
    history: tl.HistoryParams,
    n_ctx: int,
    state: dict[str, Any],
    max_tokens: int = 16,
) -> tuple[GenerationRequest, dict[str, Any] | None]:
    model = tl.MockModel(n_ctx=n_ctx)
    current = Interaction("the newest line")
    sampling = tl.SamplingParams(max_tokens=max_tokens)

    def build(kept: Sequence[Interaction]) -> GenerationRequest:
        chat = project_chat(
            kept,
            current,
            system_prompt=SYSTEM,
            prompt_text=current.user_message,
            placement=tl.Placement.InPlaceOfUser,
        )
        return GenerationRequest(chat, sampling)

    return asyncio.run(fit_history(model, history, dialog, state, build))


#: The mock's tokens of a prompt that keeps no earlier exchange.
LEAST = count_chat_tokens(
    [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "the newest line"}]
)


def _blocks(dialog: list[Interaction]) -> list[list[dict[str, Any]]]:
    return [[{"role": "user", "content": d.user_message}, *d.messages] for d in dialog]


@settings(max_examples=150, deadline=None)
@given(
    dialog=PINNED_DIALOGS,
    n_ctx=st.integers(60, 1200),
    trim_to=st.floats(0.1, 1.0),
    keep_first=st.integers(0, 4),
    start=st.integers(0, 40),
)
def test_a_fitted_prompt_is_within_budget_and_keeps_what_must_stay(
    dialog: list[Interaction], n_ctx: int, trim_to: float, keep_first: int, start: int
) -> None:
    history = tl.HistoryParams(trim_to=trim_to, keep_first=keep_first)
    state = {START_KEY: start}
    budget = n_ctx - 16
    try:
        request, diagnostics = _fit(dialog, history, n_ctx, state)
    except InferenceFailed as failed:
        # Only when even the pinned exchanges and this turn alone pass the budget.
        pinned = [d for i, d in enumerate(dialog) if i < keep_first or d.pinned]
        least = count_chat_tokens(
            project_chat(
                pinned,
                Interaction("the newest line"),
                system_prompt=SYSTEM,
                prompt_text="the newest line",
                placement=tl.Placement.InPlaceOfUser,
            )
        )
        assert least > budget
        assert str(least) in str(failed) and str(budget) in str(failed)
        return
    assert diagnostics is not None
    messages = request.messages
    assert count_chat_tokens(messages) == diagnostics["prompt_tokens"] <= budget
    assert messages[0] == {"role": "system", "content": SYSTEM}
    assert messages[-1] == {"role": "user", "content": "the newest line"}
    # Whole exchanges, in order: the prompt is the system prompt, some of the dialog's blocks
    # (each one entire, so every call keeps its result) in their order, then this turn.
    body = messages[1:-1]
    flat: list[dict[str, Any]] = []
    index = 0
    kept = []
    for i, block in enumerate(_blocks(dialog)):
        if body[index : index + len(block)] == block:
            kept.append(i)
            flat.extend(block)
            index += len(block)
    assert flat == body
    for i, d in enumerate(dialog):
        if i < keep_first or d.pinned:
            assert i in kept, f"pinned exchange {i} was left out"
    first = diagnostics["first_kept"]
    assert all(i >= first or i < keep_first or dialog[i].pinned for i in kept)
    assert diagnostics["left_out"] == len(dialog) - len(kept)
    assert state[START_KEY] == first
    # The same input gives the same output.
    again, _ = _fit(dialog, history, n_ctx, {START_KEY: start})
    assert again.messages == messages


@settings(max_examples=100, deadline=None)
@given(dialog=DIALOGS, n_ctx=st.integers(100, 800), trim_to=st.floats(0.1, 1.0))
def test_the_kept_prefix_stays_until_the_budget_is_passed_again(
    dialog: list[Interaction], n_ctx: int, trim_to: float
) -> None:
    # Turn after turn, the first kept exchange never moves back, moves only when the prompt
    # from it would pass the budget, and each move lands at or under the low-water mark
    # (unless nothing unpinned is left to leave out).
    history = tl.HistoryParams(trim_to=trim_to)
    state: dict[str, Any] = {}
    budget = n_ctx - 16
    previous = 0
    for turn in range(len(dialog) + 1):
        try:
            _, diagnostics = _fit(dialog[:turn], history, n_ctx, state)
        except InferenceFailed:
            return
        assert diagnostics is not None
        first = diagnostics["first_kept"]
        assert first >= previous
        if first > previous:
            assert diagnostics["newly_left_out"] == [previous, first]
            # Down to the low-water mark; where not even leaving out every exchange reaches it,
            # as much as fits the budget.
            low_water = int(budget * trim_to)
            assert diagnostics["prompt_tokens"] <= (low_water if low_water >= LEAST else budget)
        else:
            assert "newly_left_out" not in diagnostics
        previous = first


def test_choose_start_keeps_the_start_while_it_fits_and_trims_to_the_low_water_mark() -> None:
    sizes = [100, 100, 100, 100, 100, 100]  # tokens of each exchange; this turn's is 50

    async def count(start: int) -> int:
        return 50 + sum(sizes[start:])

    assert asyncio.run(choose_start(count, exchanges=6, start=0, budget=700, low_water=500)) == (
        0,
        650,
    )
    # Past the budget: down to the low-water mark in one go, not one exchange.
    assert asyncio.run(choose_start(count, exchanges=6, start=0, budget=600, low_water=400)) == (
        3,
        350,
    )
    # Nothing left to leave out, still over: None.
    assert asyncio.run(choose_start(count, exchanges=6, start=0, budget=40, low_water=30)) is None


# --- the engine, on the mock's word-counted context --------------------------------------


def long_graph(**history: Any) -> tl.GraphDescription:
    return graph_of(
        (
            "answer",
            tl.GenerateParams(
                system_prompt=SYSTEM,
                sampling=tl.SamplingParams(max_tokens=20),
                history=tl.HistoryParams(**history),
            ),
        )
    )


LINE = "Tell me about the old mill by the river and whether the miller still sells flour"


@pytest.fixture
def mock_model() -> tl.MockModel:
    """The model of the `engine` fixture (embedded and over the wire): a 200-token context."""
    return tl.MockModel("mock", n_ctx=200)


@pytest.fixture
def small_context() -> Iterator[tl.Engine]:
    with tl.Engine(tl.MockModel("mock", n_ctx=200)) as engine:
        yield engine


def test_a_long_conversation_succeeds_every_turn_and_the_dialog_keeps_it_all() -> None:
    # About 40 tokens an exchange, a budget of 580: a trim leaves out about 3 exchanges.
    with tl.Engine(tl.MockModel("mock", n_ctx=600)) as engine:
        agent = engine.create_agent(long_graph(), enable_diagnostics=True)
        firsts = []
        for i in range(40):
            result = agent.send_message(f"{i}: {LINE}").final
            assert result.status == tl.TurnStatus.SUCCESS, result
            history = result.debug_info["nodes"][0]["diagnostics"]["history"]
            assert history["prompt_tokens"] <= history["budget_tokens"] == 580
            firsts.append(history["first_kept"])
        assert len(agent.dialog) == 80  # every line and reply: none left out of the dialog
    # Trims come in chunks, several turns apart: the first kept exchange changes on few turns.
    moves = sum(1 for a, b in itertools.pairwise(firsts) if b != a)
    assert 0 < moves <= 40 // 3


def test_what_was_left_out_is_named_in_the_diagnostics(small_context: tl.Engine) -> None:
    agent = small_context.create_agent(long_graph(), enable_diagnostics=True)
    for i in range(30):
        history = agent.send_message(f"{i}: {LINE}").final.debug_info["nodes"][0]["diagnostics"][
            "history"
        ]
        if "newly_left_out" in history:
            start, end = history["newly_left_out"]
            assert end == history["first_kept"] and history["left_out"] == end
            # The game reads those exchanges from the dialog (two messages each here).
            dropped = agent.dialog[2 * start : 2 * end]
            assert dropped[0]["content"].startswith(f"{start}: ")
            return
    pytest.fail("nothing was ever left out")


def test_pinned_exchanges_stay_in_every_prompt() -> None:
    model = tl.MockModel("mock", n_ctx=200)
    seeded = [
        {"role": "user", "content": "Remember: the password is swordfish", "pinned": True},
        {"role": "assistant", "content": "I will remember it."},
        {"role": "user", "content": "Hello"},
        {"role": "assistant", "content": "Hi"},
    ]
    with tl.Engine(model) as engine:
        agent = engine.create_agent(long_graph(keep_first=0), dialog=seeded)
        for i in range(30):
            assert agent.send_message(f"{i}: {LINE}").final.status == tl.TurnStatus.SUCCESS
            contents = [m["content"] for m in model.requests[-1].messages]
            assert "Remember: the password is swordfish" in contents
        assert "Hello" not in contents  # unpinned, and long gone
        assert agent.dialog[0]["pinned"] is True  # the mark is part of the dialog
        kept = engine.create_agent(long_graph(keep_first=2), dialog=seeded[2:] + seeded[:2])
        for i in range(30):
            kept.send_message(f"{i}: {LINE}")
        assert "Hello" in [m["content"] for m in model.requests[-1].messages]


def test_a_tool_exchange_leaves_the_prompt_whole() -> None:
    model = tl.MockModel("mock", n_ctx=260)
    tools = [tl.ToolDefinition("ring_bell", "Ring the shop bell.")]
    graph = graph_of(
        (
            "decide",
            tl.ToolCallParams(
                tools=tools,
                tool_called_exit="answer",
                mode="detect_only",
                sampling=tl.SamplingParams(max_tokens=20),
            ),
        ),
        ("answer", tl.GenerateParams(sampling=tl.SamplingParams(max_tokens=20))),
    )
    with tl.Engine(model) as engine:
        agent = engine.create_agent(graph)
        for i in range(20):
            model.push('<tool_call>{"name": "ring_bell", "arguments": {}}</tool_call>', "Ding.")
            assert agent.send_message(f"{i}: {LINE}").final.status == tl.TurnStatus.SUCCESS
            messages = model.requests[-1].messages
            for j, message in enumerate(messages):
                if message.get("tool_calls"):
                    assert messages[j + 1]["role"] == "tool"
                    assert messages[j + 1]["tool_call_id"] == message["tool_calls"][0]["id"]
                if message["role"] == "tool":
                    assert messages[j - 1].get("tool_calls")


def test_with_trimming_off_an_overflow_fails_the_turn_4001_and_the_agent_goes_on(
    small_context: tl.Engine,
) -> None:
    agent = small_context.create_agent(long_graph(trim=False))
    results = [agent.send_message(f"{i}: {LINE}").final for i in range(12)]
    assert results[0].status == tl.TurnStatus.SUCCESS
    failed = [r for r in results if r.status == tl.TurnStatus.ERROR]
    assert failed and all(r.error_code == Code.InferenceFailed for r in failed)
    assert "does not fit its context of 200 tokens" in failed[0].error_message
    agent.change_params("answer", {"history": {"trim": True}})
    assert agent.send_message("and now?").final.status == tl.TurnStatus.SUCCESS


def test_a_prompt_that_can_never_fit_is_3007_at_creation_and_at_change_params(
    small_context: tl.Engine,
) -> None:
    huge = " ".join(["word"] * 400)
    sampling = tl.SamplingParams(max_tokens=56)
    graph = graph_of(("answer", tl.GenerateParams(system_prompt=huge, sampling=sampling)))
    with pytest.raises(tl.InvalidParamValue) as refused:
        small_context.create_agent(graph)
    assert "node 'answer'" in str(refused.value) and "404 tokens" in str(refused.value)
    assert "the system prompt alone take" in str(refused.value)
    assert "budget of 144 tokens" in str(refused.value)
    too_long = graph_of(("answer", tl.GenerateParams(sampling=tl.SamplingParams(max_tokens=300))))
    with pytest.raises(tl.InvalidParamValue, match="max_tokens 300 leaves no room"):
        small_context.create_agent(too_long)

    agent = small_context.create_agent(long_graph())
    before = agent.get_params("answer")
    with pytest.raises(tl.InvalidParamValue, match="change_params: node 'answer'"):
        agent.change_params("answer", {"system_prompt": huge})
    assert agent.get_params("answer") == before  # refused: nothing changed
    # Nothing refuses what trimming off lets through: the turn says so when it overflows.
    agent.change_params("answer", {"history": {"trim": False}, "system_prompt": huge})


def test_a_smaller_prompt_budget_is_kept(small_context: tl.Engine) -> None:
    agent = small_context.create_agent(long_graph(max_prompt_tokens=90), enable_diagnostics=True)
    for i in range(10):
        history = agent.send_message(f"{i}: {LINE}").final.debug_info["nodes"][0]["diagnostics"][
            "history"
        ]
        assert history["budget_tokens"] == 90 and history["prompt_tokens"] <= 90


def test_history_params_are_checked_and_mutable_while_paused(small_context: tl.Engine) -> None:
    with pytest.raises(tl.InvalidParamValue, match="trim_to"):
        small_context.create_agent(long_graph(trim_to=0.05))
    graph = graph_of(
        ("gate", tl.PauseParams(default_exit="answer")),
        ("answer", tl.GenerateParams(sampling=tl.SamplingParams(max_tokens=20))),
    )
    agent = small_context.create_agent(graph)
    assert agent.send_message("hi").paused
    agent.change_params("answer", {"history": {"keep_first": 3}})
    assert agent.get_params("answer").history.keep_first == 3
    with pytest.raises(tl.InvalidParamValue, match="keep_first"):
        agent.change_params("answer", {"history": {"keep_first": -1}})


def test_the_kept_prefix_survives_a_snapshot(tmp_path: Any) -> None:
    model = tl.MockModel("mock", n_ctx=200)
    with tl.Engine(model) as engine:
        agent = engine.create_agent(long_graph(), enable_diagnostics=True)
        for i in range(20):
            result = agent.send_message(f"{i}: {LINE}").final
        first = result.debug_info["nodes"][0]["diagnostics"]["history"]["first_kept"]
        assert first > 0
        snapshot = agent.snapshot()
    with tl.Engine(model) as engine:
        again = engine.restore(snapshot)
        assert len(again.dialog) == 40
        history = again.send_message("and?").final.debug_info["nodes"][0]["diagnostics"]
        assert history["history"]["first_kept"] >= first


def test_both_faces_keep_the_budget(engine: tl.Engine | tl.RemoteEngine) -> None:
    agent = engine.create_agent(long_graph(), enable_diagnostics=True)
    for i in range(30):
        result = agent.send_message(f"{i}: {LINE}").final
        assert result.status == tl.TurnStatus.SUCCESS
    history = result.debug_info["nodes"][0]["diagnostics"]["history"]
    assert history["first_kept"] > 0 and history["prompt_tokens"] <= 180


# --- the real default model ----------------------------------------------------------------


@pytest.fixture(scope="module")
def llama() -> Iterator[tl.LlamaModel]:
    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="gemma", n_ctx=384).load()
    yield model
    model.close()


def test_on_the_real_model_every_turn_fits_and_the_cache_survives_trims(
    llama: tl.LlamaModel,
) -> None:
    graph = (
        tl.GraphDescription()
        .add_node(
            "answer",
            tl.GenerateParams(
                system_prompt=SYSTEM, sampling=tl.SamplingParams(temperature=0, max_tokens=8)
            ),
        )
        .set_start_node("answer")
        .set_default_model_name("gemma")
    )
    with tl.Engine(llama) as engine:
        agent = engine.create_agent(graph, enable_diagnostics=True)
        prompt = evaluated = 0
        trims = 0
        for i in range(16):
            result = agent.send_message(f"{i}: {LINE}").final
            assert result.status == tl.TurnStatus.SUCCESS, result
            history = result.debug_info["nodes"][0]["diagnostics"]["history"]
            stats = llama.generations[-1]
            assert stats.prompt_tokens == history["prompt_tokens"] <= history["budget_tokens"]
            trims += "newly_left_out" in history
            if i >= 3:
                prompt += stats.prompt_tokens
                evaluated += stats.prompt_tokens_evaluated
        assert trims >= 2
        assert evaluated <= 0.5 * prompt  # the kept prefix is reused between trims
