"""Decision quality of a ToolCall node on the embedded default model (Gemma 3 270M Q4_K_M).

A fixed set of 44 player lines for a small game (four tools with string, integer, boolean and
enum arguments): half call for one tool, half for none — and half of those mention the tools'
words ("the north door looks old") to catch a model that matches words rather than intent.
Each line runs in a fresh agent (DetectOnly, Notify, greedy, ``max_tokens`` 48) through the
public API, once per decision strategy and grammar mode: ``generate`` with the grammar off,
lazy and required (``LlamaModel.tool_grammar``), and ``score`` (which does not generate, so
the grammar mode does not apply), where ``ToolCallParams`` has a ``decision`` option.

For each, the table shows:

- **valid-or-clean**: outputs that are calls to declared tools with schema-valid arguments
  (exactly the declared names, values of the declared types, enum values in their set) or a
  clean no-call (nothing malformed, nothing rejected);
- **right decision**: call vs. no call as the line asked;
- **right tool**: the lines that need a tool, called with that tool (and only that one);
- **right tool + args**: ... and with the expected argument values;
- **ms/decision**: the ToolCall node's own duration, median over the lines.

The script checks its own work: every output is classified exactly once and the counts add up.
Run from the repository root: ``.venv/bin/python -m bench.toolcall_quality [--limit N]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as `python bench/toolcall_quality.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import logged_summary, print_table, quiet_logging

#: The enum argument's values (declared in its description, see `tool_decision`).
DIRECTIONS = ("north", "south", "east", "west")

#: (name, description, [(argument, type, description)])
TOOLS_SPEC: list[tuple[str, str, list[tuple[str, str, str]]]] = [
    ("open_door", "Open or unlock a door.", [("door", "string", "Which door, e.g. 'north'.")]),
    (
        "give_item",
        "Give the player some items.",
        [("item", "string", "The item, e.g. 'apple'."), ("count", "integer", "How many.")],
    ),
    ("set_torch", "Light the torch or put it out.", [("lit", "boolean", "true to light it.")]),
    (
        "move",
        "Walk the party in a direction.",
        [("direction", "string", "Where to go, one of: " + ", ".join(DIRECTIONS) + ".")],
    ),
]

#: Argument types for the schema check; the enum's set is checked on top.
ENUMS: dict[tuple[str, str], tuple[str, ...]] = {("move", "direction"): DIRECTIONS}


@dataclass(frozen=True)
class Case:
    """A player line and what it calls for: a tool and the accepted values of each argument
    (None: no tool)."""

    line: str
    tool: str | None = None
    arguments: dict[str, tuple[Any, ...]] = field(default_factory=dict)


def _call(line: str, tool: str, **arguments: Any) -> Case:
    accepted = {k: v if isinstance(v, tuple) else (v,) for k, v in arguments.items()}
    return Case(line, tool, accepted)


CASES: list[Case] = [
    # --- lines that call for a tool (22) ---
    _call("Open the north door.", "open_door", door=("north", "north door")),
    _call("Could you unlock the cellar door for me?", "open_door", door=("cellar", "cellar door")),
    _call("Please open the iron gate.", "open_door", door=("iron gate", "gate")),
    _call("Let me through the red door.", "open_door", door=("red", "red door")),
    _call("Open the kitchen door, quick!", "open_door", door=("kitchen", "kitchen door")),
    _call("Unlock the tower door.", "open_door", door=("tower", "tower door")),
    _call("Give me three apples.", "give_item", item=("apples", "apple"), count=3),
    _call("Hand me 2 torches, please.", "give_item", item=("torches", "torch"), count=2),
    _call("I'll take one sword.", "give_item", item=("sword", "swords"), count=1),
    _call("Give me 5 arrows.", "give_item", item=("arrows", "arrow"), count=5),
    _call("Can I have four potions?", "give_item", item=("potions", "potion"), count=4),
    _call("Light the torch.", "set_torch", lit=True),
    _call("Put out the torch.", "set_torch", lit=False),
    _call("Blow out the torch, it is too bright.", "set_torch", lit=False),
    _call("Light your torch, it's dark in here.", "set_torch", lit=True),
    _call("Extinguish the torch now.", "set_torch", lit=False),
    _call("Walk north.", "move", direction="north"),
    _call("Let's head east.", "move", direction="east"),
    _call("Go south to the river.", "move", direction="south"),
    _call("Move west, away from the wolves.", "move", direction="west"),
    _call("Take me north to the village.", "move", direction="north"),
    _call("Run east!", "move", direction="east"),
    # --- lines that call for none (22): plain talk ---
    Case("Hello there!"),
    Case("How are you today?"),
    Case("What is your name?"),
    Case("Tell me a story about the old castle."),
    Case("Thank you, friend."),
    Case("What do you think of the king?"),
    Case("I like your hat."),
    Case("Goodbye for now."),
    Case("Who built this tavern?"),
    Case("Is it going to rain tomorrow?"),
    # --- ... and adversarial talk that mentions the tools' words ---
    Case("The north door looks old, doesn't it?"),
    Case("Who gave you that sword?"),
    Case("I love the smell of a torch burning."),
    Case("Why is the cellar door always locked?"),
    Case("My father never gave me anything."),
    Case("Which way is north, anyway?"),
    Case("That torch of yours is very bright."),
    Case("Doors in this town are painted red."),
    Case("Do you ever walk east of the river?"),
    Case("I once had three apples and a sword."),
    Case("Don't open anything, just talk to me."),
    Case("What happens if someone lights a torch in the library?"),
]

_TYPE_CHECKS = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
}

#: The classes an output falls in; each output is in exactly one.
CLASSES = ("call_right_args", "call_right_tool", "call_wrong_tool", "call_invalid", "none_clean",
           "none_unclean")  # fmt: skip


def _norm(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = re.sub(r"[^\w ]", "", value.lower()).strip()
    return re.sub(r"^(the|a|an|some|my|your) ", "", text)


def _schema_valid(tool: str, arguments: dict[str, Any]) -> bool:
    declared = {name: typ for t, _, params in TOOLS_SPEC if t == tool for name, typ, _ in params}
    if set(arguments) != set(declared):
        return False
    for name, value in arguments.items():
        if not _TYPE_CHECKS[declared[name]](value):
            return False
        allowed = ENUMS.get((tool, name))
        if allowed is not None and value not in allowed:
            return False
    return True


def classify(case: Case, diagnostics: dict[str, Any]) -> str:
    """The one class of an output (see `CLASSES`), from the node's diagnostics."""
    calls = diagnostics["detected_calls"]
    if not calls:
        unclean = diagnostics["malformed_calls"] or diagnostics["rejected_calls"]
        return "none_unclean" if unclean else "none_clean"
    if not all(_schema_valid(c["tool_name"], c["arguments"]) for c in calls):
        return "call_invalid"
    if len(calls) != 1 or calls[0]["tool_name"] != case.tool:
        return "call_wrong_tool"
    arguments = calls[0]["arguments"]
    right = all(
        _norm(arguments.get(name)) in {_norm(v) for v in accepted}
        for name, accepted in case.arguments.items()
    )
    return "call_right_args" if right else "call_right_tool"


@dataclass
class Run:
    """One strategy and grammar mode over the cases."""

    label: str
    classes: list[str] = field(default_factory=list)
    millis: list[float] = field(default_factory=list)

    def row(self, cases: list[Case]) -> list[object]:
        assert len(self.classes) == len(cases), "every case gets exactly one class"
        assert all(c in CLASSES for c in self.classes)
        counts = {c: self.classes.count(c) for c in CLASSES}
        assert sum(counts.values()) == len(cases), "the classes add up to the cases"
        valid = len(cases) - counts["call_invalid"] - counts["none_unclean"]
        need = [i for i, case in enumerate(cases) if case.tool is not None]
        decided = sum(
            (self.classes[i].startswith("call") and self.classes[i] != "call_invalid")
            == (case.tool is not None)
            for i, case in enumerate(cases)
        )
        right_tool = sum(self.classes[i] in ("call_right_args", "call_right_tool") for i in need)
        right_args = sum(self.classes[i] == "call_right_args" for i in need)
        assert right_args <= right_tool <= len(need)
        assert counts["call_right_args"] + counts["call_right_tool"] == right_tool, (
            "a right tool is only counted on a line that needs it"
        )

        def pct(n: int, of: int) -> str:
            return f"{100 * n / of:.0f}% ({n}/{of})" if of else "-"

        return [
            self.label,
            pct(valid, len(cases)),
            pct(decided, len(cases)),
            pct(right_tool, len(need)),
            pct(right_args, len(need)),
            f"{statistics.median(self.millis):.0f}",
        ]


def _graph(tl: Any, decision: str | None) -> Any:
    tools = [
        tl.ToolDefinition(name, desc, [tl.ToolParamDefinition(*p) for p in params])
        for name, desc, params in TOOLS_SPEC
    ]
    options: dict[str, Any] = {} if decision is None else {"decision": decision}
    node = tl.ToolCallParams(
        tools=tools,
        disposition=tl.ToolCallDisposition.Notify,
        mode=tl.ToolCallMode.DetectOnly,
        sampling=tl.SamplingParams(temperature=0.0, max_tokens=48),
        **options,
    )
    return (
        tl.GraphDescription()
        .add_node("act", node)
        .set_start_node("act")
        .set_default_model_name("m")
    )


def run(tl: Any, engine: Any, model: Any, label: str, decision: str | None, grammar: str,
        cases: list[Case], verbose: bool) -> Run:  # fmt: skip
    """Every case once in a fresh agent; the class and the node's duration of each."""
    model.tool_grammar = tl.models.ToolGrammar(grammar)
    graph = _graph(tl, decision)
    result = Run(label)
    for case in cases:
        agent = engine.create_agent(graph, enable_diagnostics=True)
        try:
            debug = agent.send_message(case.line).final.debug_info
        finally:
            agent.destroy()
        (node,) = debug["nodes"]
        cls = classify(case, node["diagnostics"])
        result.classes.append(cls)
        result.millis.append(node["duration_s"] * 1000)
        if verbose:
            calls = [
                (c["tool_name"], c["arguments"]) for c in node["diagnostics"]["detected_calls"]
            ]
            print(f"  {label:<18} {cls:<16} {case.line!r} -> {calls}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--limit", type=int, default=0, help="only the first N tool and no-tool lines each"
    )
    parser.add_argument("--verbose", action="store_true", help="print every output")
    parser.add_argument("--only", default="", help="comma-separated labels to run (e.g. 'score')")
    args = parser.parse_args()
    quiet_logging()
    import turnloom as tl

    cases = CASES
    if args.limit:
        calls = [c for c in CASES if c.tool][: args.limit]
        cases = calls + [c for c in CASES if not c.tool][: args.limit]
    tools_used = {c.tool for c in cases if c.tool}
    need = sum(bool(c.tool) for c in cases)
    print(f"{len(cases)} player lines ({need} need one of {len(tools_used)} tools), "
          f"model {tl.models.DEFAULT_MODEL}, greedy, max_tokens 48")  # fmt: skip

    variants: list[tuple[str, str | None, str]] = [
        (f"generate/{g}", "generate", g) for g in ("off", "lazy", "required")
    ]
    has_decision = "decision" in {f.name for f in dataclasses.fields(tl.ToolCallParams)}
    if has_decision:
        variants.append(("score", "score", "required"))
    else:
        variants = [(label, None, g) for label, _, g in variants]
        print("(ToolCallParams has no 'decision' option here: generate only)")
    if args.only:
        wanted = set(args.only.split(","))
        variants = [v for v in variants if v[0] in wanted]

    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="m", n_ctx=2048).load()
    rows = []
    started = time.perf_counter()
    with tl.Engine(model) as engine:
        # One untimed turn first: the first decode of a fresh context is slower.
        run(tl, engine, model, "warm-up", variants[0][1], variants[0][2], cases[:1], False)
        for label, decision, grammar in variants:
            rows.append(
                run(tl, engine, model, label, decision, grammar, cases, args.verbose).row(cases)
            )
    model.close()
    print()
    print_table(
        ["strategy/grammar", "valid-or-clean", "right decision", "right tool", "right tool + args",
         "ms/decision"],
        rows,
    )  # fmt: skip
    print(f"\n{len(rows)} variants x {len(cases)} lines in {time.perf_counter() - started:.0f} s; "
          "every output classified once, counts checked")  # fmt: skip
    print(logged_summary())


if __name__ == "__main__":
    main()
