"""The inspector's web server: aiohttp on the engine's own loop.

aiohttp is a well-kept asyncio HTTP server with WebSockets built in, so the page is served on
the loop the agents run on: reading an agent or acting on it needs no lock and no thread hop.
The page (`static/`) is plain HTML, CSS and one script, shipped in the package: no CDN, no
build step. Live changes reach it over one WebSocket.

Exposure follows the wire server's rules: loopback by default; any other address needs TLS
(`ssl`) and an API key (`auth_key`, e.g. the server's `AuthKey`), or an explicit `insecure`.
With a key the page asks for it once and gets a session cookie; scripts may send
`Authorization: Bearer KEY`. Requests that act (POST) and the WebSocket must come from the
page's own origin, so another web page in the same browser cannot drive a game's agents.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import secrets
import ssl as ssl_module
from importlib import resources
from typing import Any, Protocol

from aiohttp import WSMsgType, web

from ..engine.support.logs import get_logger
from .actions import act
from .recorder import TimelineRecorder
from .views import Drawings, agent_detail, agent_summary, machine_data, row_key
from .watchers import Watcher, Watchers

log = get_logger("turnloom.inspect")

#: The most agents the list carries (paused the longest first): enough to see a crowd, bounded
#: so that a page over 100,000 agents stays a page.
MAX_LISTED = 2000
#: How often the pages hear of agents that changed (made and gone too): live to the eye, at
#: most one message per page per tick however busy the engine is (the turns only note who).
PUSH_EVERY_S = 0.1
#: While something changed at each of the last BUSY_TICKS ticks, the ticks come this far
#: apart instead: a busy game is told in fewer, larger messages (the page redraws once a
#: second then anyway).
BUSY_PUSH_EVERY_S = 0.25
BUSY_TICKS = 10
_COOKIE = "turnloom_inspector"
_STATIC = ("index.html", "inspector.js", "inspector.css")
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}


class KeyCheck(Protocol):
    """An API key the page must be given (the wire server's `AuthKey` is one)."""

    def matches(self, candidate: object) -> bool:
        """Whether `candidate` is the key."""
        ...


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine (as the wire server decides it)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(
    host: str, ssl: ssl_module.SSLContext | None, auth_key: KeyCheck | None, insecure: bool
) -> None:
    """Refuse (ValueError) to serve the page beyond loopback without TLS and a key."""
    if is_loopback(host) or insecure or (ssl is not None and auth_key is not None):
        return
    raise ValueError(
        f"refusing to serve the inspector on {host} without TLS and an auth key: anyone who "
        "can reach the port could watch and drive every agent. Give both, bind loopback, or "
        "pass insecure=True (--insecure) to serve anyway."
    )


class Inspector:
    """The inspector page of one engine core, served by `start` until `close`."""

    def __init__(
        self,
        engine: Any,
        *,
        ssl: ssl_module.SSLContext | None = None,
        auth_key: KeyCheck | None = None,
        use_dot: bool | None = None,
    ) -> None:
        self.engine = engine
        self.ssl = ssl
        self.auth_key = auth_key
        self.recorder = TimelineRecorder()
        self.drawings = Drawings(use_dot)
        self._sessions: set[str] = set()
        self._labels: dict[int, str] = {}
        self._runner: web.AppRunner | None = None
        #: The pages watching (their queues, and the agent each shows).
        self.watchers = Watchers()
        self._ticker: asyncio.Task[None] | None = None
        #: Each agent's row as the pages last heard of it (`row_key`), and the number of the
        #: latest push: a page drops pushes older than the list it loaded.
        self._shown: dict[int, tuple[Any, ...]] = {}
        self._version = 0
        self._sockets: set[web.WebSocketResponse] = set()
        self.address: tuple[str, int] = ("", 0)

    @property
    def url(self) -> str:
        """The page's address."""
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.ssl else 'http'}://{shown}:{port}/"

    async def start(self, host: str = "127.0.0.1", port: int = 0, insecure: bool = False) -> None:
        """Serve the page on `host`:`port` (0: a free port; see `address`)."""
        check_exposure(host, self.ssl, self.auth_key, insecure)
        loop = asyncio.get_running_loop()
        self.recorder.attach(self.engine)
        app = web.Application(middlewares=[self._guard])
        app.router.add_get("/", self._page)
        app.router.add_get("/static/{name}", self._static)
        app.router.add_post("/api/login", self._login)
        app.router.add_get("/api/state", self._state)
        app.router.add_get("/api/machine.svg", self._machine_svg)
        app.router.add_get("/api/agents/{agent_id}", self._agent)
        app.router.add_get("/api/agents/{agent_id}/graph.svg", self._graph_svg)
        app.router.add_post("/api/agents/{agent_id}/{action:resume|params|cancel}", self._act)
        app.router.add_get("/api/ws", self._socket)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port, ssl_context=self.ssl)
        try:
            await site.start()
        except BaseException:
            await self.close()
            raise
        bound = self._runner.addresses[0]
        self.address = (str(bound[0]), int(bound[1]))
        self._ticker = loop.create_task(self._tick())
        log.info("inspector.started", url=self.url)

    async def close(self) -> None:
        """Stop serving; the engine's agents go on unobserved."""
        self.recorder.detach(self.engine)
        if self._ticker is not None:
            self._ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._ticker
            self._ticker = None
        for socket in list(self._sockets):
            await socket.close()
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    # --- who may ask --------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Any) -> web.StreamResponse:
        path = request.path
        acting = request.method == "POST" or path == "/api/ws"
        if acting and not _same_origin(request):
            return _error(403, "requests that act must come from the inspector's own page")
        if path.startswith("/api/") and path != "/api/login" and not self._allowed(request):
            return _error(401, "this inspector needs its auth key: sign in on the page")
        return await handler(request)

    def _allowed(self, request: web.Request) -> bool:
        if self.auth_key is None:
            return True
        if request.cookies.get(_COOKIE) in self._sessions:
            return True
        scheme, _, key = request.headers.get("Authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.auth_key.matches(key)

    async def _login(self, request: web.Request) -> web.Response:
        if self.auth_key is None:
            return web.json_response({"ok": True})
        body = await _json_body(request)
        if not self.auth_key.matches(body.get("key")):
            return _error(401, "that is not this inspector's key")
        session = secrets.token_urlsafe(32)
        self._sessions.add(session)
        response = web.json_response({"ok": True})
        response.set_cookie(
            _COOKIE, session, httponly=True, samesite="Strict", secure=self.ssl is not None
        )
        return response

    # --- the page -----------------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        return self._file("index.html")

    async def _static(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in _STATIC:
            raise web.HTTPNotFound()
        return self._file(name)

    @staticmethod
    def _file(name: str) -> web.Response:
        text = resources.files(__package__).joinpath("static", name).read_text("utf-8")
        content_type = _TYPES[name[name.rindex(".") :]]
        return web.Response(
            text=text, content_type=content_type, headers={"Cache-Control": "no-cache"}
        )

    def _summaries(self) -> list[dict[str, Any]]:
        now = self.engine.clock.now()
        tracks = self.recorder.tracks
        agents = sorted(
            self.engine.agents.values(),
            key=lambda a: (a.turn.pause.started_at if a.turn.pause else float("inf"), a.agent_id),
        )[:MAX_LISTED]
        return [agent_summary(a, tracks.get(a.agent_id), self._labels, now) for a in agents]

    async def _state(self, request: web.Request) -> web.Response:
        self._shown.clear()  # this page has every row as it is now: the next push sends all
        return web.json_response(
            {
                "version": self._version,
                "agents": self._summaries(),
                "total": len(self.engine.agents),
                "machine": machine_data(),
                "svg": self.drawings.available,
                "now": self.engine.clock.now(),
            }
        )

    def _agent_of(self, request: web.Request) -> Any:
        try:
            agent_id = int(request.match_info["agent_id"])
        except ValueError:
            raise web.HTTPNotFound() from None
        agent = self.engine.agents.get(agent_id)
        if agent is None:
            raise web.HTTPNotFound()
        return agent

    async def _agent(self, request: web.Request) -> web.Response:
        """The chosen agent: `?full=0` without its graph and params (a page refreshing an agent
        it has drawn), `?have=3,4` without those ended turns (the page shows them already)."""
        agent = self._agent_of(request)
        query = request.query
        try:
            have = frozenset(int(t) for t in query.get("have", "").split(",") if t)
        except ValueError:
            raise web.HTTPBadRequest(text="have: turn ids separated by commas") from None
        track = self.recorder.tracks.get(agent.agent_id)
        detail = agent_detail(
            agent,
            track,
            self._labels,
            self.engine.clock.now(),
            full=query.get("full", "1") != "0",
            have=have,
        )
        return web.json_response(detail, dumps=_dumps)

    async def _graph_svg(self, request: web.Request) -> web.Response:
        agent = self._agent_of(request)
        if not self.drawings.available:
            raise web.HTTPNotFound(text="no Graphviz dot here: the page draws the graph")
        svg = await asyncio.to_thread(self.drawings.graph_svg, agent)
        return web.Response(text=svg, content_type="image/svg+xml")

    async def _machine_svg(self, request: web.Request) -> web.Response:
        if not self.drawings.available:
            raise web.HTTPNotFound(text="no Graphviz dot here: the page draws the machine")
        svg = await asyncio.to_thread(self.drawings.machine_svg)
        return web.Response(text=svg, content_type="image/svg+xml")

    async def _act(self, request: web.Request) -> web.Response:
        try:
            agent_id = int(request.match_info["agent_id"])
        except ValueError:
            raise web.HTTPNotFound() from None
        body = await _json_body(request)
        reply = act(self.engine, agent_id, request.match_info["action"], body)
        return web.json_response(reply, status=200 if reply["ok"] else 409)

    # --- live ---------------------------------------------------------------------------------

    async def _tick(self) -> None:
        """Every PUSH_EVERY_S (BUSY_PUSH_EVERY_S while busy): tell the pages of the agents
        that changed, were made or went (the turns and the engine only noted which)."""
        recorder = self.recorder
        busy = 0  # ticks in a row that found changes
        while True:
            await asyncio.sleep(BUSY_PUSH_EVERY_S if busy >= BUSY_TICKS else PUSH_EVERY_S)
            changed = recorder.take_changes()
            if not changed:
                busy = 0
                continue
            busy += 1
            if len(self.watchers):
                self._push_changes(changed)
            else:  # nobody to tell: a page loads the list as it is when it comes
                self._shown.clear()

    def _push_changes(self, touched: set[int]) -> None:
        """One message: the rows of `touched` agents that look different from what the pages
        have and the agents gone; a page showing one of them is told to fetch it again."""
        recorder = self.recorder
        now = self.engine.clock.now()
        agents, tracks, shown = self.engine.agents, recorder.tracks, self._shown
        rows, gone = [], []
        for agent_id in sorted(touched):
            agent = agents.get(agent_id)
            if agent is None:
                shown.pop(agent_id, None)
                gone.append(agent_id)
                continue
            track = tracks.get(agent_id)
            key = row_key(agent, track)
            if shown.get(agent_id) != key:
                shown[agent_id] = key
                rows.append(agent_summary(agent, track, self._labels, now))
        self._version += 1
        message = {"type": "changed", "version": self._version, "agents": rows, "gone": gone}
        self.watchers.push_changes(message, touched)

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        # Not compressed: a busy game's pushes are a few tens of kilobytes a few times a
        # second, which deflating would cost the engine's loop more than sending them plain.
        socket = web.WebSocketResponse(heartbeat=30, compress=False)
        await socket.prepare(request)
        watcher = self.watchers.join()
        self._sockets.add(socket)
        reader = asyncio.get_running_loop().create_task(_read(socket, watcher))
        try:
            await socket.send_str(json.dumps([{"type": "hello"}]))
            while not socket.closed:
                getter = asyncio.ensure_future(watcher.queue.get())
                done, _ = await asyncio.wait({getter, reader}, return_when=asyncio.FIRST_COMPLETED)
                if getter not in done:
                    getter.cancel()
                    break
                await socket.send_str(_dumps(getter.result()))
        except (ConnectionResetError, RuntimeError):
            pass  # the page went away mid-send
        finally:
            reader.cancel()
            self.watchers.leave(watcher)
            self._sockets.discard(socket)
        return socket


async def _read(socket: web.WebSocketResponse, watcher: Watcher) -> None:
    """Read what the page sends until it closes: `{"watch": AGENT_ID}` (or null) names the
    agent it shows, whose changes it is then told of; anything else is ignored."""
    async for message in socket:
        if message.type in (WSMsgType.CLOSE, WSMsgType.ERROR):
            break
        if message.type is not WSMsgType.TEXT:
            continue
        try:
            said = json.loads(message.data)
        except ValueError:
            continue
        if isinstance(said, dict) and "watch" in said:
            chosen = said["watch"]
            is_id = isinstance(chosen, int) and not isinstance(chosen, bool)
            watcher.chosen = chosen if is_id else None


def _same_origin(request: web.Request) -> bool:
    origin = request.headers.get("Origin")
    if origin is None:  # not a browser's cross-site request (curl, a test, a script)
        return True
    return origin == f"{request.scheme}://{request.host}"


async def _json_body(request: web.Request) -> dict[str, Any]:
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(text="send JSON (Content-Type: application/json)")
    try:
        body = await request.json()
    except ValueError:
        raise web.HTTPBadRequest(text="the body is not JSON") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text="the body must be a JSON object")
    return body


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "message": message}, status=status)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str)
