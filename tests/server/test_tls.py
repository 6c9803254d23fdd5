"""TLS and mutual TLS: who gets a session, who is refused, and that the server stays up."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator

import pytest

import turnloom as tl
import turnloom.__main__ as cli
from tests.server.certs import Pki
from tests.wire import frame
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer, ServerLimits
from turnloom.server.tls import server_context

#: The server hangs up on a client that does not start its handshake within this.
HANDSHAKE_S = 0.5


def graph() -> tl.GraphDescription:
    return (
        tl.GraphDescription()
        .add_node("gate", tl.PauseParams(default_exit="say"))
        .add_node("say", tl.CannedResponseParams(lines=["secure"]))
        .set_start_node("gate")
    )


def a_turn(remote: tl.RemoteEngine) -> str:
    agent = remote.create_agent(graph())
    assert agent.send_message("hi").paused
    return agent.resume().final.text


def start(pki: Pki, *, mutual: bool = False) -> BackgroundServer:
    context = server_context(pki.server.cert, pki.server.key, pki.ca if mutual else None)
    return BackgroundServer(
        lambda: AsyncEngine(tl.MockModel("mock")),
        limits=ServerLimits(tls_handshake_timeout_s=HANDSHAKE_S),
        ssl=context,
    )


@pytest.fixture
def tls_server(pki: Pki) -> Iterator[BackgroundServer]:
    with start(pki) as server:
        yield server


@pytest.fixture
def mtls_server(pki: Pki) -> Iterator[BackgroundServer]:
    with start(pki, mutual=True) as server:
        yield server


def test_a_tls_client_gets_a_session_and_runs_turns(tls_server: BackgroundServer, pki: Pki) -> None:
    with tl.connect(*tls_server.address, ssl=pki.client_context()) as remote:
        assert a_turn(remote) == "secure"
    # The connection really is TLS: the server's transport says so.
    assert tls_server.server.ssl is not None


def test_connect_async_speaks_tls_too(tls_server: BackgroundServer, pki: Pki) -> None:
    async def run() -> str:
        remote = await tl.connect_async(*tls_server.address, ssl=pki.client_context())
        async with remote:
            agent = await remote.create_agent(graph())
            assert (await agent.send_message("hi")).paused
            return (await agent.resume()).final.text

    assert asyncio.run(run()) == "secure"


def test_a_plain_client_is_refused_cleanly_and_the_server_stays_up(
    tls_server: BackgroundServer, pki: Pki
) -> None:
    # A client that speaks first: its frame is no TLS record, the handshake fails, the server
    # hangs up without a word of the protocol.
    with socket.create_connection(tls_server.address, timeout=5) as plain:
        plain.sendall(frame({"type": "ConfigureSession", "protocol_version": 1}))
        received = b""
        with contextlib.suppress(ConnectionResetError):  # EOF or RST: either is a hang-up
            while chunk := plain.recv(4096):
                received += chunk
        assert b"SessionReady" not in received
    # The turnloom client waits for SessionReady: the server drops it at its handshake time-out.
    with pytest.raises(tl.ConnectionFailed):
        tl.connect(*tls_server.address, timeout=10)
    assert tls_server.call(lambda: len(tls_server.server.sessions)) == 0
    with tl.connect(*tls_server.address, ssl=pki.client_context()) as remote:
        assert a_turn(remote) == "secure"


def test_a_client_that_does_not_trust_the_server_is_refused(
    tls_server: BackgroundServer,
) -> None:
    with pytest.raises(tl.ConnectionFailed, match=r"CERTIFICATE_VERIFY_FAILED|certificate"):
        tl.connect(*tls_server.address, ssl=True)  # the system's store: no test CA in it
    with pytest.raises(tl.ConnectionFailed):
        tl.connect(*tls_server.address, ssl=ssl.create_default_context())


def test_mutual_tls_admits_the_ca_s_clients_only(mtls_server: BackgroundServer, pki: Pki) -> None:
    with tl.connect(*mtls_server.address, ssl=pki.client_context(pki.client)) as remote:
        assert a_turn(remote) == "secure"
    for identity in (None, pki.rogue_client):  # no certificate, then an untrusted CA's
        with pytest.raises(tl.ConnectionFailed):
            tl.connect(*mtls_server.address, ssl=pki.client_context(identity), timeout=10)
    assert mtls_server.call(lambda: len(mtls_server.server.sessions)) == 0
    # The refusals cost the server nothing: the next good client is served as the first was.
    with tl.connect(*mtls_server.address, ssl=pki.client_context(pki.client)) as remote:
        assert a_turn(remote) == "secure"


def test_a_bad_ssl_argument_is_refused_before_connecting() -> None:
    with pytest.raises(TypeError, match="ssl must be"):
        tl.connect("127.0.0.1", 1, ssl="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ssl must be"):
        BackgroundServer(ssl=True)  # type: ignore[arg-type]


def test_serve_with_tls_flags_serves_tls_only(pki: Pki) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "turnloom",
            "serve",
            "--port",
            "0",
            "--mock",
            "--tls-cert",
            str(pki.server.cert),
            "--tls-key",
            str(pki.server.key),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        found = re.fullmatch(r"turnloom: protocol v1 on (\S+):(\d+)\n", proc.stdout.readline())
        assert found
        address = found.group(1), int(found.group(2))
        with tl.connect(*address, ssl=pki.client_context()) as remote:
            assert a_turn(remote) == "secure"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tls-cert", "a.pem"], "go together"),
        (["--tls-client-ca", "ca.pem"], "needs --tls-cert"),
        (["--tls-cert", "missing.pem", "--tls-key", "missing.key"], "cannot load"),
    ],
)
def test_bad_tls_flags_are_usage_errors(
    flags: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)  # keep the test's logging
    with pytest.raises(SystemExit) as exit_:
        cli.main(["serve", *flags])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
