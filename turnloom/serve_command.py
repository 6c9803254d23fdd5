"""`turnloom serve`: an engine served over the wire until SIGINT / SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import ssl
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

from .engine.durable.store import SHARED_SCHEMES, Store, open_store
from .engine.durable.store.base import LEASE_S
from .engine.inference.mock import MockModel
from .engine.inference.mock_script import MockScript
from .host.aio import AsyncEngine
from .protocol.frames import PROTOCOL_VERSION
from .server import Server, ServerLimits, is_loopback
from .server.auth import ENV_VAR, AuthKey, key_from_env, load_key_file
from .server.tls import TLSFileError, server_context

if TYPE_CHECKING:
    from .telemetry.endpoint import MetricsEndpoint

#: The line `serve` prints on stdout once it accepts connections: the one thing it prints, so
#: a client or test that starts it reads this line to learn the address (`--port 0`).
READY_LINE = "turnloom: protocol v{version} on {host}:{port}"

#: The lines that announce the inspector page and the metrics endpoint (after `READY_LINE`).
PAGE_LINE = "turnloom: inspector on {url}"
METRICS_LINE = "turnloom: metrics on {url}"

#: The option that names each TLS file (`TLSFileError.role`), for the command line's errors.
TLS_FLAGS = {"cert": "--tls-cert", "key": "--tls-key", "client_ca": "--tls-client-ca"}


def serve(
    host: str,
    port: int,
    limits: ServerLimits,
    *,
    mock: bool | MockScript = False,
    tls: ssl.SSLContext | None = None,
    auth_key: AuthKey | None = None,
    store: str | None = None,
    lease_ms: int | None = None,
    inspect_at: tuple[str, int] | None = None,
    metrics_at: tuple[str, int] | None = None,
) -> int:
    """Serve an engine over the wire until SIGINT / SIGTERM (the default models, or only the
    scripted mock model named 'mock', or the mock models of a `MockScript` playing it), over
    TLS with `tls`, requiring `auth_key` if given,
    writing durable agents to `store` (a path, whose agents are restored first, or a
    redis:// URL shared with other workers, holding each agent for `lease_ms` past this
    worker's last sign of life); print `READY_LINE` once listening. `inspect_at` and
    `metrics_at` ((host, port)) also serve the inspector page and a Prometheus endpoint, each
    announced on a line of its own after the ready line (`PAGE_LINE`, `METRICS_LINE`)."""

    try:
        if store is not None and store.startswith(SHARED_SCHEMES):
            from .engine.durable.store.redis import RedisStore

            lease_s = LEASE_S if lease_ms is None else lease_ms / 1000
            opened: Store | None = RedisStore.from_url(store, lease_s=lease_s)
        else:
            opened = None if store is None else open_store(store)
    except (
        Exception
    ) as error:  # say why, no traceback (and not the spec: a URL may hold a password)
        print(f"turnloom: cannot open the store: {error}", file=sys.stderr)
        return 1

    async def run() -> None:
        # The handlers go in before anything else, so a signal that comes at any moment from
        # here on (the ready line tells a client it may send one) sets `stop`. Installed later,
        # a SIGINT just after the ready line was lost where SIGINT was inherited ignored (a
        # background job of a script), and the server never stopped.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
                loop.add_signal_handler(sig, stop.set)
        # A shared store's agents are loaded where a session attaches them, not all at start.
        shared = opened is not None and opened.shared
        if isinstance(mock, MockScript):
            models: list[MockModel] | None = list(mock.models())
        else:
            models = [MockModel("mock")] if mock else None
        engine = AsyncEngine(models, store=opened, load_stored=not shared)
        server = Server(engine, limits=limits, ssl=tls, auth_key=auth_key)
        endpoint: MetricsEndpoint | None = None
        try:
            await server.start(host, port)
            bound_host, bound_port = server.address
            ready = READY_LINE.format(version=PROTOCOL_VERSION, host=bound_host, port=bound_port)
            print(ready, flush=True)
            endpoint = await _observe(engine, server, inspect_at, metrics_at, tls, auth_key)
            await stop.wait()
        finally:
            if endpoint is not None:
                await endpoint.close()
            await server.close()
            await engine.aclose()  # stored agents stay stored, as last written

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run())
    except OSError as error:  # the address is taken or not ours: say so, no traceback
        print(
            f"turnloom: cannot serve on {host}:{port}: {error.strerror or error}", file=sys.stderr
        )
        return 1
    return 0


async def _observe(
    engine: AsyncEngine,
    server: Server,
    inspect_at: tuple[str, int] | None,
    metrics_at: tuple[str, int] | None,
    tls: ssl.SSLContext | None,
    auth_key: AuthKey | None,
) -> MetricsEndpoint | None:
    """Start the inspector and the metrics endpoint asked for (their exposure was checked with
    the command line); the metrics endpoint, to close at the end (the engine closes the page)."""
    if inspect_at is not None:
        host, port = inspect_at
        page = await engine.inspect(port, host, ssl=tls, auth_key=auth_key, insecure=True)
        print(PAGE_LINE.format(url=page.url), flush=True)
    if metrics_at is None:
        return None
    from .telemetry.endpoint import MetricsEndpoint

    metrics = engine.metrics()
    metrics.count_sessions(lambda: len(server.sessions))
    endpoint = MetricsEndpoint(metrics, ssl=tls, auth_key=auth_key)
    await endpoint.start(*metrics_at)
    print(METRICS_LINE.format(url=endpoint.url), flush=True)
    return endpoint


def endpoint_of(text: str) -> tuple[str, int]:
    """`[HOST:]PORT` as (host, port): loopback when no host is given (ValueError if bad)."""
    host, _, port = text.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    number = int(port)
    if not 0 <= number <= 65535:
        raise ValueError(f"{number} is not a port")
    return host, number


def check_endpoints(
    args: argparse.Namespace,
    tls: ssl.SSLContext | None,
    key: AuthKey | None,
    fail: Callable[[str], NoReturn],
) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The --inspect and --metrics endpoints, held to the wire server's rule: beyond loopback
    only with TLS and an auth key, or --insecure."""
    found: list[tuple[str, int] | None] = []
    for flag, text in (("--inspect", args.inspect), ("--metrics", args.metrics)):
        if text is None:
            found.append(None)
            continue
        try:
            host, port = endpoint_of(text)
        except ValueError:
            fail(f"{flag} takes [HOST:]PORT, got {text!r}")
        if not is_loopback(host) and (tls is None or key is None) and not args.insecure:
            fail(
                f"refusing {flag} on {host} without TLS (--tls-cert/--tls-key) and an auth key "
                f"(--auth-key-file or {ENV_VAR}): anyone who can reach it could watch (and, on "
                "the inspector, drive) every agent. Add them, bind loopback, or pass --insecure."
            )
        found.append((host, port))
    return found[0], found[1]


def security_of(
    args: argparse.Namespace, fail: Callable[[str], NoReturn]
) -> tuple[ssl.SSLContext | None, AuthKey | None]:
    """The TLS context and auth key the serve options ask for; `fail` reports a bad option.

    Binding a non-loopback address without both is refused unless `--insecure` is given, and
    then warned about loudly: it would let anyone on the network read or drive the engine."""
    if (args.tls_cert is None) != (args.tls_key is None):
        fail("--tls-cert and --tls-key go together")
    if args.tls_client_ca is not None and args.tls_cert is None:
        fail("--tls-client-ca needs --tls-cert and --tls-key (mutual TLS is TLS first)")
    context = None
    if args.tls_cert is not None:
        try:
            context = server_context(args.tls_cert, args.tls_key, args.tls_client_ca)
        except TLSFileError as error:
            fail(f"cannot load {TLS_FLAGS[error.role]} {error.path!r}: {error.reason}")
        except (OSError, ssl.SSLError) as error:  # not the files: OpenSSL itself, say
            fail(f"cannot set up TLS: {error}")
    try:
        key = load_key_file(args.auth_key_file) if args.auth_key_file else key_from_env()
    except OSError as error:
        fail(f"--auth-key-file: cannot read it: {error.strerror or error}")
    except ValueError as error:
        fail(str(error))
    if not is_loopback(args.host) and (context is None or key is None):
        missing = " and ".join(
            what
            for what, absent in (
                ("TLS (--tls-cert/--tls-key)", context is None),
                (f"an auth key (--auth-key-file or {ENV_VAR})", key is None),
            )
            if absent
        )
        if not args.insecure:
            fail(
                f"refusing to serve on {args.host} without {missing}: anyone who can reach "
                "the port could read the traffic or use the engine. Add them, bind loopback "
                "behind your own TLS terminator, or pass --insecure to serve anyway."
            )
        exposed = [
            *(["read and alter every message, the auth key included"] if context is None else []),
            *(["create agents and spend this machine's inference"] if key is None else []),
        ]
        print(
            f"turnloom: WARNING: --insecure: serving on {args.host} without {missing}. "
            f"Anyone who can reach this port can {' and '.join(exposed)}.",
            file=sys.stderr,
            flush=True,
        )
    return context, key
