"""Property tests of ToolCall pauses against an independent reference model
(docs/reference/tools.md, docs/reference/pauses.md).

`ToolCallMachine` is a hypothesis `RuleBasedStateMachine` that drives the public blocking API
(`turnloom.Engine` on a `VirtualClock`) through ToolCall nodes of every disposition: it sends
messages, jumps from pauses into ToolCall nodes, resumes with valid and invalid `tool_results`
batches, lets pause deadlines pass, races results against a deadline, cancels, registers tool
handlers, retries kept batches and changes params. Every answer is checked against a reference
model written here from the reference pages: the dispositions table (written out literally
below), call ids, undeclared tools, batch validation, `register_tool`, pause timeouts and
races, rejections that change nothing, one completion per turn, answer chunks and completions.
Nothing from the engine internals is used to compute an
expectation. `RemoteToolCallMachine` runs the same machine over the wire (`tl.connect` to an
in-process server), and `test_scenario` replays hand-picked runs on both, so that every
disposition, every batch refusal, the handlers, the timeouts and max_steps_per_turn are reached
on every run.

The mock model answers a ToolCall node (its requests carry tools) with what the rule that made
the operation planned: optional prose and 0-2 calls of the declared `set_light` / `get_time` or
the undeclared `launch`; it answers the Generate node with "done". Every prompt the model gets
(the ToolCall nodes' and the downstream Generate's) is compared, whole, with the model's.

Graph of both agents (A starts at hub, B at t_await):

    hub          Pause (waits forever)                           default -> answer
    t_route      ToolCall RouteOnly                          tool_called -> hub
    t_ack        ToolCall Acknowledge (text '' = "ok")       tool_called -> answer
    t_notify     ToolCall Notify                             tool_called -> hub
    t_nack       ToolCall NotifyAndAcknowledge ("noted")     tool_called -> answer
    t_pause      ToolCall Pause, 500 ms, no timeout_exit     tool_called -> hub
    t_pack       ToolCall PauseAndAcknowledge, 250 ms -> answer   tool_called -> answer
    t_await      ToolCall AwaitResult, waits forever         tool_called -> hub
    t_await_to   ToolCall AwaitResult, 1000 ms -> answer     tool_called -> answer
    t_await_end  ToolCall AwaitResult, 750 ms, no timeout_exit    tool_called -> answer
    answer       Generate                                    default -> END

Every ToolCall node offers [set_light(name: string, on: boolean), get_time()] and exits
`no_tool_called` to answer; so each is `detect_only` (answer replies), and changing one to
`call_or_answer`, which would answer the turn twice, is refused (3007).

Where the reference is silent the model assumes (and says so where it is used):

* call ids: only what docs/reference/tools.md#call-ids promises is checked (form `c%08x`,
  strictly increasing, unique for the agent's lifetime); the model does not predict them but
  learns each one the first time the engine shows it (event, pause, prompt, handler) and holds
  the engine to it from then on;
* the visible exchange of one node execution is one assistant message carrying all its
  `tool_calls`, followed by one `tool` message per call in call order (whatever the order of
  the batch); a call that is timed out is closed with a JSON object whose "error" is "timeout";
* a ToolCall node's own prompt is its system prompt, the dialog, the user message and what the
  turn added so far (so it too must be well formed);
* registered handlers run, in call order, only when every pending call has one; a refused
  automatic resume leaves the turn at that pause with the batch kept;
* resume to an unknown node with a bad batch is 3005 (the node is checked first); a failed
  turn, like a cancelled one, leaves nothing in the dialog; replies of one turn are joined
  with "\\n"; a timed-out pause's node reports the exit route "timeout" in `debug_info`.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import json
import random
import re
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import event as hypothesis_event
from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

import turnloom as tl
from tests.helpers import GET_TIME, SET_LIGHT, check_answer_chunks
from turnloom.host.aio import AsyncEngine
from turnloom.server import BackgroundServer

D = tl.ToolCallDisposition

# --------------------------------------------------------------------------------------------
# The reference, written out.
# --------------------------------------------------------------------------------------------

#: docs/reference/tools.md#dispositions: disposition -> (tool-call event to host, pauses, how
#: the exchange is closed).
DISPOSITIONS: dict[D, tuple[bool, bool, str]] = {
    D.RouteOnly: (False, False, "hidden"),
    D.Acknowledge: (False, False, "ack"),
    D.Notify: (True, False, "hidden"),
    D.NotifyAndAcknowledge: (True, False, "ack"),
    D.Pause: (True, True, "hidden"),
    D.PauseAndAcknowledge: (True, True, "ack"),
    D.AwaitResult: (True, True, "host"),
}
#: Tool results batch limits (engine defaults): one result, one batch, in bytes of UTF-8.
MAX_RESULT_BYTES = 64 * 1024
MAX_BATCH_BYTES = 512 * 1024
# Error codes (docs/reference/errors.md#error-codes).
UNKNOWN_NODE, BUSY, NOT_MUTABLE, BAD_VALUE = 3005, 3004, 3006, 3007
NOT_PAUSED, BAD_TOOL_RESULTS, MAX_STEPS_EXCEEDED = 3012, 3016, 4003
TERMINAL = ("success", "error", "cancelled", "pause_timed_out")

# --------------------------------------------------------------------------------------------
# The graph, as the model knows it.
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolNode:
    disposition: D
    tool_called_exit: str
    timeout_ms: int = 0
    timeout_exit: str = ""
    acknowledge_text: str = ""


TOOL_NODES: dict[str, ToolNode] = {
    "t_route": ToolNode(D.RouteOnly, "hub"),
    "t_ack": ToolNode(D.Acknowledge, "answer"),
    "t_notify": ToolNode(D.Notify, "hub"),
    "t_nack": ToolNode(D.NotifyAndAcknowledge, "answer", acknowledge_text="noted"),
    "t_pause": ToolNode(D.Pause, "hub", 500),
    "t_pack": ToolNode(D.PauseAndAcknowledge, "answer", 250, "answer"),
    "t_await": ToolNode(D.AwaitResult, "hub"),
    "t_await_to": ToolNode(D.AwaitResult, "answer", 1000, "answer"),
    "t_await_end": ToolNode(D.AwaitResult, "answer", 750),
}
NODES = ("hub", *TOOL_NODES, "answer")
HUB_EXIT = NO_TOOL_EXIT = "answer"
#: ToolCall pauses whose tool_called and timeout exits both end the turn (for the race rule).
ENDING_PAUSES = ("t_pack", "t_await_to", "t_await_end")
START = {"A": "hub", "B": "t_await"}
MAX_STEPS = (
    12  # small: hub -> ToolCall -> hub loops inside one turn reach max_steps_per_turn (4003)
)
ANSWER = "done"

DECLARED = ("set_light", "get_time")
UNDECLARED = "launch"


def build_nodes() -> dict[str, tl.NodeParams]:
    """Fresh params for the graph (the engine and the model each get their own objects)."""
    nodes: dict[str, tl.NodeParams] = {"hub": tl.PauseParams(default_exit=HUB_EXIT)}
    for name, spec in TOOL_NODES.items():
        nodes[name] = tl.ToolCallParams(
            tools=[copy.deepcopy(SET_LIGHT), copy.deepcopy(GET_TIME)],
            disposition=spec.disposition,
            acknowledge_text=spec.acknowledge_text,
            pause_timeout_ms=spec.timeout_ms,
            tool_called_exit=spec.tool_called_exit,
            no_tool_called_exit=NO_TOOL_EXIT,
            timeout_exit=spec.timeout_exit,
            mode=tl.ToolCallMode.DetectOnly,  # answer (a Generate) replies when no tool is called
        )
    nodes["answer"] = tl.GenerateParams()
    return nodes


def build_graph(start: str) -> tl.GraphDescription:
    graph = tl.GraphDescription()
    for name, params in build_nodes().items():
        graph.add_node(name, params)
    return graph.set_start_node(start).set_default_model_name("mock")


Plan = tuple[str, list[tuple[str, dict[str, Any]]]]  # (prose, [(tool, arguments)])


def plan_text(plan: Plan) -> str:
    """What the mock model writes for a plan: prose, then each call in Hermes markup."""
    prose, calls = plan
    markup = "".join(
        f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in calls
    )
    return " ".join(part for part in (prose, markup) if part)


# --------------------------------------------------------------------------------------------
# The reference model
# --------------------------------------------------------------------------------------------

CALL_ID = re.compile(r"c[0-9a-f]{8}")


class CallId:
    """The id of one call: the engine chooses it (only its form and order are promised). It is
    bound to the first id it is compared with, which must have the form `c%08x`; from then on
    it equals that id only."""

    __slots__ = ("value",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self) -> None:
        self.value: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, str):
            return NotImplemented
        if self.value is None:
            if CALL_ID.fullmatch(other) is None:
                return False
            self.value = other
        return self.value == other

    def __repr__(self) -> str:
        return f"CallId({self.value or '?'})"

    def bound(self) -> str:
        assert self.value is not None, "a pending call's id was never shown to the host"
        return self.value


class _TimeoutResult:
    """The result of a timed-out call: a JSON object with "error": "timeout"."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, str):
            return NotImplemented
        with contextlib.suppress(ValueError):
            data = json.loads(other)
            return isinstance(data, dict) and data.get("error") == "timeout"
        return False

    def __repr__(self) -> str:
        return "<timeout result>"


TIMEOUT_RESULT = _TimeoutResult()


def as_string(value: Any) -> str:
    """Argument values are strings in arguments_json (JSON text for non-strings)."""
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(eq=False)
class Call:
    cid: CallId
    tool: str
    args: dict[str, Any]  # the plan's JSON values, which are of the declared types
    node: str
    disposition: D

    def as_event(self) -> tuple[Any, ...]:
        strings = {k: as_string(v) for k, v in self.args.items()}
        return (self.cid, self.tool, strings, self.node, self.disposition, self.args)


def event_tuple(event: tl.ToolCallEvent) -> tuple[Any, ...]:
    args_json = json.loads(event.arguments_json)
    return (
        event.call_id,
        event.tool_name,
        args_json,
        event.node_name,
        event.disposition,
        event.arguments,
    )


def call_message(calls: list[Call]) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": c.cid, "type": "function", "function": {"name": c.tool, "arguments": c.args}}
            for c in calls
        ],
    }


def result_message(call: Call, content: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call.cid, "name": call.tool, "content": content}


def batch_problem(pending: list[Any], awaits: bool, batch: list[tuple[Any, str]]) -> str | None:
    """Why a batch is refused (3016), or None if it is valid."""
    received = [cid for cid, _ in batch]
    if not awaits:
        return "results on a pause that awaits none" if batch else None
    if not batch:
        return "empty batch on an AwaitResult pause"
    if any(n > 1 for n in Counter(received).values()):
        return "duplicate id"
    if any(cid not in pending for cid in received):
        return "unknown id"
    if any(cid not in received for cid in pending):
        return "missing id"
    sizes = [len(text.encode("utf-8")) for _, text in batch]
    if max(sizes) > MAX_RESULT_BYTES:
        return "oversize result"
    if sum(sizes) > MAX_BATCH_BYTES:
        return "oversize batch"
    return None


@dataclass(eq=False)
class PauseModel:
    node: str
    exit: str  # "default" (hub) or "tool_called"
    target: str
    timeout_ms: int
    timeout_exit: str
    calls: list[Call]
    awaits: bool
    entry: int  # index of the node's entry in the turn's debug nodes
    started: float = 0.0
    kept: bool = False  # an automatic resume with the handlers' batch was refused


@dataclass(eq=False)
class TurnModel:
    turn_id: int
    user: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    status: str = "running"
    pause: PauseModel | None = None
    pause_count: int = 0
    paused_s: float = 0.0
    steps: int = 0
    generated: bool = False
    error_code: int | None = None
    nodes: list[list[Any]] = field(default_factory=list)  # [name, exit_route, rejected tools]

    @property
    def reply(self) -> str:
        return "\n".join(self.replies)


@dataclass(eq=False)
class AgentModel:
    name: str
    params: dict[str, tl.NodeParams]
    turn: TurnModel | None = None
    completed: list[TurnModel] = field(default_factory=list)
    dialog: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)  # every declared call, in order made
    events: list[Call] = field(default_factory=list)  # the calls the host was told about
    paused: list[tuple[str, str]] = field(default_factory=list)
    resumed: list[tuple[str, str]] = field(default_factory=list)
    handlers: dict[str, str] = field(default_factory=dict)  # tool -> "echo" | "huge"
    handled: list[Call] = field(default_factory=list)
    gens: list[tuple[list[dict[str, Any]], list[str] | None]] = field(default_factory=list)
    plan: Plan | None = None  # what the model writes if a ToolCall node runs in this operation


class Recorder:
    """Every callback of one agent (they run on the engine's loop thread)."""

    def __init__(self, agent: tl.Agent) -> None:
        self.results: list[tl.TurnResult] = []
        self.chunks: list[tuple[str, bool, bool]] = []
        self.paused: list[tuple[str, str]] = []
        self.resumed: list[tuple[str, str]] = []
        self.events: list[tl.ToolCallEvent] = []
        self.with_id: list[tuple[str, str, str]] = []
        self.handled: list[tl.ToolCallEvent] = []
        agent.set_on_turn_complete(self.results.append)
        agent.set_on_answer_text(lambda text, delta, fin: self.chunks.append((text, delta, fin)))
        agent.set_on_paused(lambda node, exit_: self.paused.append((node, exit_)))
        agent.set_on_resumed(lambda node, to: self.resumed.append((node, to)))
        agent.set_on_tool_call_event(self.events.append)
        agent.set_on_tool_call_with_id(lambda *args: self.with_id.append(args))

    def sizes(self) -> tuple[int, ...]:
        return tuple(
            len(x)
            for x in (
                self.results,
                self.chunks,
                self.paused,
                self.resumed,
                self.events,
                self.with_id,
                self.handled,
            )
        )


def event(text: str) -> None:
    """`hypothesis.event`, also usable when the machine is driven by hand (scenario tests)."""
    with contextlib.suppress(InvalidArgument):
        hypothesis_event(text)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

WHO = st.sampled_from(["A", "A", "B"])
USER_TEXT = st.text(alphabet="abc XY", max_size=8)
DECLARED_CALL: st.SearchStrategy[tuple[str, dict[str, Any]]] = st.one_of(
    st.builds(
        lambda name, on: ("set_light", {"name": name, "on": on}),
        st.sampled_from(["porch", "hall"]),
        st.booleans(),
    ),
    st.just(("get_time", {})),
)
CALLS = st.one_of(DECLARED_CALL, st.just((UNDECLARED, {"target": "moon"})))
#: A declared call, then maybe another call (declared or not).
PLANS_WITH_A_CALL = st.tuples(
    st.sampled_from(["", "hmm"]),
    st.tuples(DECLARED_CALL, st.lists(CALLS, max_size=1)).map(lambda t: [t[0], *t[1]]),
)
#: Mostly at least one call (declared or not), sometimes none.
PLANS = st.tuples(
    st.sampled_from(["", "hmm"]),
    st.one_of(st.lists(CALLS, min_size=1, max_size=2), st.lists(CALLS, max_size=2)),
)
BATCH_KINDS = st.sampled_from(
    [
        "valid",
        "valid",
        "valid",
        "ids_anyway",  # the pending ids (or some id) even when the pause awaits no results
        "empty",
        "missing",
        "unknown",
        "swap_unknown",
        "duplicate",
        "oversize",
        "at_limit",
    ]
)
#: Jumps out of an AwaitResult pause mostly carry a valid batch, so the walk goes on.
JUMP_BATCH_KINDS = st.one_of(st.just("valid"), BATCH_KINDS)
RNG = st.randoms(use_true_random=False)
ADVANCE = st.sampled_from(["deadline", 0.25, 0.5, 0.75, 1.0, 2.0, "deadline", "just before"])
MUTABLE_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "acknowledge_text": st.sampled_from(["", "roger", "done ✓"]),
        "mode": st.just(tl.ToolCallMode.DetectOnly),  # call_or_answer: see _rejected_changes
        "system_prompt": st.sampled_from(["", "use the tools"]),
    },
)


def _rejected_changes() -> list[tuple[str, dict[str, Any], int]]:
    """(node, fields, code): a structural field that differs (3006), a bad value (3007), an
    unknown node (3005)."""
    cases: list[tuple[str, dict[str, Any], int]] = []
    for name, spec in TOOL_NODES.items():
        other = D.Notify if spec.disposition is not D.Notify else D.Pause
        cases += [
            (name, {"disposition": other.value}, NOT_MUTABLE),
            (name, {"tools": [GET_TIME]}, NOT_MUTABLE),
            (name, {"pause_timeout_ms": spec.timeout_ms + 250}, NOT_MUTABLE),
            (name, {"timeout_exit": "" if spec.timeout_exit else "answer"}, NOT_MUTABLE),
            (
                name,
                {"tool_called_exit": "answer" if spec.tool_called_exit == "hub" else "hub"},
                NOT_MUTABLE,
            ),
            (name, {"no_tool_called_exit": "hub"}, NOT_MUTABLE),
            (name, {"model_name": "mock"}, NOT_MUTABLE),
            (name, {"acknowledge_text": 5}, BAD_VALUE),
            (name, {"mode": "sometimes"}, BAD_VALUE),
            # no_tool_called leads to answer, a Generate: the turn would answer twice.
            (name, {"mode": "call_or_answer"}, BAD_VALUE),
        ]
    cases += [
        ("t_nope", {"mode": "detect_only"}, UNKNOWN_NODE),
        ("hub", {"pause_timeout_ms": 100}, NOT_MUTABLE),
    ]
    return cases


REJECTED_CHANGES = _rejected_changes()


# --------------------------------------------------------------------------------------------
# The state machine
# --------------------------------------------------------------------------------------------


class ToolCallMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = tl.VirtualClock()
        self.planned: dict[int, str] = {}  # agent id -> what the model writes at a ToolCall
        self.mock = tl.MockModel("mock", fallback=self._model_output)
        self.engine = self._make_engine(tl.EngineSettings(pause_stall_warn_ms=0))
        self.now = 0.0
        self.turn_ids = itertools.count(1)  # engine-wide, consumed by each started turn
        self.seen_requests = 0
        self.checks = 0
        self.agents: dict[str, tl.Agent] = {}
        self.rec: dict[str, Recorder] = {}
        self.model: dict[str, AgentModel] = {}
        for who, start in START.items():
            agent = self.engine.create_agent(
                build_graph(start), max_steps_per_turn=MAX_STEPS, enable_diagnostics=True
            )
            self.agents[who] = agent
            self.rec[who] = Recorder(agent)
            self.model[who] = AgentModel(who, build_nodes())

    def _make_engine(self, engine_settings: tl.EngineSettings) -> Any:
        return tl.Engine(self.mock, clock=self.clock, settings=engine_settings)

    def _model_output(self, request: Any) -> str:
        """The mock model: a ToolCall node (its request offers tools) gets the planned text."""
        if request.tools:
            return self.planned.get(request.agent_id, "unplanned")
        return ANSWER

    def teardown(self) -> None:
        made = sum(len(am.calls) for am in self.model.values())
        event(f"calls made in the run: {'10+' if made >= 10 else made}")
        self.engine.close()
        # Closing the engine cancels every open turn: exactly one more completion each.
        for who, am in self.model.items():
            if am.turn is not None:
                self._cancel(am)
            self._check_completions(who)

    # --- the reference model -----------------------------------------------------------------

    def _reply(self, turn: TurnModel, text: str) -> None:
        turn.replies.append(text)
        turn.messages.append({"role": "assistant", "content": text})

    def _chat(self, am: AgentModel, turn: TurnModel, system_prompt: str) -> list[dict[str, Any]]:
        """A prompt: system prompt, the dialog, the user message, what the turn added so far.
        (The answer node keeps its default template and placement: the user message as is.)"""
        chat: list[dict[str, Any]] = []
        if system_prompt:
            chat.append({"role": "system", "content": system_prompt})
        for user, messages in am.dialog:
            chat.append({"role": "user", "content": user})
            chat.extend(messages)
        chat.append({"role": "user", "content": turn.user})
        chat.extend(turn.messages)
        return chat

    def _end(self, am: AgentModel, turn: TurnModel, status: str, code: int | None = None) -> None:
        assert status in TERMINAL
        event(f"turn ended {status}")
        turn.status, turn.error_code, turn.pause = status, code, None
        am.turn = None
        am.completed.append(turn)
        if status in ("success", "pause_timed_out"):
            am.dialog.append((turn.user, list(turn.messages)))  # a timed-out turn is kept

    def _leave_pause(self, turn: TurnModel, at: float) -> PauseModel:
        pause = turn.pause
        assert pause is not None
        turn.paused_s += at - pause.started
        turn.pause = None
        return pause

    def _pause(self, am: AgentModel, turn: TurnModel, pause: PauseModel) -> bool:
        """Park the turn; run registered handlers. True if it stays parked."""
        pause.started = self.now
        turn.pause = pause
        turn.pause_count += 1
        am.paused.append((pause.node, pause.exit))
        # Handlers run (in call order) only when every pending call has one.
        if not pause.calls or not all(c.tool in am.handlers for c in pause.calls):
            return True
        outputs = []
        for call in pause.calls:
            am.handled.append(call)
            huge = am.handlers[call.tool] == "huge"
            outputs.append("x" * (MAX_RESULT_BYTES + 1) if huge else self._handler_text(am, call))
        if pause.awaits:
            # The handlers' return values are the batch; a refused batch is kept.
            indexed = list(enumerate(outputs))
            problem = batch_problem(list(range(len(outputs))), True, indexed)
            event(f"automatic resume: {problem or 'accepted'}")
            if problem is not None:
                pause.kept = True
                return True
        self._leave_pause(turn, self.now)
        am.resumed.append((pause.node, ""))
        if pause.awaits:
            turn.messages.extend(
                result_message(c, o) for c, o in zip(pause.calls, outputs, strict=True)
            )
        return False

    @staticmethod
    def _handler_text(am: AgentModel, call: Call) -> str:
        return f"{call.tool} handled #{len(am.handled)}"

    def _tool_call(self, am: AgentModel, turn: TurnModel, node: str) -> str | None:
        """Run a ToolCall node; return the next node, or None when the turn stays paused."""
        spec, params = TOOL_NODES[node], am.params[node]
        assert isinstance(params, tl.ToolCallParams)
        am.gens.append((self._chat(am, turn, params.system_prompt), list(DECLARED)))
        assert am.plan is not None, "the model expects a second ToolCall run in one operation"
        prose, planned = am.plan
        am.plan = None
        turn.generated = turn.generated or bool(plan_text((prose, planned)))
        rejected = [name for name, _ in planned if name not in DECLARED]  # never surfaced
        entry = len(turn.nodes)
        if len(rejected) < len(planned):
            turn.nodes.append([node, "tool_called", rejected])
        else:
            turn.nodes.append([node, "no_tool_called", rejected])
            if params.mode is tl.ToolCallMode.CallOrAnswer and prose:
                self._reply(turn, prose)  # call_or_answer
            return NO_TOOL_EXIT
        calls = [
            Call(CallId(), name, args, node, spec.disposition)
            for name, args in planned
            if name in DECLARED
        ]
        am.calls.extend(calls)
        notifies, pauses, closed = DISPOSITIONS[spec.disposition]
        event(f"{spec.disposition.value}: {len(calls)} call(s)")
        if closed != "hidden":
            turn.messages.append(call_message(calls))
        if closed == "ack":
            turn.messages.extend(result_message(c, params.acknowledge_text or "ok") for c in calls)
        if notifies:
            am.events.extend(calls)
        if not pauses:
            return spec.tool_called_exit
        pause = PauseModel(
            node,
            "tool_called",
            spec.tool_called_exit,
            spec.timeout_ms,
            spec.timeout_exit,
            calls,
            awaits=closed == "host",
            entry=entry,
        )
        return None if self._pause(am, turn, pause) else spec.tool_called_exit

    def _walk(self, am: AgentModel, turn: TurnModel, node: str) -> None:
        while node:
            if turn.steps >= MAX_STEPS:
                self._end(am, turn, "error", MAX_STEPS_EXCEEDED)  # max_steps_per_turn
                return
            turn.steps += 1
            if node == "hub":
                turn.nodes.append(["hub", "default", None])
                entry = len(turn.nodes) - 1
                self._pause(
                    am, turn, PauseModel("hub", "default", HUB_EXIT, 0, "", [], False, entry)
                )
                return
            if node == "answer":
                params = am.params[node]
                assert isinstance(params, tl.GenerateParams)
                am.gens.append((self._chat(am, turn, params.system_prompt), None))
                self._reply(turn, ANSWER)
                turn.generated = True
                turn.nodes.append(["answer", "default", None])
                node = ""
                continue
            next_node = self._tool_call(am, turn, node)
            if next_node is None:
                return
            node = next_node
        self._end(am, turn, "success")

    def _start(self, am: AgentModel, text: str) -> None:
        turn = TurnModel(next(self.turn_ids), text)
        am.turn = turn
        self._walk(am, turn, START[am.name])

    def _resume(self, am: AgentModel, target: str, batch: list[tuple[str, str]]) -> None:
        turn = am.turn
        assert turn is not None and turn.pause is not None
        pause = self._leave_pause(turn, self.now)
        am.resumed.append((pause.node, target))
        if pause.awaits:  # the model sees the results in call order
            by_id = dict(batch)
            turn.messages.extend(result_message(c, by_id[c.cid.bound()]) for c in pause.calls)
        self._walk(am, turn, target or pause.target)

    def _cancel(self, am: AgentModel) -> None:
        turn = am.turn
        assert turn is not None
        if turn.pause is not None:
            self._leave_pause(turn, self.now)
        self._end(am, turn, "cancelled")

    def _fire_deadlines(self, target: float) -> None:
        """Pause timeouts: every deadline <= target, in order; a timed-out AwaitResult pause closes
        its calls with a timeout result (every call the model sees gets its result)."""
        due = []
        for am in self.model.values():
            pause = am.turn.pause if am.turn is not None else None
            if pause is not None and pause.timeout_ms:
                deadline = pause.started + pause.timeout_ms / 1000
                if deadline <= target:
                    due.append((deadline, am))
        walks = []
        for deadline, am in sorted(due, key=lambda item: item[0]):
            turn = am.turn
            assert turn is not None
            pause = self._leave_pause(turn, deadline)
            event(f"timeout at {pause.node}")
            turn.nodes[pause.entry][1] = "timeout"
            if pause.awaits:
                turn.messages.extend(result_message(c, TIMEOUT_RESULT) for c in pause.calls)
            if pause.timeout_exit:
                am.resumed.append((pause.node, pause.timeout_exit))
                walks.append((am, pause.timeout_exit))
            else:
                self._end(am, turn, "pause_timed_out")
        self.now = target
        for am, node in walks:
            assert am.turn is not None
            self._walk(am, am.turn, node)
            assert am.turn is None, "a timeout exit here leads to the end of the turn"

    # --- helpers on the engine side ----------------------------------------------------------

    def _plan(self, who: str, plan: Plan | None) -> None:
        self.model[who].plan = plan
        self.planned[self.agents[who].agent_id] = plan_text(plan) if plan else "unplanned"

    def _snapshot(self, who: str) -> tuple[Any, ...]:
        """Everything a rejected operation must leave unchanged."""
        agent = self.agents[who]
        futures = [agent.get_params_async(n) for n in NODES]
        params = tuple(f.result(5) for f in futures)
        step = agent.wait(timeout=5)
        return (
            params,
            step.pause,
            step.result,
            agent.last_result,
            agent.has_paused_tool_batch(),
            self.rec[who].sizes(),
            len(self.mock.requests),
            self.clock.pending(),
        )

    def _expect_rejected(
        self, who: str, code: int, fn: Any, *args: Any, **kwargs: Any
    ) -> tl.TurnloomError:
        before = self._snapshot(who)
        with pytest.raises(tl.TurnloomError) as info:
            fn(*args, **kwargs)
        assert int(info.value.code) == code, f"expected {code}, got {info.value!r}"
        assert info.value.message, "every error carries a human-readable message"
        assert self._snapshot(who) == before, "a rejected operation changed something"
        event(f"rejected {code}")
        return info.value

    def _check_pause(self, info: tl.PauseInfo, pause: PauseModel) -> None:
        assert (info.node_name, info.pending_exit, info.pending_target) == (
            pause.node,
            pause.exit,
            pause.target,
        ), info
        assert info.timeout_ms == pause.timeout_ms, info
        assert info.awaits_results == pause.awaits, info
        got = [event_tuple(e) for e in info.pending_calls]
        assert got == [c.as_event() for c in pause.calls], (got, pause.calls)

    def _check_step(self, who: str, step: tl.Step) -> None:
        am = self.model[who]
        if am.turn is not None:
            assert am.turn.pause is not None
            assert step.result is None and step.pause is not None, step
            self._check_pause(step.pause, am.turn.pause)
        elif am.completed:
            assert step.pause is None and step.result is not None, step
            assert step.result.turn_id == am.completed[-1].turn_id
        else:
            assert step.pause is None and step.result is None, step

    def _paused(self, who: str) -> bool:
        turn = self.model[who].turn
        return turn is not None and turn.pause is not None

    def _pick(self, who: str, rnd: random.Random) -> str:
        """Mostly an agent that is paused, when there is one."""
        paused = [w for w in self.agents if self._paused(w)]
        if paused and not self._paused(who) and rnd.random() < 0.85:
            return rnd.choice(paused)
        return who

    def _unknown_id(self, am: AgentModel, pending: list[str], rnd: random.Random) -> str:
        """An id that is not pending: an earlier call's, the next one's, or not an id at all."""
        bound = [c.cid.value for c in am.calls if c.cid.value is not None]
        past = [cid for cid in bound if cid not in pending]
        top = max((int(cid[1:], 16) for cid in bound), default=-1)
        choices = [f"c{top + 1:08x}", f"c{top + 7:08x}", "C00000000", "call_1", ""]
        if past:
            choices += [rnd.choice(past)] * 3
        return rnd.choice(choices)

    def _batch(self, am: AgentModel, kind: str, rnd: random.Random) -> list[tuple[str, str]]:
        """A tool_results batch of the given kind for the agent's current pause."""
        pause = am.turn.pause if am.turn is not None else None
        pending = [c.cid.bound() for c in pause.calls] if pause is not None else []
        awaits = pause is not None and pause.awaits
        ids = list(pending)
        if kind == "valid":
            ids = ids if awaits else []
        elif kind == "ids_anyway":
            ids = ids or [self._unknown_id(am, pending, rnd)]
        elif kind == "empty":
            ids = []
        elif kind == "missing":
            ids = ids[1:]
        elif kind == "unknown":
            ids = [*ids, self._unknown_id(am, pending, rnd)]
        elif kind == "swap_unknown":
            ids = [self._unknown_id(am, pending, rnd), *ids[1:]]
        elif kind == "duplicate":
            ids = [*ids, rnd.choice(ids)] if ids else [self._unknown_id(am, pending, rnd)] * 2
        else:  # oversize / at_limit: the right ids, one result at or just over 64 KiB
            ids = ids or [self._unknown_id(am, pending, rnd)]
        texts = ["r", "lit", '{"ok": true}', "é ✓", ""]
        batch = [(cid, rnd.choice(texts)) for cid in ids]
        if kind in ("oversize", "at_limit"):
            over = 1 if kind == "oversize" else 0
            big = rnd.choice(
                ["x" * (MAX_RESULT_BYTES + over), "é" * (MAX_RESULT_BYTES // 2) + "x" * over]
            )
            batch[0] = (batch[0][0], big)
        rnd.shuffle(batch)
        return batch

    @staticmethod
    def _wire_form(batch: list[tuple[str, str]], rnd: random.Random) -> list[Any]:
        """The batch as the host may pass it: pairs, lists, mappings or `ToolResult`s."""
        forms = [
            lambda cid, text: (cid, text),
            lambda cid, text: [cid, text],
            lambda cid, text: {"call_id": cid, "result": text},
            tl.ToolResult,
        ]
        return [rnd.choice(forms)(cid, text) for cid, text in batch]

    # --- rules ---------------------------------------------------------------------------------

    @initialize(
        text=USER_TEXT,
        node=st.sampled_from(list(TOOL_NODES)),
        plan=PLANS_WITH_A_CALL,
        rnd=RNG,
    )
    def open_a_turn(
        self,
        text: str,
        node: str | None = None,
        plan: Plan | None = None,
        rnd: random.Random | None = None,
    ) -> None:
        """Every run starts with agent A's turn parked at the hub, and (in the random runs) a
        jump into a ToolCall node that calls a declared tool, so even the shortest run has a
        tool call."""
        self.send_message("A", text, ("", []))
        if node is not None and plan is not None and rnd is not None:
            self._resume_rule("A", node, plan, "valid", rnd)

    @rule(who=WHO, text=USER_TEXT, plan=PLANS)
    def send_message(self, who: str, text: str, plan: Plan) -> None:
        am, agent = self.model[who], self.agents[who]
        self._plan(who, plan)
        if am.turn is not None:
            self._expect_rejected(who, BUSY, agent.send_message, text, timeout=5)
        else:
            step = agent.send_message(text, timeout=5)
            self._start(am, text)
            self._check_step(who, step)
        self._plan(who, None)

    def _resume_rule(
        self, who: str, target: str, plan: Plan, kind: str, rnd: random.Random
    ) -> None:
        batch = self._batch(self.model[who], kind, rnd)
        self.resume_with(who, target, plan, batch, kind, rnd)

    def resume_with(
        self,
        who: str,
        target: str,
        plan: Plan,
        batch: list[tuple[str, str]],
        kind: str = "given",
        rnd: random.Random | None = None,
    ) -> None:
        """resume(target, batch): refused with 3012 / 3005 / 3016 or accepted."""
        am, agent = self.model[who], self.agents[who]
        self._plan(who, plan)
        wire = self._wire_form(batch, rnd or random.Random(len(batch)))
        pause = am.turn.pause if am.turn is not None else None
        if pause is None:
            self._expect_rejected(who, NOT_PAUSED, agent.resume, target, wire, timeout=5)
        elif target and target not in NODES:
            self._expect_rejected(who, UNKNOWN_NODE, agent.resume, target, wire, timeout=5)
        elif problem := batch_problem([c.cid.bound() for c in pause.calls], pause.awaits, batch):
            event(f"3016: {problem}")
            error = self._expect_rejected(
                who, BAD_TOOL_RESULTS, agent.resume, target, wire, timeout=5
            )
            # The message lists the expected and the received ids.
            expected = [c.cid.bound() for c in pause.calls] if pause.awaits else []
            for cid in expected + [cid for cid, _ in batch]:
                assert cid in error.message, (cid, error.message)
        else:
            event(f"resume at {pause.node} ({kind}, {len(batch)} result(s))")
            step = agent.resume(target, wire, timeout=5)
            self._resume(am, target, batch)
            self._check_step(who, step)
        self._plan(who, None)

    @rule(
        who=WHO,
        node=st.sampled_from(list(TOOL_NODES)),
        plan=PLANS,
        kind=JUMP_BATCH_KINDS,
        rnd=RNG,
    )
    def jump_to_tool(self, who: str, node: str, plan: Plan, kind: str, rnd: random.Random) -> None:
        """Jump resume into a ToolCall node (a new round: call ids keep counting). With
        no paused turn anywhere, an idle agent gets a new message instead."""
        who = self._pick(who, rnd)
        if self.model[who].turn is None:
            self.send_message(who, rnd.choice(["go", "again", ""]), plan)
        else:
            self._resume_rule(who, node, plan, kind, rnd)

    # The same rule three times: hypothesis picks rules uniformly, and this is the heart of it.
    jump_to_tool_again = rule(
        who=WHO, node=st.sampled_from(list(TOOL_NODES)), plan=PLANS, kind=JUMP_BATCH_KINDS, rnd=RNG
    )(lambda self, **kwargs: self.jump_to_tool(**kwargs))
    jump_to_tool_once_more = rule(
        who=WHO, node=st.sampled_from(list(TOOL_NODES)), plan=PLANS, kind=JUMP_BATCH_KINDS, rnd=RNG
    )(lambda self, **kwargs: self.jump_to_tool(**kwargs))

    @rule(
        who=WHO,
        node=st.sampled_from(["", "", "answer", "hub", "nope"]),
        kind=BATCH_KINDS,
        rnd=RNG,
    )
    def resume(self, who: str, node: str, kind: str, rnd: random.Random) -> None:
        """Plain resume (via the pending exit) or a jump to hub / answer / an unknown node."""
        self._resume_rule(self._pick(who, rnd), node, ("", []), kind, rnd)

    @rule(how=ADVANCE)
    def advance(self, how: float | str) -> None:
        """Let time pass: by a fixed step, exactly onto the next deadline, or just before it."""
        if isinstance(how, str):
            self.advance_to_next_deadline(-0.25 if how == "just before" else 0.0)
        else:
            self.advance_clock(how)

    # Twice: a ToolCall pause with a deadline is usually resumed before time gets to pass.
    advance_again = rule(how=ADVANCE)(lambda self, how: self.advance(how))

    def advance_clock(self, seconds: float) -> None:
        """A ToolCall pause times out on the engine's clock."""
        self.clock.advance(seconds)
        self._fire_deadlines(self.now + seconds)
        for who, agent in self.agents.items():
            self._check_step(who, agent.wait(timeout=5))

    def advance_to_next_deadline(self, offset: float) -> None:
        """Move the clock just before, or exactly onto, the next pause deadline."""
        deadlines = [
            am.turn.pause.started + am.turn.pause.timeout_ms / 1000
            for am in self.model.values()
            if am.turn is not None and am.turn.pause is not None and am.turn.pause.timeout_ms
        ]
        if not deadlines:
            self.advance_clock(0.25)
        else:
            self.advance_clock(max(0.0, min(deadlines) - self.now + offset))

    @rule(who=WHO)
    def cancel(self, who: str) -> None:
        am, agent = self.model[who], self.agents[who]
        if am.turn is None:
            before = self._snapshot(who)
            assert agent.cancel() is False  # "nothing to cancel", not an error
            assert self._snapshot(who) == before
        else:
            assert agent.cancel() is True
            self._cancel(am)
            self._check_step(who, agent.wait(timeout=5))

    def _paused_at(self, nodes: tuple[str, ...]) -> list[str]:
        return [w for w in self.agents if self._paused(w) and pause_of(self, w).node in nodes]  # type: ignore[union-attr]

    @precondition(lambda self: self._paused_at(ENDING_PAUSES))
    @rule(
        kind=st.sampled_from(["timeout", "timeout", "two_resumes"]),
        head_start=st.sampled_from([0.0, 0.002]),
        rnd=RNG,
    )
    def race(self, kind: str, head_start: float, rnd: random.Random) -> None:
        """Races on a ToolCall pause whose exit ends the turn: a resume carrying a valid batch
        races the pause deadline, or a second resume with the same batch; exactly one wins,
        the loser is a no-op (timer) or 3012 (resume), and only the winner closes the calls."""
        who = rnd.choice(self._paused_at(ENDING_PAUSES))
        am, agent = self.model[who], self.agents[who]
        pause = pause_of(self, who)
        assert pause is not None
        batch = self._batch(am, "valid", rnd)
        wire = self._wire_form(batch, rnd)
        self._plan(who, None)  # no ToolCall node runs after these pauses
        if kind == "two_resumes":
            futures = [agent.resume_async("", wire), agent.resume_async("", wire)]
            first = futures[0].result(5)
            with pytest.raises(tl.TurnloomError) as info:
                futures[1].result(5)
            assert int(info.value.code) == NOT_PAUSED, info.value
            self._resume(am, "", batch)
            self._check_step(who, first)
            return
        seconds = pause.started + pause.timeout_ms / 1000 - self.now
        future = agent.resume_async("", wire)
        if head_start:  # none: the deadline usually wins; a head start lets the resume win
            time.sleep(head_start)
        self.clock.advance(seconds)
        try:
            step: tl.Step | None = future.result(5)
        except tl.TurnloomError as error:
            assert int(error.code) == NOT_PAUSED, error
            step = None
        event(f"results vs timeout: {'resume' if step is not None else 'timeout'} won")
        if step is not None:
            self._resume(am, "", batch)
            self._check_step(who, step)
        self._fire_deadlines(self.now + seconds)
        for w, other in self.agents.items():
            self._check_step(w, other.wait(timeout=5))

    @rule(
        who=WHO,
        tool=st.sampled_from([*DECLARED, *DECLARED, UNDECLARED]),
        mode=st.sampled_from([None, "echo", "echo", "huge"]),
    )
    def register(self, who: str, tool: str, mode: str | None) -> None:
        """Register (or unregister) a handler; it runs at the next pausing ToolCall."""
        self.agents[who].register_tool(tool, self._handler(who, mode) if mode else None)
        if mode is None:
            self.model[who].handlers.pop(tool, None)
        else:
            self.model[who].handlers[tool] = mode

    def _handler(self, who: str, mode: str) -> Any:
        rec = self.rec[who]

        def handle(call: tl.ToolCallEvent) -> str:
            rec.handled.append(call)
            if mode == "huge":
                return "x" * (MAX_RESULT_BYTES + 1)
            return f"{call.tool_name} handled #{len(rec.handled)}"

        return handle

    @rule(
        who=WHO,
        case=st.one_of(
            st.just(("retry", None)),
            st.tuples(st.just("change"), st.sampled_from(REJECTED_CHANGES)),
        ),
    )
    def probe(self, who: str, case: tuple[str, Any]) -> None:
        """Calls that must be refused and change nothing."""
        kind, arg = case
        if kind == "retry":
            self.retry_batch(who)
        else:
            self.change_rejected(who, arg)

    def retry_batch(self, who: str) -> None:
        """A kept batch was refused for its size: retrying it is 3016 again, and changes
        nothing; with no kept batch there is nothing to retry."""
        am, agent = self.model[who], self.agents[who]
        if am.turn is not None and am.turn.pause is not None and am.turn.pause.kept:
            self._expect_rejected(who, BAD_TOOL_RESULTS, agent.retry_paused_tool_batch, timeout=5)
        else:
            before = self._snapshot(who)
            with pytest.raises((RuntimeError, tl.TurnloomError)):
                agent.retry_paused_tool_batch(timeout=5)
            assert self._snapshot(who) == before

    @rule(
        who=WHO,
        node=st.sampled_from(list(TOOL_NODES)),
        fields=MUTABLE_FIELDS,
        as_object=st.booleans(),
    )
    def change_mutable(self, who: str, node: str, fields: dict[str, Any], as_object: bool) -> None:
        """Mutable ToolCall params change while idle or paused; later runs see them."""
        am, agent = self.model[who], self.agents[who]
        proposed = dataclasses.replace(copy.deepcopy(am.params[node]), **fields)
        payload: Any = (
            copy.deepcopy(proposed)
            if as_object
            else {k: v.value if isinstance(v, tl.ToolCallMode) else v for k, v in fields.items()}
        )
        agent.change_params(node, payload)
        am.params[node] = proposed
        assert agent.get_params(node) == proposed

    def change_rejected(self, who: str, case: tuple[str, dict[str, Any], int]) -> None:
        node, fields, code = case
        self._expect_rejected(who, code, self.agents[who].change_params, node, fields)

    # --- invariants ----------------------------------------------------------------------------

    @invariant()
    def engine_agrees_with_model(self) -> None:
        # One node's params per check, in turn (asking for all of them every step is most of
        # the run time); rejected operations compare all of them (`_snapshot`).
        self.checks += 1
        node = NODES[self.checks % len(NODES)]
        asked = {
            who: (agent.wait_async(), agent.get_params_async(node))
            for who, agent in self.agents.items()
        }
        self._check_generations()
        for who, am in self.model.items():
            agent, rec = self.agents[who], self.rec[who]
            step_future, params_future = asked[who]
            self._check_step(who, step_future.result(5))
            assert params_future.result(5) == am.params[node], node
            # Pause notifications, resumes (plain '', jump, timeout exit).
            assert rec.paused == am.paused
            assert rec.resumed == am.resumed
            # Events only for notifying dispositions and declared tools.
            assert [event_tuple(e) for e in rec.events] == [c.as_event() for c in am.events]
            assert [(cid, tool, json.loads(args)) for cid, tool, args in rec.with_id] == [
                c.as_event()[:3] for c in am.events
            ]
            # Handlers ran for exactly the model's calls, never for non-pausing ones.
            assert [event_tuple(e) for e in rec.handled] == [c.as_event() for c in am.handled]
            kept = am.turn is not None and am.turn.pause is not None and am.turn.pause.kept
            assert agent.has_paused_tool_batch() == kept
            # Call ids, where the engine showed them, strictly increase over the agent's life.
            shown = [int(c.cid.value[1:], 16) for c in am.calls if c.cid.value is not None]
            assert all(a < b for a, b in itertools.pairwise(shown)), shown
            self._check_completions(who)

    def _check_generations(self) -> None:
        """Every prompt since the last check is the model's (well-formed for its template)."""
        new = list(self.mock.requests)[self.seen_requests :]
        self.seen_requests = len(self.mock.requests)
        got: dict[int, list[Any]] = defaultdict(list)
        for request in new:
            tools = [t["function"]["name"] for t in request.tools] if request.tools else None
            got[request.agent_id].append((request.messages, tools))
        for who, am in self.model.items():
            seen = got.pop(self.agents[who].agent_id, [])
            assert seen == am.gens, f"{who}: the model saw a different prompt"
            am.gens = []
        assert not got

    def _check_completions(self, who: str) -> None:
        """One completion and one final chunk, with the right fields, per finished turn."""
        am, rec = self.model[who], self.rec[who]
        counts = Counter(r.turn_id for r in rec.results)
        assert all(c == 1 for c in counts.values()), counts
        assert [r.turn_id for r in rec.results] == [t.turn_id for t in am.completed]
        for result, turn in zip(rec.results, am.completed, strict=True):
            assert result.status.value == turn.status, (result, turn)
            assert result.error_code == turn.error_code, (result, turn)
            assert result.pause_count == turn.pause_count, (result, turn)
            assert result.paused_duration_s == pytest.approx(turn.paused_s, abs=1e-9)
            assert result.text == turn.reply, (result, turn)
            assert (result.tokens_generated > 0) == turn.generated, (result, turn)
            assert result.debug_info is not None
            nodes = result.debug_info["nodes"]
            assert [(n["name"], n["exit_route"]) for n in nodes] == [
                (name, route) for name, route, _ in turn.nodes
            ]
            for entry, (name, _, rejected) in zip(nodes, turn.nodes, strict=True):
                if name == "hub":
                    assert "diagnostics" not in entry  # a Pause node's entry
                if rejected is not None:  # undeclared calls are recorded as rejected
                    names = [r["tool_name"] for r in entry["diagnostics"]["rejected_calls"]]
                    assert names == rejected, (entry, rejected)
        check_answer_chunks(rec.chunks, rec.results, None if am.turn is None else am.turn.reply)


class RemoteToolCallMachine(ToolCallMachine):
    """The same machine over the wire protocol: a server on a background thread hosts
    an engine with the same mock model and clock, and the host is a `tl.connect` client."""

    def _make_engine(self, engine_settings: tl.EngineSettings) -> Any:
        self.server = BackgroundServer(
            lambda: AsyncEngine(self.mock, clock=self.clock, settings=engine_settings)
        )
        return tl.connect(*self.server.address)

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self.server.close()


ToolCallMachine.TestCase.settings = settings(
    max_examples=110,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestToolCallMachine = ToolCallMachine.TestCase
RemoteToolCallMachine.TestCase.settings = settings(
    max_examples=20,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestRemoteToolCallMachine = RemoteToolCallMachine.TestCase


# --------------------------------------------------------------------------------------------
# Hand-picked runs of the same machine: every disposition, every batch refusal, the handlers and
# the timeouts are reached on every run, whatever the random search explores. Expectations come
# from the model (checked after every step), plus a few literal ones from the reference.
# --------------------------------------------------------------------------------------------

NO_CALLS: Plan = ("", [])
PORCH = ("set_light", {"name": "porch", "on": True})
TIME: tuple[str, dict[str, Any]] = ("get_time", {})
LAUNCH = (UNDECLARED, {"target": "moon"})


def step(m: ToolCallMachine, name: str, *args: Any) -> None:
    getattr(m, name)(*args)
    m.engine_agrees_with_model()


def pause_of(m: ToolCallMachine, who: str = "A") -> PauseModel | None:
    turn = m.model[who].turn
    return turn.pause if turn is not None else None


def at_hub(m: ToolCallMachine) -> None:
    """Agent A parked at its hub, starting a new turn if needed."""
    if m.model["A"].turn is None:
        step(m, "send_message", "A", "next", NO_CALLS)
    pause = pause_of(m)
    assert pause is not None and pause.node == "hub"


def jump(m: ToolCallMachine, node: str, *calls: tuple[str, dict[str, Any]]) -> None:
    at_hub(m)
    step(m, "resume_with", "A", node, ("hmm", list(calls)), [])


def pending(m: ToolCallMachine, who: str = "A") -> list[str]:
    pause = pause_of(m, who)
    assert pause is not None
    return [c.cid.bound() for c in pause.calls]


def scenario_every_disposition(m: ToolCallMachine) -> None:
    """The dispositions table row by row: two declared calls and an undeclared one at each
    ToolCall node."""
    for node, spec in TOOL_NODES.items():
        jump(m, node, PORCH, LAUNCH, TIME)
        _, pauses, closed = DISPOSITIONS[spec.disposition]
        pause = pause_of(m)
        assert (pause is not None and pause.node == node) == pauses, node
        if pauses:
            ids = pending(m)
            results = (
                [(cid, f"result {i}") for i, cid in enumerate(ids)] if closed == "host" else []
            )
            step(m, "resume_with", "A", "", NO_CALLS, results[::-1])
    told = {e.disposition for e in m.rec["A"].events}
    assert told == {"notify", "notify_and_acknowledge", "pause", "pause_and_acknowledge"} | {
        "await_result"
    }
    assert all(e.tool_name in DECLARED for e in m.rec["A"].events)


def scenario_bad_batches_then_good(m: ToolCallMachine) -> None:
    """Each batch refusal is 3016 and changes nothing; then a correct batch works."""
    jump(m, "t_notify", TIME)
    (past,) = [c.cid.bound() for c in m.model["A"].calls]
    jump(m, "t_await", PORCH, TIME)
    c1, c2 = pending(m)
    following = f"c{int(c2[1:], 16) + 1:08x}"
    bad = [
        [],  # empty on an AwaitResult pause
        [(c1, "a")],  # missing
        [(c1, "a"), (c2, "b"), (past, "c")],  # unknown: an earlier call's id
        [(c1, "a"), (c2, "b"), (following, "c")],  # unknown: the id the next call would get
        [(past, "a"), (c2, "b")],  # one swapped for an unknown one
        [(c1, "a"), (c2, "b"), (c1, "c")],  # duplicate
        [(c1, "x" * (MAX_RESULT_BYTES + 1)), (c2, "b")],  # one byte over
        [(c1, "é" * (MAX_RESULT_BYTES // 2) + "x"), (c2, "b")],  # over in bytes, not in chars
    ]
    for batch in bad:
        for target in ("", "answer"):
            step(m, "resume_with", "A", target, NO_CALLS, batch)
            assert pause_of(m) is not None and pause_of(m).node == "t_await"  # type: ignore[union-attr]
    step(m, "resume_with", "A", "nope", NO_CALLS, [(c1, "a"), (c2, "b")])  # 3005, still paused
    at_limit = [(c2, "é" * (MAX_RESULT_BYTES // 2)), (c1, "x" * MAX_RESULT_BYTES)]
    step(m, "resume_with", "A", "", NO_CALLS, at_limit)  # exactly 64 KiB each: accepted
    # Pause / PauseAndAcknowledge: results are refused, an empty batch is a plain continue.
    for node in ("t_pause", "t_pack"):
        jump(m, node, TIME)
        (cid,) = pending(m)
        step(m, "resume_with", "A", "", NO_CALLS, [(cid, "r")])
        step(m, "resume_with", "A", "", NO_CALLS, [])
    at_hub(m)
    step(m, "resume_with", "A", "", NO_CALLS, [(past, "r")])  # a Pause node's pause too
    a_results = m.rec["A"].results
    assert [r.status.value for r in a_results] == ["success"] * len(a_results)


def scenario_registered_tools(m: ToolCallMachine) -> None:
    """Registered handlers: AwaitResult resumes with the handlers' results; Pause runs them for
    side effects; never for non-pausing dispositions; a refused automatic resume keeps the batch."""
    step(m, "register", "A", "set_light", "echo")
    step(m, "register", "A", "get_time", "echo")
    jump(m, "t_await", PORCH, TIME)
    assert pause_of(m).node == "hub" and len(m.rec["A"].handled) == 2  # type: ignore[union-attr]
    jump(m, "t_pause", TIME)
    assert pause_of(m).node == "hub" and len(m.rec["A"].handled) == 3  # type: ignore[union-attr]
    jump(m, "t_notify", TIME, PORCH)
    jump(m, "t_nack", TIME)
    assert len(m.rec["A"].handled) == 3
    step(m, "register", "A", "get_time", "huge")
    jump(m, "t_await_to", TIME)
    assert m.agents["A"].has_paused_tool_batch()
    step(m, "retry_batch", "A")  # 3016 again, changes nothing
    step(m, "advance_clock", 1.0)  # the timeout closes the call and goes on to answer
    step(m, "register", "A", "set_light", None)
    jump(m, "t_await", PORCH, TIME)  # set_light has no handler: nothing runs
    assert pause_of(m).node == "t_await" and len(m.rec["A"].handled) == 4  # type: ignore[union-attr]
    step(m, "resume_with", "A", "", NO_CALLS, [(cid, "manual") for cid in pending(m)])
    step(m, "retry_batch", "A")  # nothing kept
    step(m, "register", "B", "get_time", "echo")
    step(m, "send_message", "B", "time?", ("", [TIME, LAUNCH]))  # B starts at t_await
    assert pause_of(m, "B").node == "hub" and len(m.rec["B"].handled) == 1  # type: ignore[union-attr]


def scenario_timeouts(m: ToolCallMachine) -> None:
    """Timeouts of ToolCall pauses: with a timeout_exit the calls are closed with a timeout result
    and the graph goes on; without one the turn ends pause_timed_out and keeps its exchange."""
    jump(m, "t_await_to", PORCH, TIME)
    step(m, "advance_clock", 0.75)
    step(m, "advance_clock", 0.25)
    jump(m, "t_await_end", TIME)
    step(m, "advance_to_next_deadline", 0.0)
    jump(m, "t_pack", TIME)
    step(m, "advance_clock", 0.25)
    jump(m, "t_pause", TIME)
    step(m, "advance_clock", 2.0)
    at_hub(m)
    step(m, "resume_with", "A", "", NO_CALLS, [])
    assert [r.status.value for r in m.rec["A"].results] == [
        "success",
        "pause_timed_out",
        "success",
        "pause_timed_out",
        "success",
    ]
    timed_out = [
        msg
        for msg in m.mock.requests[-1].messages
        if msg["role"] == "tool" and msg["content"] == TIMEOUT_RESULT
    ]
    assert len(timed_out) == 3  # two from t_await_to, one kept from t_await_end
    # Races: results racing the deadline (the head start lets the resume win, usually), and
    # two resumes racing with the same batch.
    jump(m, "t_await_to", TIME)
    step(m, "race", "timeout", 0.002, random.Random(1))
    jump(m, "t_await_end", PORCH, TIME)
    step(m, "race", "two_resumes", 0.0, random.Random(2))


def scenario_ids_over_rounds_and_turns(m: ToolCallMachine) -> None:
    """One turn loops hub -> ToolCall -> hub until max_steps_per_turn ends it (4003); ids keep
    increasing across rounds, turns, hidden and visible dispositions."""
    at_hub(m)
    loop = ["t_route", "t_await", "t_notify", "t_pause", "t_route", "t_await"]
    for node in loop:
        step(m, "resume_with", "A", node, ("", [TIME, PORCH]), [])
        if m.model["A"].turn is None:
            break
        ids = pending(m)
        if pause_of(m).node == "t_await":  # type: ignore[union-attr]
            step(m, "resume_with", "A", "", NO_CALLS, [(cid, "ok") for cid in ids])
        elif pause_of(m).node == "t_pause":  # type: ignore[union-attr]
            step(m, "resume_with", "A", "", NO_CALLS, [])
    assert m.rec["A"].results[-1].error_code == MAX_STEPS_EXCEEDED
    jump(m, "t_ack", TIME)
    jump(m, "t_await", TIME)
    shown = [c.cid.value for c in m.model["A"].calls if c.cid.value is not None]
    assert len(shown) == len(set(shown)) and shown == sorted(shown)
    assert all(CALL_ID.fullmatch(cid) for cid in shown)


SCENARIOS = {
    "every_disposition": scenario_every_disposition,
    "bad_batches_then_good": scenario_bad_batches_then_good,
    "registered_tools": scenario_registered_tools,
    "timeouts": scenario_timeouts,
    "ids_over_rounds_and_turns": scenario_ids_over_rounds_and_turns,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
@pytest.mark.parametrize(
    "machine_class", [ToolCallMachine, RemoteToolCallMachine], ids=["embedded", "remote"]
)
def test_scenario(machine_class: type[ToolCallMachine], name: str) -> None:
    machine = machine_class()
    try:
        machine.open_a_turn("hello")
        machine.engine_agrees_with_model()
        SCENARIOS[name](machine)
    finally:
        machine.teardown()
