"""A game talking to turnloom over TCP: a client of `python -m turnloom serve`.

Shows: `tl.connect(host, port)` in place of `tl.Engine(...)`, the only change; the same agents,
pauses, param changes and refusals over the wire; `list_models()` to see what the server
offers.

Start a server in one terminal, then run the client in another:

    python -m turnloom serve --mock            # the scripted mock model, on 127.0.0.1:7411
    python examples/wire_client.py             # or: examples/wire_client.py HOST PORT

`serve --mock` serves one scripted model, `mock`, that echoes the player (`You said: ...`);
against a server of real models, name one of them with `--model`.
"""

from __future__ import annotations

import argparse

import turnloom as tl


def graph(model_name: str) -> tl.GraphDescription:
    """listen (pause) -> answer: the same graph as an embedded game would use."""
    return (
        tl.GraphDescription()
        .add_node("listen", tl.PauseParams(default_exit="answer"))
        .add_node("answer", tl.GenerateParams(system_prompt="You are Mira, a shopkeeper."))
        .set_start_node("listen")
        .set_default_model_name(model_name)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("host", nargs="?", default="127.0.0.1")
    parser.add_argument("port", nargs="?", type=int, default=7411)
    parser.add_argument("--model", default="mock", help="the model the graph names")
    args = parser.parse_args(argv)

    with tl.connect(args.host, args.port) as engine:
        names = [model.name for model in engine.list_models()]
        print(f"connected to {args.host}:{args.port}; models: {', '.join(names)}")
        agent = engine.create_agent(graph(args.model))

        step = agent.send_message("Do you sell swords?")
        assert step.pause is not None
        print(f"  [paused at {step.pause.node_name!r} on the server]")
        agent.change_params("answer", {"system_prompt": "You are Mira. Be brief."})
        result = agent.resume().final
        print(f"Mira: {result.text}   ({result.status.value})")

        try:
            agent.resume()  # nothing is paused now: refused, and nothing changes
        except tl.AgentNotPaused as error:
            print(f"  [refused as expected: {int(error.code)} {type(error).__name__}]")
        agent.destroy()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
