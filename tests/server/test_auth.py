"""Client authentication: the key in ConfigureSession, 2004, the failure bound, the CLI's
refusal to expose an unprotected server, and that no key ever reaches a log line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnloom as tl
import turnloom.__main__ as cli
from tests.wire import RawSession, code_of
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer, ServerLimits
from turnloom.server.auth import (
    ENV_VAR,
    MAX_AUTH_FAILURES,
    AuthKey,
    key_from_env,
    load_key_file,
)

Code = tl.ErrorCode
REPO = Path(__file__).resolve().parents[2]
KEY = "k3y-0f-the-t3st-s3rv3r-7d1f0a9c"
#: A near miss: what a typo looks like, and must be as secret as the key.
WRONG = "k3y-0f-the-t3st-s3rv3r-7d1f0a9d"


def configure(raw: RawSession, **fields: Any) -> dict[str, Any]:
    reply: dict[str, Any] = raw.request(
        {"type": "ConfigureSession", "protocol_version": 1, **fields}
    )
    return reply


@pytest.fixture
def guarded() -> Iterator[BackgroundServer]:
    """A server that requires KEY."""
    with BackgroundServer(lambda: AsyncEngine(tl.MockModel("mock")), auth_key=KEY) as server:
        yield server


def graph() -> tl.GraphDescription:
    return (
        tl.GraphDescription()
        .add_node("say", tl.CannedResponseParams(lines=["in"]))
        .set_start_node("say")
    )


def test_the_right_key_opens_the_session_a_wrong_or_missing_one_is_2004(
    guarded: BackgroundServer,
) -> None:
    raw = RawSession(guarded.address)
    try:
        assert raw.ready["auth_required"] is True
        missing = configure(raw)
        assert (
            code_of(missing) == Code.Unauthorized and "requires an auth_key" in missing["message"]
        )
        wrong = configure(raw, auth_key=WRONG)
        assert code_of(wrong) == Code.Unauthorized and "1 more failure" in wrong["message"]
        assert KEY not in wrong["message"] and WRONG not in wrong["message"]
        # Still not ready: other requests are 2002 and do not count as failures.
        assert code_of(raw.request({"type": "ListModels"})) == Code.SessionNotReady
        assert configure(raw, auth_key=KEY)["type"] == "Ack"
        assert raw.request({"type": "ListModels"})["type"] == "ModelListResponse"
    finally:
        raw.close()


def test_the_key_is_checked_before_the_version(guarded: BackgroundServer) -> None:
    raw = RawSession(guarded.address)
    try:
        reply = raw.request({"type": "ConfigureSession", "protocol_version": 99, "auth_key": 7})
        assert (
            code_of(reply) == Code.Unauthorized and "must be a string, got int" in reply["message"]
        )
        reply = raw.request({"type": "ConfigureSession", "protocol_version": 99, "auth_key": KEY})
        assert code_of(reply) == Code.ProtocolVersionMismatch
    finally:
        raw.close()


def test_the_connection_is_closed_after_the_bounded_failures_and_the_server_stays_up(
    guarded: BackgroundServer,
) -> None:
    raw = RawSession(guarded.address)
    try:
        for attempt in range(1, MAX_AUTH_FAILURES + 1):
            reply = configure(raw, auth_key=f"guess-number-{attempt:08d}")
            assert code_of(reply) == Code.Unauthorized
        assert "the connection is closed" in reply["message"]
        assert raw.recv_all() == []  # the last refusal was the last frame
    finally:
        raw.close()
    assert guarded.call(lambda: len(guarded.server.sessions)) == 0
    with tl.connect(*guarded.address, auth_key=KEY) as remote:
        assert remote.create_agent(graph()).send_message("hi").final.text == "in"


def test_the_python_client_passes_the_key_and_raises_unauthorized(
    guarded: BackgroundServer,
) -> None:
    with tl.connect(*guarded.address, auth_key=KEY) as remote:
        assert remote.create_agent(graph()).send_message("hi").final.text == "in"
    for key in (None, WRONG):
        with pytest.raises(tl.Unauthorized) as refused:
            tl.connect(*guarded.address, auth_key=key)
        assert refused.value.code == Code.Unauthorized == 2004
        assert isinstance(refused.value, tl.ServerError)
        assert KEY not in str(refused.value) and WRONG not in str(refused.value)
    with pytest.raises(TypeError, match="auth_key must be a str") as bad:
        tl.connect(*guarded.address, auth_key=b"bytes-are-not-keys")  # type: ignore[arg-type]
    assert "bytes-are-not-keys" not in str(bad.value)


def test_a_server_without_a_key_ignores_the_field(raw_session: Any) -> None:
    raw = raw_session()
    assert raw.ready["auth_required"] is False
    assert configure(raw, auth_key=["anything", 1])["type"] == "Ack"


def test_an_unauthenticated_session_is_closed_at_the_configure_deadline() -> None:
    limits = ServerLimits(configure_timeout_s=0.2)
    with BackgroundServer(
        lambda: AsyncEngine(tl.MockModel("mock")), limits=limits, auth_key=KEY
    ) as server:
        raw = RawSession(server.address)
        try:
            (notice,) = raw.recv_all(timeout=10)
            assert code_of(notice) == Code.Unauthorized and notice["request_id"] is None
        finally:
            raw.close()
        # A session that authenticates in time is not affected by the deadline.
        with tl.connect(*server.address, auth_key=KEY) as remote:
            assert remote.list_models()[0].name == "mock"


#: Any msgpack value (bin too: the protocol forbids it, but a client may still send one).
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=True)
    | st.text(max_size=64)
    | st.binary(max_size=64),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=8,
)
#: The key, near misses, and a key as large as a frame allows.
KEYS = st.sampled_from([KEY, KEY + " ", KEY.upper(), KEY[:-1], "x" * 1_000_000])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(auth_key=VALUES | KEYS, version=st.just(1) | VALUES, client_name=VALUES)
def test_fuzzed_auth_fields_get_documented_codes_and_the_server_stays_up(
    auth_key: Any, version: Any, client_name: Any, fuzz_server: BackgroundServer
) -> None:
    raw = RawSession(fuzz_server.address)
    try:
        frame = {"type": "ConfigureSession", "protocol_version": version}
        frame.update(auth_key=auth_key, client_name=client_name)
        reply = raw.request(frame)
        routed = isinstance(version, int) and not isinstance(version, bool)
        if not routed and version is not None:
            assert code_of(reply) == Code.MalformedMessage  # a wire-type error of a routed field
        elif version is None:
            assert code_of(reply) == Code.MalformedMessage  # required
        elif auth_key != KEY or isinstance(auth_key, bool):
            assert code_of(reply) == Code.Unauthorized
            assert KEY not in reply["message"]
        elif version != 1:
            assert code_of(reply) == Code.ProtocolVersionMismatch
        else:
            assert reply["type"] == "Ack"
    finally:
        raw.close()
    probe = RawSession(fuzz_server.address)  # the server is up and takes new sessions
    try:
        assert probe.ready["type"] == "SessionReady"
    finally:
        probe.close()


@pytest.fixture(scope="module")
def fuzz_server() -> Iterator[BackgroundServer]:
    with BackgroundServer(lambda: AsyncEngine(tl.MockModel("mock")), auth_key=KEY) as server:
        yield server


def test_auth_keys_are_kept_as_digests_and_loaded_from_a_file_or_the_environment(
    tmp_path: Path,
) -> None:
    key = AuthKey(KEY)
    assert KEY not in repr(key) and key.matches(KEY) and not key.matches(WRONG)
    assert not key.matches(None) and not key.matches(123) and not key.matches(KEY.encode())
    assert KEY not in repr(vars(key) if hasattr(key, "__dict__") else key)
    with pytest.raises(ValueError, match="at least 16 characters") as short:
        AuthKey("short")
    assert "short" not in str(short.value).split("(")[0]
    path = tmp_path / "key"
    path.write_text(KEY + "\n")
    path.chmod(0o600)
    assert load_key_file(path).matches(KEY)
    assert key_from_env({ENV_VAR: KEY}) is not None and key_from_env({}) is None
    with pytest.raises(ValueError, match=ENV_VAR):
        key_from_env({ENV_VAR: "tiny"})


# --- the command line -------------------------------------------------------------------


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """What `serve` was called with, instead of serving."""
    seen: dict[str, Any] = {}

    def fake_serve(host: str, port: int, limits: ServerLimits, **options: Any) -> int:
        seen.update(host=host, limits=limits, **options)
        return 0

    monkeypatch.setattr(cli, "serve", fake_serve)
    monkeypatch.setattr(cli, "configure_logging", lambda level: None)
    monkeypatch.delenv(ENV_VAR, raising=False)
    return seen


def test_a_non_loopback_host_without_tls_and_key_is_refused_unless_insecure(
    served: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with pytest.raises(SystemExit) as exit_:
        cli.main(["serve", "--host", "0.0.0.0"])
    assert exit_.value.code == 2 and not served
    err = capsys.readouterr().err
    assert "refusing to serve on 0.0.0.0 without TLS" in err and "--insecure" in err
    assert cli.main(["serve", "--host", "0.0.0.0", "--insecure"]) == 0
    err = capsys.readouterr().err
    assert "WARNING: --insecure" in err and "spend this machine's inference" in err
    key_file = tmp_path / "key"
    key_file.write_text(KEY)
    key_file.chmod(0o600)
    # A key without TLS is still refused off loopback: the key would cross the network bare.
    with pytest.raises(SystemExit):
        cli.main(["serve", "--host", "0.0.0.0", "--auth-key-file", str(key_file)])
    assert "without TLS (--tls-cert/--tls-key)" in capsys.readouterr().err
    assert cli.main(["serve", "--auth-key-file", str(key_file)]) == 0  # loopback: fine
    assert served["auth_key"].matches(KEY)
    assert KEY not in capsys.readouterr().err


def test_the_key_comes_from_the_environment_and_never_from_argv(
    served: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(ENV_VAR, KEY)
    assert cli.main(["serve"]) == 0
    assert served["auth_key"].matches(KEY)
    with pytest.raises(SystemExit):
        cli.main(["serve", "--auth-key", KEY])  # no such option
    capsys.readouterr()
    with pytest.raises(SystemExit):
        cli.main(["serve", "--auth-key-file", "/nonexistent/key"])
    assert "cannot read it" in capsys.readouterr().err


# --- nothing secret in any log -------------------------------------------------------------

#: A server with a key, a client with the right key, then failures of every kind; every log
#: record of every logger at every level is kept and printed as JSON lines at the end.
FAILURES = f"""
import turnloom as tl
from tests.wire import RawSession
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer

KEY, WRONG = {KEY!r}, {WRONG!r}
GRAPH = tl.GraphDescription().add_node("gate", tl.PauseParams(default_exit="say")).add_node(
    "say", tl.CannedResponseParams(lines=["in"])).set_start_node("gate")
engine = lambda: AsyncEngine(tl.MockModel("mock"), store=":memory:")
with BackgroundServer(engine, auth_key=KEY) as server:
    with tl.connect(*server.address, auth_key=KEY) as remote:
        remote.list_models()
        agent = remote.create_agent(GRAPH, durable=True)
        agent.send_message("hi")
        TOKEN, AGENT = agent.resume_token, agent.agent_id
    # The resume token, printed once here: the test finds it nowhere else.
    print("TOKEN", TOKEN)
    with tl.connect(*server.address, auth_key=KEY) as remote:
        for token in (TOKEN[:-1], TOKEN.upper()):
            try:
                remote.attach_agent(AGENT, token)
            except tl.TurnloomError as error:
                print("refused", error.code)
        remote.attach_agent(AGENT, TOKEN).resume()
    for key in (None, WRONG):
        try:
            tl.connect(*server.address, auth_key=key)
        except tl.Unauthorized as error:
            print("refused", error.code)
    raw = RawSession(server.address)
    for key in (WRONG, WRONG.upper(), [WRONG]):
        raw.request({{"type": "ConfigureSession", "protocol_version": 1, "auth_key": key}})
    raw.recv_all()
    raw.close()
"""


def run_capturing(prelude: str) -> str:
    code = textwrap.dedent(prelude) + FAILURES
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def test_no_key_appears_in_stdlib_logs_at_any_level() -> None:
    output = run_capturing(
        """
        import json, logging, sys

        class Everything(logging.Handler):
            def emit(self, record):
                text = self.format(record) + " " + json.dumps(
                    {k: repr(v) for k, v in vars(record).items()}
                )
                print("LOG", text, file=sys.stderr)

        logging.basicConfig(level=logging.NOTSET, handlers=[Everything()])
        logging.getLogger().setLevel(logging.NOTSET)
        """
    )
    assert output.count("refused 2004") == 2
    assert "session.auth_failed" in output and "session.auth_locked_out" in output
    assert "LOG" in output
    for secret in (KEY, WRONG, WRONG.upper(), KEY[:12], WRONG[-12:]):
        assert secret not in output
    assert_token_only_printed(output)


def assert_token_only_printed(output: str) -> None:
    """The resume token appears once, where the script printed it: in no log line."""
    assert output.count("refused 3001") == 2 and "agent.attached" in output
    (token,) = re.findall(r"^TOKEN (\S+)$", output, re.MULTILINE)
    for part in (token, token.upper(), token[:12], token[-12:]):
        assert output.count(part) == (1 if part in token else 0), part


def test_no_key_appears_in_structlog_output_at_any_level() -> None:
    output = run_capturing(
        """
        import structlog
        structlog.configure(
            processors=[structlog.processors.add_log_level, structlog.processors.JSONRenderer()],
            wrapper_class=structlog.make_filtering_bound_logger(0),
        )
        """
    )
    # Lines of the server's and the client's threads may interleave: look for the events as
    # text rather than parse each line.
    for event in ("session.auth_failed", "session.auth_locked_out"):
        assert f'"event": "{event}"' in output
    for secret in (KEY, WRONG, WRONG.upper(), KEY[:12], WRONG[-12:]):
        assert secret not in output
    assert_token_only_printed(output)
