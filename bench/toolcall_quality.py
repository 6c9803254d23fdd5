"""Decision quality of a ToolCall node on the embedded default model (Gemma 3 270M Q4_K_M).

Fixed sets of player lines (`bench.toolcall_sets`: a game, a shop and a held-out crafting
domain, each with its own tools of string, integer, boolean and enum arguments), about half of
each calling for one tool and the rest for none, many of those mentioning the tools' words.
Each line runs in a fresh agent (DetectOnly, Notify, greedy, ``max_tokens`` 48) through the
public API, once per decision strategy and grammar mode: ``generate`` with the grammar off,
lazy and required (``LlamaModel.tool_grammar``), and ``score`` (which does not generate, so
the grammar mode does not apply), where ``ToolCallParams`` has a ``decision`` option.

For each, the table shows:

- **valid-or-clean**: outputs that are calls to declared tools with schema-valid arguments
  (exactly the declared names, values of the declared types, and for a string whose
  description lists its values as ``one of: ...``, one of those) or a clean no-call (nothing
  malformed, nothing rejected);
- **right decision**: call vs. no call as the line asked;
- **right tool**: the lines that need a tool, called with that tool (and only that one);
- **right tool + args**: ... and with the expected argument values;
- **ms/decision**: the ToolCall node's own duration, median over the lines.

A second table splits the arguments of the calls that chose the right tool by kind (enum,
integer, boolean, free-text string): how many of each came out as the line asked, per set and
over all the sets run, so a miss in "right tool + args" shows which kind of argument it was.

The script checks its own work: every output is classified exactly once and the counts add up.
The ``score`` decision's times are then taken again (``--rounds``, default 2 more passes)
with the sets interleaved, each line keeping its fastest time, and each six-tool set's median
is printed over the three-tool set's, with how many decisions a later pass made otherwise. A
set's lines are longer or shorter than the three-tool set's, and a decision's cost follows the
line, so each six-tool set's lines are also decided with only its first three tools (timed
alongside, in every pass): that ratio, the same lines with six tools over three, is what the
number of tools itself costs.
Run from the repository root: ``.venv/bin/python -m bench.toolcall_quality [--sets craft]
[--only score] [--limit N] [--rounds N] [--verbose]``.
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
from bench.toolcall_sets import SETS, Case, PromptSet

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


def _schema_valid(pset: PromptSet, tool: str, arguments: dict[str, Any]) -> bool:
    declared = {name: typ for t, _, params in pset.tools if t == tool for name, typ, _ in params}
    if set(arguments) != set(declared):
        return False
    for name, value in arguments.items():
        if not _TYPE_CHECKS[declared[name]](value):
            return False
        allowed = pset.enums.get((tool, name))
        if allowed is not None and value not in allowed:
            return False
    return True


#: The kinds of argument told apart in the arguments table, in its order.
KINDS = ("enum", "integer", "boolean", "string")


def kind_of(pset: PromptSet, tool: str, name: str) -> str:
    """What kind of argument `name` of `tool` is: "enum" (a string with declared values), or
    its declared type."""
    if (tool, name) in pset.enums:
        return "enum"
    (declared,) = [
        typ for t, _, params in pset.tools if t == tool for n, typ, _ in params if n == name
    ]
    return declared


def arguments_right(
    pset: PromptSet, case: Case, diagnostics: dict[str, Any]
) -> list[tuple[str, bool]]:
    """Of a call with the right tool (and only it), each expected argument's kind and whether
    its value is one of those accepted; nothing for any other output."""
    calls = diagnostics["detected_calls"]
    if len(calls) != 1 or calls[0]["tool_name"] != case.tool:
        return []
    given = calls[0]["arguments"]
    return [
        (kind_of(pset, case.tool, name), _norm(given.get(name)) in {_norm(v) for v in accepted})
        for name, accepted in case.arguments.items()
    ]


def classify(pset: PromptSet, case: Case, diagnostics: dict[str, Any]) -> str:
    """The one class of an output (see `CLASSES`), from the node's diagnostics."""
    calls = diagnostics["detected_calls"]
    if not calls:
        unclean = diagnostics["malformed_calls"] or diagnostics["rejected_calls"]
        return "none_unclean" if unclean else "none_clean"
    if not all(_schema_valid(pset, c["tool_name"], c["arguments"]) for c in calls):
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
    #: Each argument of the calls with the right tool: its kind and whether it was right.
    arguments: list[tuple[str, bool]] = field(default_factory=list)

    def by_kind(self) -> list[str]:
        """Right arguments of each kind (`KINDS`) over those the right-tool calls had."""
        return [_right_of(self.arguments, kind) for kind in KINDS]

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


def _param(tl: Any, pset: PromptSet, tool: str, spec: tuple[str, str, str]) -> Any:
    """A declared parameter, with its `enum` if the set lists its values."""
    return tl.ToolParamDefinition(*spec, enum=list(pset.enums.get((tool, spec[0]), ())))


def _graph(tl: Any, pset: PromptSet, decision: str | None) -> Any:
    tools = [
        tl.ToolDefinition(name, desc, [_param(tl, pset, name, p) for p in params])
        for name, desc, params in pset.tools
    ]
    options: dict[str, Any] = {} if decision is None else {"decision": decision}
    node = tl.ToolCallParams(
        tools=tools,
        disposition=tl.ToolCallDisposition.Notify,
        mode=tl.ToolCallMode.DetectOnly,
        system_prompt=pset.system_prompt,
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
        pset: PromptSet, cases: list[Case], verbose: bool) -> Run:  # fmt: skip
    """Every case once in a fresh agent; the class and the node's duration of each."""
    model.tool_grammar = tl.models.ToolGrammar(grammar)
    graph = _graph(tl, pset, decision)
    result = Run(label)
    for case in cases:
        agent = engine.create_agent(
            graph, enable_diagnostics=True, dialog=list(case.dialog) or None
        )
        try:
            debug = agent.send_message(case.line).final.debug_info
        finally:
            agent.destroy()
        (node,) = debug["nodes"]
        cls = classify(pset, case, node["diagnostics"])
        result.classes.append(cls)
        result.arguments += arguments_right(pset, case, node["diagnostics"])
        result.millis.append(node["duration_s"] * 1000)
        if verbose:
            calls = [
                (c["tool_name"], c["arguments"]) for c in node["diagnostics"]["detected_calls"]
            ]
            score = node["diagnostics"].get("score", {})
            print(f"  {label:<18} {cls:<16} {case.line!r} -> {calls} "
                  f"request={score.get('request')} margin={score.get('margin')}")  # fmt: skip
    return result


def _right_of(arguments: list[tuple[str, bool]], kind: str) -> str:
    """'right/all (percent)' of the arguments of `kind`, or '-' if there were none."""
    right = [ok for k, ok in arguments if k == kind]
    return f"{100 * sum(right) / len(right):.0f}% ({sum(right)}/{len(right)})" if right else "-"


def _limited(cases: list[Case], limit: int) -> list[Case]:
    if not limit:
        return cases
    return [c for c in cases if c.tool][:limit] + [c for c in cases if not c.tool][:limit]


def first_tools(pset: PromptSet, count: int) -> PromptSet:
    """`pset` with only its first `count` tools (and their enums), the same lines: what the
    number of tools costs, the lines held equal (its decisions are not judged)."""
    kept = {name for name, _, _ in pset.tools[:count]}
    enums = {key: values for key, values in pset.enums.items() if key[0] in kept}
    name = f"{pset.name}/{count} tools"
    return dataclasses.replace(pset, name=name, tools=pset.tools[:count], enums=enums)


def _print_ratios(sets: list[PromptSet], medians: dict[str, dict[str, float]]) -> None:
    """Median ms per decision of each six-tool set over the three-tool set's (shop), per row,
    and over its own lines with its first three tools (`first_tools`), all from this run (the
    machine's load hits them alike)."""
    three = [p.name for p in sets if len(p.tools) == 3]
    six_sets = [p for p in sets if len(p.tools) == 6]
    six = [p.name for p in six_sets]
    if not three or not six:
        return
    print(f"\nmedian ms per decision, 6 tools over 3 tools ({three[0]}), this run:")
    for name in six:
        for label, ms in medians[name].items():
            base = medians[three[0]].get(label)
            if base:
                print(f"  {name:<8} {label:<18} {ms:7.0f} / {base:7.0f} = {ms / base:.2f}x")
    fewer = [(p.name, cut) for p in six_sets if (cut := first_tools(p, 3).name) in medians]
    if fewer:
        print("\nmedian ms per decision, the same lines with 6 tools over their first 3, this run:")
    for name, cut in fewer:
        ms, base = medians[name]["score"], medians[cut]["score"]
        print(f"  {name:<8} {'score':<18} {ms:7.0f} / {base:7.0f} = {ms / base:.2f}x")


def _score_rounds(
    tl: Any,
    engine: Any,
    model: Any,
    sets: list[PromptSet],
    cases: dict[str, list[Case]],
    first: dict[str, Run],
    rounds: int,
) -> int:
    """`rounds` more passes of the score decision over every set, the sets in a rotating
    order each round, keeping each line's fastest time in `first` (so a burst of load on a
    shared machine hits no set more than another); how many decisions came out otherwise than
    in the first pass (a near tie can: llama.cpp's last bits depend on what was cached)."""
    differed = 0
    for r in range(rounds):
        for pset in sets[r % len(sets) :] + sets[: r % len(sets)]:
            again = run(tl, engine, model, "score", "score", "required", pset, cases[pset.name],
                        False)  # fmt: skip
            done = first[pset.name]
            differed += sum(a != b for a, b in zip(again.classes, done.classes, strict=True))
            done.millis = [min(a, b) for a, b in zip(done.millis, again.millis, strict=True)]
    return differed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--limit", type=int, default=0, help="only the first N tool and no-tool lines each"
    )
    parser.add_argument("--verbose", action="store_true", help="print every output")
    parser.add_argument("--only", default="", help="comma-separated labels to run (e.g. 'score')")
    parser.add_argument(
        "--sets", default=",".join(SETS), help=f"comma-separated prompt sets ({', '.join(SETS)})"
    )
    parser.add_argument(
        "--rounds", type=int, default=2,
        help="more passes of the score decision for its times, interleaved across the sets",
    )  # fmt: skip
    args = parser.parse_args()
    quiet_logging()
    import turnloom as tl

    sets = [SETS[name] for name in args.sets.split(",")]
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
    print(f"model {tl.models.DEFAULT_MODEL}, greedy, max_tokens 48")

    model = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL, name="m", n_ctx=2048).load()
    started = time.perf_counter()
    medians: dict[str, dict[str, float]] = {}
    scored: dict[str, Run] = {}
    #: Every set's arguments of right-tool calls, per strategy (`Run.arguments`).
    kinds: dict[str, list[tuple[str, bool]]] = {}
    #: The sets whose score decisions are timed again in the later passes.
    timed = list(sets)
    with tl.Engine(model) as engine:
        # One untimed turn first: the first decode of a fresh context is slower.
        first = sets[0]
        run(tl, engine, model, "warm-up", *variants[0][1:], first, first.cases[:1], False)
        for pset in sets:
            cases = _limited(pset.cases, args.limit)
            need = sum(bool(c.tool) for c in cases)
            print(f"\n## {pset.name} ({pset.note}): {len(cases)} player lines, {need} need one "
                  f"of {len(pset.tools)} tools\n")  # fmt: skip
            runs = [
                run(tl, engine, model, label, decision, grammar, pset, cases, args.verbose)
                for label, decision, grammar in variants
            ]
            rows = [r.row(cases) for r in runs]
            medians[pset.name] = {r.label: statistics.median(r.millis) for r in runs}
            for r in runs:
                if r.label == "score":
                    scored[pset.name] = r
                    if len(pset.tools) == 6:  # timed only, in every pass (`first_tools`)
                        fewer = first_tools(pset, 3)
                        timed.append(fewer)
                        scored[fewer.name] = run(tl, engine, model, "score", "score",
                                                 "required", fewer, cases, False)  # fmt: skip
            print_table(
                ["strategy/grammar", "valid-or-clean", "right decision", "right tool",
                 "right tool + args", "ms/decision"],
                rows,
            )  # fmt: skip
            print("\narguments of the calls with the right tool, by kind:")
            print_table(["strategy/grammar", *KINDS], [[r.label, *r.by_kind()] for r in runs])
            for r in runs:
                kinds.setdefault(r.label, []).extend(r.arguments)
        if scored and args.rounds:
            by_name = {p.name: _limited(p.cases, args.limit) for p in timed}
            differed = _score_rounds(tl, engine, model, timed, by_name, scored, args.rounds)
        for name, r in scored.items():
            medians.setdefault(name, {})["score"] = statistics.median(r.millis)
    model.close()
    if scored and args.rounds:
        print(f"\nscore: each line's best of {args.rounds + 1} passes, interleaved across the "
              f"sets ({differed} decisions came out otherwise than the first time):")  # fmt: skip
        rows = [[p.name, len(p.tools), f"{medians[p.name]['score']:.0f}"] for p in timed]
        print_table(["set", "tools", "median ms/decision"], rows)
    _print_ratios(sets, medians)
    print(f"\narguments of the calls with the right tool, by kind, over the {len(sets)} sets:")
    rows = [
        [label, *(_right_of(arguments, kind) for kind in KINDS)]
        for label, arguments in kinds.items()
    ]
    print_table(["strategy/grammar", *KINDS], rows)
    seconds = time.perf_counter() - started
    print(f"\n{len(variants)} variants x {len(sets)} sets in {seconds:.0f} s; "
          "every output classified once, counts checked")  # fmt: skip
    print(logged_summary())


if __name__ == "__main__":
    main()
