"""HTTP to a serving engine: a pooled keep-alive client, bounded retries, the completion stream.

A request is retried (with exponential backoff and jitter, a bounded number of times) only
while nothing of its reply has arrived: a refused or dropped connection, or a 5xx status. Once
the server has answered 200 and started streaming, a failure is final, since the tokens already
shown to the player cannot be taken back. Every failure becomes a `ServedModelError` carrying
the server's own message, which the engine reports as 4001.
"""

from __future__ import annotations

import asyncio
import json
import random
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from httpx_sse import EventSource, SSEError

from .errors import ServedModelError

#: Statuses worth another try: the server (or a proxy in front of it) is busy or restarting.
_RETRY_STATUSES = frozenset({500, 502, 503, 504})

_T = TypeVar("_T")


class _Retryable(ServedModelError):
    """A failure before any of the reply arrived: the request may be sent again."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One event of a completion stream."""

    text: str
    finish_reason: str | None = None
    #: OpenAI `usage` (`prompt_tokens`, `completion_tokens`), when the server reports it.
    usage: Mapping[str, Any] | None = None
    #: llama.cpp's `timings` (`prompt_n`: prompt tokens evaluated, i.e. not reused).
    timings: Mapping[str, Any] | None = None
    #: The choice's OpenAI `logprobs` (`tokens`, `token_logprobs`, `top_logprobs`), when asked.
    logprobs: Mapping[str, Any] | None = None


def _clip(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "..."


def server_message(body: bytes | str) -> str:
    """The human part of an error body: OpenAI's `error.message`, FastAPI's `detail`, or the
    text itself."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        return _clip(text) or "(empty body)"
    if isinstance(data, Mapping):
        error = data.get("error", data.get("detail"))
        if isinstance(error, Mapping):
            error = error.get("message", error)
        if error is not None:
            return _clip(error if isinstance(error, str) else json.dumps(error))
    return _clip(text)


class Transport:
    """The HTTP side of a served model: one pooled `httpx.AsyncClient` per event loop."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None,
        retries: int,
        connect_timeout: float,
        read_timeout: float | None,
        max_connections: int,
    ) -> None:
        if not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be an int >= 0, got {retries!r}")
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        # A generation may take long between tokens (a queue at the server): the node's
        # timeout_ms bounds it, the read timeout only catches a server that went silent.
        self._timeout = httpx.Timeout(connect_timeout, read=read_timeout, pool=None)
        self._limits = httpx.Limits(
            max_connections=max_connections, max_keepalive_connections=max_connections
        )
        # An AsyncClient's connections belong to the loop that opened them; each engine loop
        # gets its own, dropped with the loop.
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._clients = weakref.WeakKeyDictionary()

    def client(self) -> httpx.AsyncClient:
        """The running loop's client (made on first use)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(
                base_url=self.base_url,
                headers=self._headers,
                timeout=self._timeout,
                limits=self._limits,
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the running loop's client (its pooled connections)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def _with_retries(
        self, send: Callable[[], Awaitable[_T]], retries: int | None = None
    ) -> _T:
        """`send()`, sent again after a `_Retryable` failure, at most `retries` (default: the
        transport's) more times.

        Written out rather than taken from tenacity: its retry state is thread-local, and the
        engine's loop may be driven by whichever thread is waiting on it.
        """
        retries = self.retries if retries is None else retries
        for attempt in range(retries + 1):
            try:
                return await send()
            except _Retryable:
                if attempt == retries:
                    raise
            # Up to 50 ms, 100 ms, 200 ms … 1 s ("full jitter", so that many agents cut off at
            # once do not come back in step).
            await asyncio.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))
        raise AssertionError("unreachable")  # pragma: no cover

    def _failure(self, path: str, exc: httpx.HTTPError) -> ServedModelError:
        what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        attempts = f" ({self.retries + 1} attempts)" if self.retries else ""
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return _Retryable(f"cannot connect to {self.base_url}{attempts}: {what}")
        if isinstance(exc, httpx.TransportError):
            # No byte of the reply yet (e.g. a pooled connection the server had closed).
            return _Retryable(f"{self.base_url}{path} failed before replying{attempts}: {what}")
        return ServedModelError(f"{self.base_url}{path}: {what}")

    async def _status_error(self, path: str, response: httpx.Response) -> ServedModelError:
        message = server_message(await response.aread())
        error = _Retryable if response.status_code in _RETRY_STATUSES else ServedModelError
        return error(f"{self.base_url}{path} answered {response.status_code}: {message}")

    async def get_json(
        self, path: str, body: Mapping[str, Any] | None = None, *, retries: int | None = None
    ) -> Any:
        """GET `path` (POST `body` to it, if given) as JSON, retried (at most `retries` more
        times, default the transport's); None if the server has no such endpoint (404)."""

        async def send() -> Any:
            try:
                if body is None:
                    response = await self.client().get(path)
                else:
                    response = await self.client().post(path, json=body)
            except httpx.HTTPError as exc:
                raise self._failure(path, exc) from exc
            if response.status_code == 404:
                return None
            if response.status_code != 200:
                raise await self._status_error(path, response)
            return response.json()

        return await self._with_retries(send, retries)

    def get_json_blocking(self, path: str) -> Any:
        """GET `path` as JSON once, blocking (for checks made outside any loop's coroutine);
        None on 404."""
        try:
            with httpx.Client(
                base_url=self.base_url, headers=self._headers, timeout=self._timeout
            ) as client:
                response = client.get(path)
        except httpx.HTTPError as exc:
            raise ServedModelError(str(self._failure(path, exc))) from exc
        if response.status_code == 404:
            return None
        if response.status_code != 200:
            raise ServedModelError(
                f"{self.base_url}{path} answered {response.status_code}: "
                f"{server_message(response.content)}"
            )
        return response.json()

    def post_blocking(
        self, path: str, body: Mapping[str, Any], *, timeout: float | None = None
    ) -> tuple[int, Any, str]:
        """POST `body` to `path` once, blocking, whatever the status: the status, the JSON reply
        (None if it is not JSON) and, unless the status is 200, the server's message.
        `ServedModelError` only if no reply came (within `timeout` seconds, if given)."""
        limit = self._timeout if timeout is None else httpx.Timeout(timeout)
        try:
            with httpx.Client(
                base_url=self.base_url, headers=self._headers, timeout=limit
            ) as client:
                response = client.post(path, json=body)
        except httpx.HTTPError as exc:
            raise ServedModelError(str(self._failure(path, exc))) from exc
        message = "" if response.status_code == 200 else server_message(response.content)
        try:
            return response.status_code, response.json(), message
        except ValueError:
            return response.status_code, None, message

    async def _open(self, path: str, body: Mapping[str, Any]) -> httpx.Response:
        client = self.client()

        async def send() -> httpx.Response:
            request = client.build_request("POST", path, json=body)
            try:
                response = await client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise self._failure(path, exc) from exc
            if response.status_code != 200:
                try:
                    raise await self._status_error(path, response)
                finally:
                    await response.aclose()
            return response

        return await self._with_retries(send)

    @asynccontextmanager
    async def stream(
        self, path: str, body: Mapping[str, Any]
    ) -> AsyncIterator[AsyncIterator[Chunk]]:
        """POST `body` and read the reply as a stream of `Chunk`s; leaving the block (a
        cancelled task included) closes the connection, which stops the server's generation."""
        response = await self._open(path, body)
        chunks = _chunks(f"{self.base_url}{path}", response)
        try:
            yield chunks
        finally:
            await chunks.aclose()
            await response.aclose()


async def _chunks(url: str, response: httpx.Response) -> AsyncGenerator[Chunk, None]:
    finished = done = False
    # Closed explicitly, and read to its end after [DONE]: an async generator (httpx's reader
    # chain under this one) left suspended is finalized by a task on the loop, which may be
    # gone by then.
    events = EventSource(response).aiter_sse()
    try:
        async for event in events:
            data = event.data
            if done or not data:
                continue
            if data == "[DONE]":
                if not finished:
                    # llama-cpp-python ends a stream this way when another request interrupts
                    # it (its server's --interrupt_requests, on by default).
                    raise ServedModelError(f"{url}: the server ended the reply before it was done")
                done = True
                continue
            chunk = _parse_event(url, data)
            finished = finished or chunk.finish_reason is not None
            yield chunk
    except SSEError as exc:
        raise ServedModelError(f"{url}: not an event stream: {exc}") from exc
    except httpx.HTTPError as exc:
        raise ServedModelError(
            f"{url}: the stream broke off mid-reply: {type(exc).__name__}: {exc}"
        ) from exc
    finally:
        await events.aclose()
    if not done:
        raise ServedModelError(f"{url}: the stream ended without [DONE] (the server failed)")


def _parse_event(url: str, data: str) -> Chunk:
    try:
        payload = json.loads(data)
    except ValueError:
        payload = None
    if not isinstance(payload, Mapping):
        raise ServedModelError(f"{url}: malformed stream event: {_clip(data)}")
    if "error" in payload:
        raise ServedModelError(f"{url}: the server failed mid-reply: {server_message(data)}")
    choices = payload.get("choices") or []
    choice = choices[0] if choices else {}
    text = choice.get("text", "") if isinstance(choice, Mapping) else None
    if not isinstance(text, str):
        raise ServedModelError(f"{url}: malformed stream event: {_clip(data)}")
    usage = payload.get("usage")
    timings = payload.get("timings")
    logprobs = choice.get("logprobs") if isinstance(choice, Mapping) else None
    return Chunk(
        text,
        choice.get("finish_reason") if isinstance(choice, Mapping) else None,
        usage if isinstance(usage, Mapping) else None,
        timings if isinstance(timings, Mapping) else None,
        logprobs if isinstance(logprobs, Mapping) else None,
    )
