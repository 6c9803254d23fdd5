"""Who may see and drive the inspector, without a browser: loopback only by default; beyond it
TLS and an auth key (or a refusal); with a key, a wrong or missing one refused, the sign-in
cookie, and requests that act (POST, the WebSocket) accepted only from the page's own origin;
TLS with the development certificate of docs/protocol.md, made by its `openssl` command."""

from __future__ import annotations

import asyncio
import json
import shutil
import ssl
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

import turnloom as tl
from tests.helpers import ENV, graph_of, ready_address, running
from turnloom.inspect.app import Inspector, check_exposure
from turnloom.inspect.recorder import TimelineRecorder
from turnloom.server import AuthKey
from turnloom.server.tls import server_context

KEY = "a-key-long-enough-for-the-server"


@pytest.fixture(scope="module")
def dev_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The development certificate of docs/protocol.md, made with its `openssl` command."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("SKIPPED LOUDLY: no openssl here to make the development certificate")
    folder = tmp_path_factory.mktemp("dev-cert")
    cert, key = folder / "dev-cert.pem", folder / "dev-key.pem"
    subprocess.run(
        [
            *(openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"),
            *("-nodes", "-days", "365", "-subj", "/CN=localhost"),
            *("-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"),
            *("-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def paused_graph() -> tl.GraphDescription:
    return graph_of(
        ("wait", tl.PauseParams(default_exit="bye")),
        ("bye", tl.CannedResponseParams(lines=["farewell"])),
    )


def client() -> aiohttp.ClientSession:
    """A client that keeps cookies of an IP address, as a browser does (aiohttp's default jar
    drops them)."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


def with_inspector(
    body: Callable[[Inspector, tl.AsyncAgent, aiohttp.ClientSession], Awaitable[None]],
    **inspect: Any,
) -> None:
    """Run `body` against an inspector of an engine with one paused agent."""

    async def scenario() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            agent = await engine.create_agent(paused_graph())
            assert (await agent.send_message("hi")).paused
            page = await engine.inspect(**inspect)
            async with client() as session:
                await body(page, agent, session)

    asyncio.run(scenario())


# --- where it may listen ---------------------------------------------------------------------


def test_loopback_by_default() -> None:
    async def body(page: Inspector, agent: tl.AsyncAgent, session: aiohttp.ClientSession) -> None:
        assert page.address[0] == "127.0.0.1"
        assert page.url.startswith("http://127.0.0.1:")
        async with session.get(page.url + "api/state") as reply:
            assert reply.status == 200  # no key asked on loopback without one
            assert [a["id"] for a in (await reply.json())["agents"]] == [agent.agent_id]

    with_inspector(body)


@pytest.mark.parametrize(
    ("tls", "key"), [(False, False), (True, False), (False, True)], ids=["bare", "tls", "key"]
)
def test_beyond_loopback_needs_both_tls_and_a_key(
    tls: bool, key: bool, dev_cert: tuple[Path, Path]
) -> None:
    context = server_context(*dev_cert) if tls else None
    auth = AuthKey(KEY) if key else None
    for host in ("0.0.0.0", "192.0.2.10", "::"):
        with pytest.raises(ValueError, match=f"refusing to serve the inspector on {host}"):
            check_exposure(host, context, auth, insecure=False)
    check_exposure("0.0.0.0", context, auth, insecure=True)  # said out loud: allowed
    for host in ("127.0.0.1", "::1", "localhost"):
        check_exposure(host, context, auth, insecure=False)


def test_tls_and_a_key_together_allow_any_address(dev_cert: tuple[Path, Path]) -> None:
    context = server_context(*dev_cert)
    check_exposure("0.0.0.0", context, AuthKey(KEY), insecure=False)


def test_the_embedded_page_refuses_before_it_listens() -> None:
    async def scenario() -> None:
        async with tl.AsyncEngine(tl.MockModel("mock")) as engine:
            with pytest.raises(ValueError, match="without TLS and an auth key"):
                await engine.inspect(host="0.0.0.0")
            # Nothing was left behind: no recorder watching the turns, no page to close.
            assert not any(isinstance(o, TimelineRecorder) for o in engine.observers)
            assert engine._inspectors == []

    asyncio.run(scenario())


def test_serve_refuses_the_inspector_beyond_loopback_without_tls_and_a_key() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "turnloom", "serve", "--mock", "--inspect", "0.0.0.0:0"],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=60,
    )
    assert done.returncode == 2
    assert "refusing --inspect on 0.0.0.0 without TLS" in done.stderr


# --- with a key --------------------------------------------------------------------------------


def test_a_missing_or_wrong_key_is_refused_and_the_right_one_signs_in() -> None:
    async def body(page: Inspector, agent: tl.AsyncAgent, session: aiohttp.ClientSession) -> None:
        async with session.get(page.url) as reply:  # the page itself: it asks for the key
            assert reply.status == 200 and "turnloom inspector" in await reply.text()
        for headers in ({}, {"Authorization": "Bearer not-the-key"}, {"Authorization": KEY}):
            async with session.get(page.url + "api/state", headers=headers) as reply:
                assert reply.status == 401, headers
                assert "auth key" in (await reply.json())["message"]
        async with session.post(page.url + f"api/agents/{agent.agent_id}/resume", json={}) as r:
            assert r.status == 401
        assert (await agent.wait()).paused  # nothing was done
        async with session.get(
            page.url + "api/state", headers={"Authorization": f"Bearer {KEY}"}
        ) as reply:
            assert reply.status == 200

        async with session.post(page.url + "api/login", json={"key": "not-the-key"}) as reply:
            assert reply.status == 401
            assert "turnloom_inspector" not in reply.cookies
        async with session.post(page.url + "api/login", json={"key": KEY}) as reply:
            assert reply.status == 200
            cookie = reply.cookies["turnloom_inspector"]
            assert cookie["httponly"] and cookie["samesite"] == "Strict"
            assert not cookie["secure"]  # plain http on loopback: a secure cookie never returns
        async with session.get(page.url + "api/state") as reply:  # the cookie goes along
            assert reply.status == 200
        async with session.post(page.url + f"api/agents/{agent.agent_id}/resume", json={}) as r:
            assert r.status == 200 and (await r.json())["ok"]
        assert (await agent.wait()).final.text == "farewell"

    with_inspector(body, auth_key=AuthKey(KEY))


def test_a_made_up_cookie_is_refused() -> None:
    async def body(page: Inspector, agent: tl.AsyncAgent, session: aiohttp.ClientSession) -> None:
        headers = {"Cookie": "turnloom_inspector=made-up"}
        async with session.get(page.url + "api/state", headers=headers) as reply:
            assert reply.status == 401

    with_inspector(body, auth_key=AuthKey(KEY))


# --- the same-origin rule ----------------------------------------------------------------------


def test_actions_from_another_origin_are_refused() -> None:
    async def body(page: Inspector, agent: tl.AsyncAgent, session: aiohttp.ClientSession) -> None:
        resume = page.url + f"api/agents/{agent.agent_id}/resume"
        own = page.url.rstrip("/")
        for origin in ("http://evil.example", f"{own}.evil.example", "null"):
            async with session.post(resume, json={}, headers={"Origin": origin}) as reply:
                assert reply.status == 403, origin
                assert "own page" in (await reply.json())["message"]
        assert (await agent.wait()).paused  # still paused: nothing was done
        # A read is no action: another origin gets it (the browser keeps it from the script).
        async with session.get(
            page.url + "api/state", headers={"Origin": "http://evil.example"}
        ) as r:
            assert r.status == 200
        async with session.post(resume, json={}, headers={"Origin": own}) as reply:
            assert reply.status == 200
        assert (await agent.wait()).final.text == "farewell"

    with_inspector(body)


def test_the_websocket_from_another_origin_is_refused() -> None:
    async def body(page: Inspector, agent: tl.AsyncAgent, session: aiohttp.ClientSession) -> None:
        socket_url = page.url.replace("http", "ws") + "api/ws"
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(socket_url, origin="http://evil.example")
        assert refused.value.status == 403
        async with session.ws_connect(socket_url, origin=page.url.rstrip("/")) as socket:
            assert json.loads(await socket.receive_str())[0]["type"] == "hello"
            await socket.send_json({"watch": agent.agent_id})  # the page shows this agent
            for _ in range(1000):  # until the server has read it
                if agent.agent_id in page.watchers.shown():
                    break
                await asyncio.sleep(0.01)
            assert page.watchers.shown() == {agent.agent_id}
            await agent.resume()  # the page hears of it, pushed
            pushed = json.loads(await asyncio.wait_for(socket.receive_str(), 10))
            assert pushed[0]["type"] == "changed"
            assert [row["id"] for row in pushed[0]["agents"]] == [agent.agent_id]
            assert pushed[0]["chosen"] is True

    with_inspector(body)


def test_the_websocket_needs_the_key_too() -> None:
    async def body(page: Inspector, agent: tl.AsyncAgent, session: aiohttp.ClientSession) -> None:
        socket_url = page.url.replace("http", "ws") + "api/ws"
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(socket_url)
        assert refused.value.status == 401
        headers = {"Authorization": f"Bearer {KEY}"}
        async with session.ws_connect(socket_url, headers=headers) as socket:
            assert json.loads(await socket.receive_str())[0]["type"] == "hello"

    with_inspector(body, auth_key=AuthKey(KEY))


# --- TLS with a development certificate --------------------------------------------------------


def test_serve_inspect_over_tls_with_a_key(dev_cert: tuple[Path, Path], tmp_path: Path) -> None:
    cert, key = dev_cert
    key_file = tmp_path / "turnloom.key"
    key_file.write_text(KEY)
    args = [sys.executable, "-m", "turnloom", "serve", "--mock", "--port", "0", "--inspect", "0"]
    args += ["--tls-cert", str(cert), "--tls-key", str(key), "--auth-key-file", str(key_file)]
    with running(args) as proc:
        ready_address(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("turnloom: inspector on https://127.0.0.1:"), line
        url = line.removeprefix("turnloom: inspector on ")
        trusted = ssl.create_default_context(cafile=str(cert))

        async def scenario() -> None:
            async with client() as session:
                with pytest.raises(aiohttp.ClientConnectorCertificateError):
                    await session.get(url)  # the system's trust store does not know it
                async with session.get(url + "api/state", ssl=trusted) as reply:
                    assert reply.status == 401
                login = url + "api/login"
                async with session.post(login, json={"key": KEY}, ssl=trusted) as reply:
                    assert reply.status == 200
                    assert reply.cookies["turnloom_inspector"]["secure"]  # https only
                async with session.get(url + "api/state", ssl=trusted) as reply:
                    assert reply.status == 200
                    assert (await reply.json())["agents"] == []
                plain = url.replace("https://", "http://") + "api/state"
                with pytest.raises(aiohttp.ClientError):
                    await session.get(plain)  # no plain http on the TLS port

        asyncio.run(scenario())
