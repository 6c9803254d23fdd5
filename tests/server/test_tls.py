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
from pathlib import Path

import pytest

import turnloom as tl
import turnloom.__main__ as cli
from tests.server.certs import Pki, encrypted_copy
from tests.wire import frame
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer, ServerLimits, tls
from turnloom.server.tls import TLSFileError, server_context

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
        (
            ["--tls-cert", "missing.pem", "--tls-key", "missing.key"],
            "cannot load --tls-cert 'missing.pem': no such file",
        ),
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


def bad_files(pki: Pki, folder: Path) -> dict[str, tuple[list[Path | None], str, str]]:
    """Case name -> ([cert, key, client CA], the file's role, what the message says)."""
    text = folder / "notes.txt"
    text.write_text("not a certificate\n")
    corrupt = folder / "corrupt.crt"
    corrupt.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
    locked = encrypted_copy(pki.server.key, folder / "locked.key")
    server = pki.server
    return {
        "missing cert": ([folder / "nope.crt", server.key, None], "cert", "no such file"),
        "missing key": ([server.cert, folder / "nope.key", None], "key", "no such file"),
        "cert is a folder": ([folder, server.key, None], "cert", "a directory, not a file"),
        "cert not PEM": ([text, server.key, None], "cert", "not a PEM certificate"),
        "cert does not parse": ([corrupt, server.key, None], "cert", "does not parse"),
        "swapped": ([server.key, server.cert, None], "cert", "swapped"),
        "key not PEM": ([server.cert, text, None], "key", "not a PEM private key"),
        "key of another cert": (
            [server.cert, pki.client.key, None],
            "key",
            f"does not match the certificate {str(server.cert)!r}",
        ),
        "encrypted key": ([server.cert, locked, None], "key", "encrypted with a passphrase"),
        "client CA not PEM": ([server.cert, server.key, text], "client_ca", "not a PEM cert"),
        "client CA missing": (
            [server.cert, server.key, folder / "ca.pem"],
            "client_ca",
            "no such file",
        ),
    }


CASES = [
    "missing cert",
    "missing key",
    "cert is a folder",
    "cert not PEM",
    "cert does not parse",
    "swapped",
    "key not PEM",
    "key of another cert",
    "encrypted key",
    "client CA not PEM",
    "client CA missing",
]
FLAGS = {"cert": "--tls-cert", "key": "--tls-key", "client_ca": "--tls-client-ca"}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_tls_file_is_refused_naming_it_and_what_is_wrong(
    case: str,
    pki: Pki,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files, role, said = bad_files(pki, tmp_path)[case]
    index = ("cert", "key", "client_ca").index(role)
    bad = files[index]
    with pytest.raises(TLSFileError) as info:
        server_context(*files)  # type: ignore[arg-type]
    assert (info.value.role, info.value.path) == (role, str(bad))
    assert said in info.value.reason and str(bad) in str(info.value)
    # The command line says the same, naming the option: a usage error (exit 2).
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)  # keep the test's logging
    flags = ["--tls-cert", str(files[0]), "--tls-key", str(files[1])]
    if files[2] is not None:
        flags += ["--tls-client-ca", str(files[2])]
    with pytest.raises(SystemExit) as exit_:
        cli.main(["serve", "--mock", *flags])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"cannot load {FLAGS[role]} {str(bad)!r}: " in err and said in err, err


def test_an_unreadable_tls_file_says_so(
    pki: Pki, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tests may run as root, who reads any file: the refusal is the operating system's.
    real_open = open

    def refuse(path: object, *args: object, **kwargs: object) -> object:
        if path == pki.server.key:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(tls, "open", refuse, raising=False)
    with pytest.raises(TLSFileError, match="not readable") as info:
        server_context(pki.server.cert, pki.server.key)
    assert (info.value.role, info.value.path) == ("key", str(pki.server.key))
