"""`turnloom serve`: an engine served over the wire until SIGINT / SIGTERM."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import ssl
import sys
from collections.abc import Callable
from typing import NoReturn

from .engine.durable.store import SHARED_SCHEMES, Store, open_store
from .engine.durable.store.base import LEASE_S
from .engine.inference.mock import MockModel
from .engine.inference.mock_script import MockScript
from .host.aio import AsyncEngine
from .protocol.frames import PROTOCOL_VERSION
from .server import Server, ServerLimits, is_loopback
from .server.auth import ENV_VAR, AuthKey, key_from_env, load_key_file
from .server.tls import TLSFileError, server_context

#: The line `serve` prints on stdout once it accepts connections: the one thing it prints, so
#: a client or test that starts it reads this line to learn the address (`--port 0`).
READY_LINE = "turnloom: protocol v{version} on {host}:{port}"

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
) -> int:
    """Serve an engine over the wire until SIGINT / SIGTERM (the default models, or only the
    scripted mock model named 'mock', or the mock models of a `MockScript` playing it), over
    TLS with `tls`, requiring `auth_key` if given,
    writing durable agents to `store` (a path, whose agents are restored first, or a
    redis:// URL shared with other workers, holding each agent for `lease_ms` past this
    worker's last sign of life); print `READY_LINE` once listening."""

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
        try:
            await server.start(host, port)
            bound_host, bound_port = server.address
            ready = READY_LINE.format(version=PROTOCOL_VERSION, host=bound_host, port=bound_port)
            print(ready, flush=True)
            await stop.wait()
        finally:
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
