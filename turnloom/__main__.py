"""Command line: `python -m turnloom demo | diagrams | serve`."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import logging
import signal
import sys
from pathlib import Path

import structlog

from .engine.backends.mock import MockModel
from .engine.graph import GraphDescription
from .engine.graph_diagram import draw_graph
from .host.aio import AsyncEngine
from .protocol.frames import DEFAULT_HOST, DEFAULT_PORT, PROTOCOL_VERSION
from .server import Server, ServerLimits
from .states.diagrams import turn_machine_dot, turn_machine_mermaid

DIAGRAMS_DIR = Path("diagrams")


def _quiet_logs(level: int = logging.WARNING) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(level))


def write_diagrams(out: Path) -> list[Path]:
    """Write the turn machine (and the demo graph) as Mermaid and DOT into `out`."""
    from .demo import shop_graph

    out.mkdir(parents=True, exist_ok=True)
    files = {
        "turn_machine.mmd": turn_machine_mermaid(),
        "turn_machine.dot": turn_machine_dot(),
        "demo_graph.mmd": draw_graph(shop_graph("model"), "mermaid"),
        "demo_graph.dot": draw_graph(shop_graph("model"), "dot"),
    }
    written = []
    for name, text in files.items():
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _load_graph(spec: str) -> GraphDescription:
    module_name, _, attr = spec.partition(":")
    obj = getattr(importlib.import_module(module_name), attr)
    graph = obj() if callable(obj) else obj
    if not isinstance(graph, GraphDescription):
        raise SystemExit(f"{spec} is not a GraphDescription (or a function returning one)")
    return graph


def serve(host: str, port: int, limits: ServerLimits, *, mock: bool = False) -> int:
    """Serve an engine over the wire until SIGINT / SIGTERM (the default models, or only the
    scripted mock model named 'mock')."""

    async def run() -> None:
        server = Server(AsyncEngine(MockModel("mock") if mock else None), limits=limits)
        await server.start(host, port)
        bound_host, bound_port = server.address
        print(f"turnloom: protocol v{PROTOCOL_VERSION} on {bound_host}:{bound_port}", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows
                loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
        finally:
            await server.close()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m turnloom`."""
    parser = argparse.ArgumentParser(prog="turnloom", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="play the shopkeeper demo")
    diagrams = sub.add_parser("diagrams", help="write the state diagrams, or draw a graph")
    diagrams.add_argument("--out", type=Path, default=DIAGRAMS_DIR)
    diagrams.add_argument("--graph", help="module:attr of a GraphDescription to print instead")
    diagrams.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    served = sub.add_parser("serve", help="serve the engine over the msgpack wire protocol")
    served.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help="address to bind (default loopback; any other address exposes the engine)",
    )
    served.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    defaults = ServerLimits()
    served.add_argument("--max-sessions", type=int, default=defaults.max_sessions)
    served.add_argument(
        "--max-agents", type=int, default=defaults.max_agents_per_session, help="per session"
    )
    served.add_argument(
        "--mock", action="store_true", help="serve only the scripted mock model named 'mock'"
    )
    served.add_argument(
        "--log-level", choices=("debug", "info", "warning", "error"), default="info"
    )
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import run_demo

        _quiet_logs()
        run_demo(print)
    elif args.command == "serve":
        _quiet_logs(getattr(logging, args.log_level.upper()))
        limits = ServerLimits(
            max_sessions=args.max_sessions, max_agents_per_session=args.max_agents
        )
        return serve(args.host, args.port, limits, mock=args.mock)
    elif args.command == "diagrams":
        if args.graph:
            sys.stdout.write(draw_graph(_load_graph(args.graph), args.format))
        else:
            for path in write_diagrams(args.out):
                print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
