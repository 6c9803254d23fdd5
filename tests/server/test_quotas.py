"""Per-session quotas: open turns, generations and tokens per minute. Exceeding one is 2003
naming it, and never touches another session. Time is a `VirtualClock`: no test waits."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Any

import pytest

import turnloom as tl
import turnloom.__main__ as cli
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer, ServerLimits
from turnloom.server.quotas import WINDOW_S, RateWindow

Code = tl.ErrorCode
#: Opens a session to a server with the given quotas (`serve(**limits)()`).
Serve = Callable[..., Callable[[], tl.RemoteEngine]]


def generate(*, twice: bool = False, pause_first: bool = False) -> tl.GraphDescription:
    """Generate (twice: Generate -> Generate; pause_first: Pause -> Generate)."""
    graph = tl.GraphDescription().set_default_model_name("mock")
    if pause_first:
        graph.add_node("gate", tl.PauseParams(default_exit="one"))
    graph.add_node("one", tl.GenerateParams(default_exit="two" if twice else ""))
    if twice:
        graph.add_node("two", tl.GenerateParams())
    return graph.set_start_node("gate" if pause_first else "one")


def gated() -> tl.GraphDescription:
    """Pause -> CannedResponse: a turn that stays open, no model."""
    return (
        tl.GraphDescription()
        .add_node("gate", tl.PauseParams(default_exit="say"))
        .add_node("say", tl.CannedResponseParams(lines=["ok"]))
        .set_start_node("gate")
    )


@pytest.fixture
def serve(clock: tl.VirtualClock) -> Iterator[Serve]:
    """`serve(**limits)`: start a server on the virtual clock with those `ServerLimits`; it
    returns a function that opens a session to it. Everything is closed after the test."""
    with ExitStack() as stack:

        def start(**limits: Any) -> Callable[[], tl.RemoteEngine]:
            server = stack.enter_context(
                BackgroundServer(
                    lambda: AsyncEngine(tl.MockModel("mock"), clock=clock),
                    limits=ServerLimits(**limits),
                )
            )
            return lambda: stack.enter_context(tl.connect(*server.address))

        yield start


def test_generations_per_minute_refuses_the_send_naming_the_quota_other_sessions_go_on(
    serve: Serve, clock: tl.VirtualClock
) -> None:
    connect = serve(generations_per_minute=2)
    greedy, other = connect(), connect()
    agent = greedy.create_agent(generate())
    for _ in range(2):
        assert agent.send_message("hi").final.status == "success"
    with pytest.raises(tl.SessionLimitExceeded, match="generations_per_minute") as refused:
        agent.send_message("hi")
    assert refused.value.code == Code.SessionLimitExceeded == 2003
    assert "retry in 60.0 s" in refused.value.message
    # The refused send changed nothing, and the other session has its own budget.
    assert agent.wait().final.status == "success"
    neighbour = other.create_agent(generate())
    assert neighbour.send_message("hi").final.status == "success"
    clock.advance(WINDOW_S)  # the window slides past both generations
    assert agent.send_message("again").final.text == "You said: again"


def test_a_generation_over_the_quota_ends_its_turn_2003_and_the_agent_stays_usable(
    serve: Serve, clock: tl.VirtualClock
) -> None:
    connect = serve(generations_per_minute=3)
    agent = connect().create_agent(generate(twice=True))
    assert agent.send_message("one").final.status == "success"  # 2 generations
    result = agent.send_message("two").final  # the 3rd runs, the 4th is refused
    assert (result.status, result.error_code) == ("error", 2003)
    assert "generations_per_minute" in result.error_message
    clock.advance(WINDOW_S)
    assert agent.send_message("three").final.status == "success"


def test_tokens_per_minute_counts_what_the_model_generated(
    serve: Serve, clock: tl.VirtualClock
) -> None:
    connect = serve(tokens_per_minute=5)
    session, other = connect(), connect()
    agent = session.create_agent(generate())
    # "You said: a b c" is 5 words, the mock model's tokens: the budget is spent.
    assert agent.send_message("a b c").final.tokens_generated == 5
    with pytest.raises(tl.SessionLimitExceeded, match=r"tokens_per_minute.*5 tokens of its 5"):
        agent.send_message("more")
    assert other.create_agent(generate()).send_message("x").final.status == "success"
    clock.advance(WINDOW_S / 2)
    with pytest.raises(tl.SessionLimitExceeded, match=r"retry in 30\.0 s"):
        agent.send_message("more")
    clock.advance(WINDOW_S / 2)
    assert agent.send_message("more").final.status == "success"


def test_a_resume_is_refused_while_the_quota_is_spent_and_the_turn_stays_paused(
    serve: Serve, clock: tl.VirtualClock
) -> None:
    connect = serve(generations_per_minute=1)
    graph = (
        tl.GraphDescription()
        .set_default_model_name("mock")
        .add_node("one", tl.GenerateParams(default_exit="gate"))
        .add_node("gate", tl.PauseParams(default_exit="two"))
        .add_node("two", tl.GenerateParams())
        .set_start_node("one")
    )
    agent = connect().create_agent(graph)
    assert agent.send_message("hi").paused  # one generation, then the pause
    with pytest.raises(tl.SessionLimitExceeded, match="generations_per_minute"):
        agent.resume()
    assert agent.wait().paused  # refused: nothing changed
    clock.advance(WINDOW_S)
    assert agent.resume().final.status == "success"


def test_open_turns_are_bounded_per_session(serve: Serve) -> None:
    connect = serve(max_open_turns_per_session=1)
    session, other = connect(), connect()
    first, second = session.create_agent(gated()), session.create_agent(gated())
    assert first.send_message("hi").paused
    with pytest.raises(tl.SessionLimitExceeded, match="max_open_turns_per_session"):
        second.send_message("hi")
    assert other.create_agent(gated()).send_message("hi").paused  # its own count
    # An open turn's agent still gets the engine's own answer (3004), not the quota's.
    with pytest.raises(tl.AgentBusy):
        first.send_message("again")
    assert first.cancel()
    assert second.send_message("hi").paused


def test_the_meter_leaves_the_models_as_they_were(clock: tl.VirtualClock) -> None:
    mock = tl.MockModel("mock")
    engine = AsyncEngine(mock, clock=clock)
    limits = ServerLimits(generations_per_minute=10)
    with BackgroundServer(lambda: engine, limits=limits) as server:
        with tl.connect(*server.address) as remote:
            (info,) = remote.list_models()
            assert (info.name, info.renders_tools) == ("mock", True)
        assert server.call(lambda: type(engine.core.meter).__name__) == "SessionMeter"
        assert server.call(lambda: engine.models["mock"]) is mock  # never wrapped
    assert engine.core.meter is None  # taken away when the server closed


def test_rate_window_slides() -> None:
    window = RateWindow()
    window.add(0.0, 3)
    window.add(10.0, 2)
    window.add(11.0, 0)  # nothing spent: not recorded
    assert window.spent(10.0) == 5 and window.frees_in(10.0) == 50.0
    assert window.spent(59.9) == 5
    assert window.spent(60.0) == 2 and window.frees_in(60.0) == 10.0
    assert window.spent(70.0) == 0 and window.frees_in(70.0) == 0.0


@pytest.mark.parametrize(
    "bad",
    [
        {"max_open_turns_per_session": -1},
        {"generations_per_minute": -1},
        {"tokens_per_minute": 1.5},
        {"configure_timeout_s": 0},
    ],
)
def test_limits_are_checked_when_made(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=next(iter(bad))):
        ServerLimits(**bad)


def test_the_cli_sets_the_quotas(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def fake_serve(host: str, port: int, limits: ServerLimits, **options: Any) -> int:
        seen["limits"] = limits
        return 0

    monkeypatch.setattr(cli, "serve", fake_serve)
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)
    flags = ["--max-open-turns", "4", "--generations-per-minute", "30"]
    assert cli.main(["serve", *flags, "--tokens-per-minute", "9000"]) == 0
    limits = seen["limits"]
    assert (
        limits.max_open_turns_per_session,
        limits.generations_per_minute,
        limits.tokens_per_minute,
    ) == (4, 30, 9000)
    with pytest.raises(SystemExit):
        cli.main(["serve", "--tokens-per-minute", "-1"])
