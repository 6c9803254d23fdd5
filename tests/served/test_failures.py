"""How a served model reports a misbehaving server: a 5xx (retried, bounded), a 4xx (not
retried), a malformed or failed stream. Each is 4001 with the server's own message.

A real server cannot be made to misbehave on cue, so these use `scripted.ScriptedServer`: real
sockets and real HTTP answering as a broken server would; nothing in turnloom is replaced.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

import turnloom as tl
from tests.served.scripted import ScriptedServer, scripted_server
from tests.served.test_served import generate_graph


@pytest.fixture
def broken() -> Iterator[ScriptedServer]:
    """A scripted server; each test sets how it breaks."""
    with scripted_server() as server:
        yield server


def turn(server: ScriptedServer, retries: int = 2) -> tl.TurnResult:
    """One Generate turn on a served model pointed at `server`, which must fail 4001."""
    model = tl.ServedModel(
        server.url, name="gemma", server_kind="llama-cpp-python", entry="gemma3-270m",
        retries=retries,
    )  # fmt: skip
    with tl.Engine(model) as engine:
        result = engine.create_agent(generate_graph()).send_message("Hello").final
    assert (result.status, result.error_code) == (tl.TurnStatus.ERROR, 4001)
    return result


def test_5xx_is_retried_a_bounded_number_of_times_then_4001(broken: ScriptedServer) -> None:
    error = json.dumps({"error": {"message": "model is still loading"}}).encode()
    broken.replies = [(503, "application/json", error)]
    result = turn(broken, retries=2)
    assert len(broken.completions) == 3
    assert "/v1/completions answered 503: model is still loading" in result.error_message


def test_4xx_is_not_retried(broken: ScriptedServer) -> None:
    error = json.dumps({"detail": [{"msg": "temperature: bad value"}]}).encode()
    broken.replies = [(422, "application/json", error)]
    result = turn(broken, retries=2)
    assert len(broken.completions) == 1
    assert "answered 422: " in result.error_message
    assert "temperature: bad value" in result.error_message


@pytest.mark.parametrize(
    ("body", "content_type", "message"),
    [
        (b"data: {not json\n\n", "text/event-stream", "malformed stream event: {not json"),
        (
            b'data: {"error": {"message": "out of memory"}}\n\n',
            "text/event-stream",
            "the server failed mid-reply: out of memory",
        ),
        (b'data: {"choices": [{"text": "Hi"}]}\n\n', "text/event-stream", "without [DONE]"),
        (b"data: [DONE]\n\n", "text/event-stream", "ended the reply before it was done"),
        (b'{"choices": []}', "application/json", "not an event stream"),
    ],
)
def test_a_malformed_stream_is_4001_and_not_retried(
    broken: ScriptedServer, body: bytes, content_type: str, message: str
) -> None:
    broken.replies = [(200, content_type, body)]
    result = turn(broken)
    assert len(broken.completions) == 1  # it had started streaming: never sent again
    assert message in result.error_message
