"""A Prometheus scrape endpoint for `TurnMetrics`, served by aiohttp on the engine's loop
(`serve --metrics`): GET /metrics. With an auth key a scrape must send it as
`Authorization: Bearer KEY` (Prometheus' `authorization` setting does)."""

from __future__ import annotations

import ssl as ssl_module
from typing import Any

from aiohttp import web

from .metrics import TurnMetrics

#: The content type of Prometheus' text format.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class MetricsEndpoint:
    """Serves `metrics` at /metrics until `close`."""

    def __init__(
        self,
        metrics: TurnMetrics,
        *,
        ssl: ssl_module.SSLContext | None = None,
        auth_key: Any = None,
    ) -> None:
        self.metrics = metrics
        self.ssl = ssl
        self.auth_key = auth_key
        self._runner: web.AppRunner | None = None
        self.address: tuple[str, int] = ("", 0)

    @property
    def url(self) -> str:
        """Where a scrape goes."""
        host, port = self.address
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.ssl else 'http'}://{shown}:{port}/metrics"

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> None:
        """Listen on `host`:`port` (0: a free one; see `address`)."""
        app = web.Application()
        app.router.add_get("/metrics", self._scrape)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port, ssl_context=self.ssl).start()
        bound = self._runner.addresses[0]
        self.address = (str(bound[0]), int(bound[1]))

    async def close(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            runner, self._runner = self._runner, None
            await runner.cleanup()

    async def _scrape(self, request: web.Request) -> web.Response:
        if self.auth_key is not None:
            scheme, _, key = request.headers.get("Authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not self.auth_key.matches(key):
                return web.Response(status=401, text="this endpoint needs its auth key\n")
        return web.Response(body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})
