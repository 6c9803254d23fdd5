"""Command line: `python -m turnloom demo | diagrams`."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

import structlog

from .engine.graph import GraphDescription
from .engine.graph_diagram import draw_graph
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


def main(argv: list[str] | None = None) -> int:
    """Entry point of `python -m turnloom`."""
    parser = argparse.ArgumentParser(prog="turnloom", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("demo", help="play the shopkeeper demo")
    diagrams = sub.add_parser("diagrams", help="write the state diagrams, or draw a graph")
    diagrams.add_argument("--out", type=Path, default=DIAGRAMS_DIR)
    diagrams.add_argument("--graph", help="module:attr of a GraphDescription to print instead")
    diagrams.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    args = parser.parse_args(argv)

    if args.command == "demo":
        from .demo import run_demo

        _quiet_logs()
        run_demo(print)
    elif args.command == "diagrams":
        if args.graph:
            sys.stdout.write(draw_graph(_load_graph(args.graph), args.format))
        else:
            for path in write_diagrams(args.out):
                print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
