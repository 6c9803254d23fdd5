"""Property tests of the agent API against an independent reference model (the pages
docs/reference/turns.md, errors.md and pauses.md).

Three parts:

* `AgentMachine`, a hypothesis `RuleBasedStateMachine` that drives the public blocking API
  (`turnloom.Engine` on a `VirtualClock`) with send / resume / jump / change_params / cancel /
  clock advances / races / destroy, and checks every answer against a reference model written
  here from the reference pages alone (turn states, error codes, rejections that change nothing,
  one completion per turn, answer chunks, changes while paused, pause timeouts, paused time,
  races, max steps). Nothing from `turnloom.states` or the engine internals is used to compute
  expectations.
* `test_scenario`: hand-picked runs of the same machine, so that the timeout, stale-deadline,
  max-steps and change-while-paused paths are exercised on every run whatever the random search
  explores.
* An exhaustive (state x trigger x has_timeout_exit) test of `turnloom.states.fire` against the
  transition table, written out literally below.

Where the reference is silent the model assumes (and says so where it is used): replies of one turn
are joined with "\n"; the mock model echoes the last user message as "You said: ..."; a failed
turn, like a cancelled one, leaves nothing in the dialog; and calls made from one host thread
(`*_async` included) reach the engine in the order they were made, so in the race rules only
the engine's own concurrency (a running turn, a firing deadline) is racy.

Graph of both agents (same nodes, different start nodes):

    intro  CannedResponse(["intro"])                       -> gate
    gate   Pause(no timeout; timeout_exit=fallback unused)  -> maybe
    maybe  Pause(1000 ms, timeout_exit=fallback)            -> strict
    strict Pause(500 ms, no timeout_exit)                   -> answer
    answer Generate (mock echo)                             -> END
    fallback CannedResponse(["fallback"])                   -> END

Agent "A" starts at intro (turns pause 1..n times), agent "B" starts at answer (0 pauses).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
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
from tests.helpers import check_answer_chunks
from turnloom.states import IllegalTransition, Trigger, TurnState, fire, is_legal

# --------------------------------------------------------------------------------------------
# The reference model's own description of the graph (not read back from the engine).
# --------------------------------------------------------------------------------------------

MAX_STEPS = 6  # small on purpose: jump loops inside one turn reach max_steps_per_turn (4003)
NODES = ("intro", "gate", "maybe", "strict", "answer", "fallback")
KIND = {
    "intro": "canned",
    "gate": "pause",
    "maybe": "pause",
    "strict": "pause",
    "answer": "generate",
    "fallback": "canned",
}
NEXT = {
    "intro": "gate",
    "gate": "maybe",
    "maybe": "strict",
    "strict": "answer",
    "answer": "",
    "fallback": "",
}
#: Pause deadline in seconds (None = waits forever) and where a timeout leads ('' = END).
TIMEOUT_S: dict[str, float | None] = {"gate": None, "maybe": 1.0, "strict": 0.5}
TIMEOUT_EXIT = {"gate": "fallback", "maybe": "fallback", "strict": ""}
START = {"A": "intro", "B": "answer"}
TERMINAL = ("success", "error", "cancelled", "pause_timed_out")

# Error codes (docs/reference/errors.md#error-codes), written out rather than read from the engine.
DESTROYED, BUSY, UNKNOWN_NODE, NOT_MUTABLE, BAD_VALUE = 3002, 3004, 3005, 3006, 3007
NOT_PAUSED, BAD_TOOL_RESULTS, MAX_STEPS_EXCEEDED = 3012, 3016, 4003

TEMPLATES = ["{{human_message}}", "T:{{human_message}}", "<{{human_message}}>", "fixed"]


def build_nodes() -> dict[str, tl.NodeParams]:
    """Fresh params for the graph (the engine and the model each get their own objects)."""
    return {
        "intro": tl.CannedResponseParams(lines=["intro"], default_exit="gate"),
        "gate": tl.PauseParams(default_exit="maybe", timeout_exit="fallback"),
        "maybe": tl.PauseParams(
            pause_timeout_ms=1000, default_exit="strict", timeout_exit="fallback"
        ),
        "strict": tl.PauseParams(pause_timeout_ms=500, default_exit="answer"),
        "answer": tl.GenerateParams(),
        "fallback": tl.CannedResponseParams(lines=["fallback"]),
    }


def build_graph(start: str) -> tl.GraphDescription:
    graph = tl.GraphDescription()
    for name, params in build_nodes().items():
        graph.add_node(name, params)
    return graph.set_start_node(start).set_default_model_name("mock")


def render(template: str, text: str) -> str:
    """The Mustache templates used here only contain `{{human_message}}` variables."""
    return template.replace("{{human_message}}", text)


def user_block(text: str, rendered: str, placement: tl.Placement) -> list[dict[str, str]]:
    """Where a Generate node puts its rendered prompt relative to the user message."""
    if placement.value == "in_place_of_user":
        return [{"role": "user", "content": rendered}]
    role = "system" if placement.value.endswith("_as_system") else "user"
    extra = {"role": role, "content": rendered}
    user = {"role": "user", "content": text}
    return [extra, user] if placement.value.startswith("before_") else [user, extra]


def last_user_content(chat: list[dict[str, str]]) -> str:
    for message in reversed(chat):
        if message["role"] == "user":
            return message["content"]
    return "..."


@dataclass
class TurnModel:
    turn_id: int
    user: str
    state: str = "running"  # running | paused | one of TERMINAL (as a status)
    pause_node: str | None = None
    pause_started: float = 0.0
    pause_count: int = 0
    pause_nodes: list[str] = field(default_factory=list)
    paused_s: float = 0.0
    steps: int = 0
    reply: str = ""
    messages: list[dict[str, str]] = field(default_factory=list)
    generated: bool = False
    error_code: int | None = None
    exact: bool = True  # False when a race left the text/token details to the engine


@dataclass
class AgentModel:
    name: str
    params: dict[str, tl.NodeParams]
    destroyed: bool = False
    turn: TurnModel | None = None
    completed: list[TurnModel] = field(default_factory=list)
    dialog: list[tuple[str, list[dict[str, str]]]] = field(default_factory=list)
    paused_events: list[tuple[str, str]] = field(default_factory=list)
    resumed_nodes: list[str] = field(default_factory=list)


class Recorder:
    """Every callback of one agent (they run on the engine's loop thread)."""

    def __init__(self, agent: tl.Agent) -> None:
        self.results: list[tl.TurnResult] = []
        self.chunks: list[tuple[str, bool, bool]] = []
        self.paused: list[tuple[str, str]] = []
        self.resumed: list[tuple[str, str]] = []
        agent.set_on_turn_complete(self.results.append)
        agent.set_on_answer_text(lambda text, delta, fin: self.chunks.append((text, delta, fin)))
        agent.set_on_paused(lambda node, exit_: self.paused.append((node, exit_)))
        agent.set_on_resumed(lambda node, to: self.resumed.append((node, to)))


def event(text: str) -> None:
    """`hypothesis.event`, also usable when the machine is driven by hand (scenario tests)."""
    with contextlib.suppress(InvalidArgument):
        hypothesis_event(text)


def code_of(fn: Any, *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """('ok', value) or ('err', code)."""
    try:
        return "ok", fn(*args, **kwargs)
    except tl.TurnloomError as error:
        assert error.message, "every error carries a human-readable message"
        return "err", int(error.code)


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

WHO = st.sampled_from(["A", "A", "A", "A", "B"])
USER_TEXT = st.text(alphabet="abc XYZ", max_size=10)
LINES = st.lists(st.text(alphabet="abcdef", min_size=1, max_size=6), min_size=1, max_size=3)
ANSWER_CHANGES = st.fixed_dictionaries(
    {},
    optional={
        "system_prompt": st.sampled_from(["", "be brief", "sys"]),
        "template": st.sampled_from(TEMPLATES),
        "placement": st.sampled_from(list(tl.Placement)),
        "stream": st.booleans(),
        "sampling": st.builds(
            tl.SamplingParams,
            temperature=st.sampled_from([0.0, 0.3, 5.0]),
            top_p=st.sampled_from([0.0, 0.5, 1.0]),
            seed=st.sampled_from([-1, 0, 7]),
        ),
    },
)
MUTABLE_CHANGE = st.one_of(
    st.tuples(st.just("answer"), ANSWER_CHANGES),
    st.tuples(st.sampled_from(["intro", "fallback"]), st.fixed_dictionaries({"lines": LINES})),
)
#: (node, fields, expected code). Structural (3006), out of range (3007), unknown node (3005).
REJECTED_CHANGES: list[tuple[str, dict[str, Any], int]] = [
    ("maybe", {"timeout_exit": "answer"}, NOT_MUTABLE),
    ("maybe", {"timeout_exit": ""}, NOT_MUTABLE),
    ("strict", {"timeout_exit": "fallback"}, NOT_MUTABLE),
    ("maybe", {"pause_timeout_ms": 2000}, NOT_MUTABLE),
    ("strict", {"pause_timeout_ms": 0}, NOT_MUTABLE),
    ("gate", {"pause_timeout_ms": 5}, NOT_MUTABLE),
    ("gate", {"default_exit": ""}, NOT_MUTABLE),
    ("answer", {"default_exit": "fallback"}, NOT_MUTABLE),
    ("answer", {"model_name": "mock"}, NOT_MUTABLE),
    ("intro", {"default_exit": "answer"}, NOT_MUTABLE),
    ("fallback", {"default_exit": "gate"}, NOT_MUTABLE),
    ("answer", {"sampling": tl.SamplingParams(temperature=-1.0)}, BAD_VALUE),
    ("answer", {"sampling": tl.SamplingParams(top_p=1.5)}, BAD_VALUE),
    ("answer", {"sampling": tl.SamplingParams(max_tokens=0)}, BAD_VALUE),
    ("answer", {"template": "{{/x}}"}, BAD_VALUE),
    ("answer", {"system_prompt": 5}, BAD_VALUE),
    ("intro", {"lines": []}, BAD_VALUE),
    ("fallback", {"lines": []}, BAD_VALUE),
    ("fallback", {"lines": ["ok", 3]}, BAD_VALUE),
    ("nope", {"lines": ["x"]}, UNKNOWN_NODE),
    ("Answer", {"system_prompt": "x"}, UNKNOWN_NODE),
]
TOOL_BATCHES = st.sampled_from(
    [
        [{"call_id": "c00000000", "result": "r"}],
        [tl.ToolResult("c00000001", "x")],
        [("c00000000", "a"), ("c00000001", "b")],
    ]
)
ADVANCE = st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 2.0])


# --------------------------------------------------------------------------------------------
# The state machine
# --------------------------------------------------------------------------------------------


class AgentMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = tl.VirtualClock()
        self.mock = tl.MockModel("mock")
        self.engine = tl.Engine(
            self.mock, clock=self.clock, settings=tl.EngineSettings(pause_stall_warn_ms=0)
        )
        self.now = 0.0
        self.turn_ids = itertools.count(1)  # engine-wide, consumed by each started turn
        self.steps_done = 0
        self.pending_gens: list[tuple[list[dict[str, str]], tl.SamplingParams]] = []
        self.agents: dict[str, tl.Agent] = {}
        self.rec: dict[str, Recorder] = {}
        self.model: dict[str, AgentModel] = {}
        for name, start in START.items():
            agent = self.engine.create_agent(build_graph(start), max_steps_per_turn=MAX_STEPS)
            self.agents[name] = agent
            self.rec[name] = Recorder(agent)
            self.model[name] = AgentModel(name, build_nodes())

    def teardown(self) -> None:
        self.engine.close()
        # Closing the engine cancels every open turn: exactly one more completion each.
        for who, am in self.model.items():
            if am.turn is not None:
                self._cancel(am)
            self._check_completions(who)

    # --- the reference model -----------------------------------------------------------------

    def _reply(self, turn: TurnModel, text: str) -> None:
        if turn.reply:
            turn.reply += "\n"
        turn.reply += text
        turn.messages.append({"role": "assistant", "content": text})

    def _project(self, am: AgentModel, turn: TurnModel, p: Any) -> list[dict[str, str]]:
        chat: list[dict[str, str]] = []
        if p.system_prompt:
            chat.append({"role": "system", "content": p.system_prompt})
        for user, messages in am.dialog:
            chat.append({"role": "user", "content": user})
            chat.extend(messages)
        chat.extend(user_block(turn.user, render(p.template, turn.user), p.placement))
        chat.extend(turn.messages)
        return chat

    def _end(self, am: AgentModel, turn: TurnModel, status: str, code: int | None = None) -> None:
        assert status in TERMINAL
        event(f"turn ended {status} after {turn.pause_count} pause(s)")
        turn.state = status
        turn.error_code = code
        turn.pause_node = None
        am.turn = None
        am.completed.append(turn)
        if status in ("success", "pause_timed_out"):
            # A timed-out turn keeps its partial interaction. (The reference is silent on
            # failed turns; like cancelled ones they are modelled as leaving no trace.)
            am.dialog.append((turn.user, list(turn.messages)))

    def _end_pause(self, turn: TurnModel, at: float) -> str:
        assert turn.state == "paused" and turn.pause_node is not None
        node = turn.pause_node
        turn.paused_s += at - turn.pause_started
        turn.state = "running"
        turn.pause_node = None
        return node

    def _walk(self, am: AgentModel, turn: TurnModel, node: str) -> None:
        while node:
            if turn.steps >= MAX_STEPS:
                self._end(am, turn, "error", MAX_STEPS_EXCEEDED)
                return
            turn.steps += 1
            p = am.params[node]
            kind = KIND[node]
            if kind == "pause":
                turn.state = "paused"
                turn.pause_node = node
                turn.pause_started = self.now
                turn.pause_count += 1
                turn.pause_nodes.append(node)
                am.paused_events.append((node, "default"))
                return
            if kind == "canned":
                self._reply(turn, p.lines[0])
            else:
                chat = self._project(am, turn, p)
                self.pending_gens.append((chat, copy.deepcopy(p.sampling)))
                self._reply(turn, "You said: " + last_user_content(chat))
                turn.generated = True
            node = NEXT[node]
        self._end(am, turn, "success")

    def _start(self, am: AgentModel, text: str, turn_id: int | None = None) -> TurnModel:
        turn = TurnModel(next(self.turn_ids) if turn_id is None else turn_id, text)
        am.turn = turn
        self._walk(am, turn, START[am.name])
        return turn

    def _resume(self, am: AgentModel, resume_node: str) -> None:
        turn = am.turn
        assert turn is not None
        node = self._end_pause(turn, self.now)
        am.resumed_nodes.append(node)
        self._walk(am, turn, resume_node or NEXT[node])

    def _cancel(self, am: AgentModel) -> None:
        turn = am.turn
        assert turn is not None
        if turn.state == "paused":
            self._end_pause(turn, self.now)
        self._end(am, turn, "cancelled")

    # --- helpers on the engine side ----------------------------------------------------------

    def _live(self, who: str) -> bool:
        return not self.model[who].destroyed

    def _snapshot(self, who: str) -> tuple[Any, ...]:
        """Everything a rejected operation must leave unchanged."""
        agent = self.agents[who]
        futures = [agent.get_params_async(n) for n in NODES]
        params = tuple(f.result(5) for f in futures)
        step = agent.wait(timeout=5)
        rec = self.rec[who]
        return (
            params,
            step.pause,
            step.result,
            agent.last_result,
            len(rec.results),
            len(rec.chunks),
            len(rec.paused),
            len(rec.resumed),
            len(self.mock.requests),
            self.clock.pending(),
        )

    def _expect_rejected(self, who: str, code: int, fn: Any, *args: Any, **kwargs: Any) -> None:
        before = self._snapshot(who) if self._live(who) else None
        outcome = code_of(fn, *args, **kwargs)
        assert outcome == ("err", code), f"expected error {code}, got {outcome}"
        if before is not None:
            assert self._snapshot(who) == before, "a rejected operation changed something"

    def _settled(self, who: str, step: tl.Step | None, requests_before: int | None) -> None:
        """After an operation: the returned step (and the generations) match the model."""
        am = self.model[who]
        now_step = self.agents[who].wait(timeout=5)
        for s in (step, now_step) if step is not None else (now_step,):
            if am.turn is not None:
                assert am.turn.state == "paused"
                assert s.pause is not None and s.result is None, s
                assert s.pause.node_name == am.turn.pause_node
                assert s.pause.pending_exit == "default"
                assert s.pause.pending_target == NEXT[am.turn.pause_node]
            elif not am.completed:
                assert s.pause is None and s.result is None, s  # no turn yet
            else:
                assert s.pause is None and s.result is not None, s
                assert s.result.turn_id == am.completed[-1].turn_id
        if requests_before is not None:
            self._check_generations(requests_before)

    def _check_generations(self, requests_before: int) -> None:
        """The prompts the mock model received since `requests_before` are the model's."""
        got = [(r.messages, r.sampling) for r in list(self.mock.requests)[requests_before:]]
        assert got == self.pending_gens, "the model saw a different prompt (a change or the dialog)"
        self.pending_gens = []

    # --- rules ---------------------------------------------------------------------------------

    @initialize(text=USER_TEXT)
    def open_a_turn(self, text: str) -> None:
        """Every run starts with agent A's turn parked at its first pause."""
        self.send_message("A", text)

    @rule(who=WHO, text=USER_TEXT)
    def send_message(self, who: str, text: str) -> None:
        self.steps_done += 1
        am, agent = self.model[who], self.agents[who]
        if am.destroyed:
            self._expect_rejected(who, DESTROYED, agent.send_message, text, timeout=5)
        elif am.turn is not None:
            self._expect_rejected(who, BUSY, agent.send_message, text, timeout=5)
        else:
            before = len(self.mock.requests)
            step = agent.send_message(text, timeout=5)
            self._start(am, text)
            self._settled(who, step, before)

    def _resume_rule(self, who: str, node: str, results: Any) -> None:
        am, agent = self.model[who], self.agents[who]
        if am.destroyed:
            self._expect_rejected(who, DESTROYED, agent.resume, node, results, timeout=5)
        elif am.turn is None:
            self._expect_rejected(who, NOT_PAUSED, agent.resume, node, results, timeout=5)
        elif node and node not in NODES:
            self._expect_rejected(who, UNKNOWN_NODE, agent.resume, node, results, timeout=5)
        elif results:
            self._expect_rejected(who, BAD_TOOL_RESULTS, agent.resume, node, results, timeout=5)
        else:
            before = len(self.mock.requests)
            step = agent.resume(node, results, timeout=5)
            self._resume(am, node)
            self._settled(who, step, before)

    @precondition(lambda self: self._paused_at("A", *TIMEOUT_S))
    @rule(node=st.sampled_from(("", "", *NODES)), empty_batch=st.sampled_from([(), []]))
    def resume(self, node: str, empty_batch: Any) -> None:
        """Plain resume ('') or jump; an empty batch on a Pause-node pause is a
        plain continue. (Resumes of agents that are not paused are in `probe`.)"""
        self.steps_done += 1
        self._resume_rule("A", node, empty_batch)

    @rule(who=WHO, change=MUTABLE_CHANGE, as_object=st.booleans())
    def change_mutable(self, who: str, change: tuple[str, dict[str, Any]], as_object: bool) -> None:
        self.steps_done += 1
        node, fields = change
        am, agent = self.model[who], self.agents[who]
        proposed = dataclasses.replace(copy.deepcopy(am.params[node]), **copy.deepcopy(fields))
        if as_object:
            payload: Any = copy.deepcopy(proposed)
        else:  # the wire-friendly form: enum values as strings, nested params as dicts
            payload = {
                key: value.value
                if isinstance(value, tl.Placement)
                else dataclasses.asdict(value)
                if isinstance(value, tl.SamplingParams)
                else copy.deepcopy(value)
                for key, value in fields.items()
            }
        if am.destroyed:
            self._expect_rejected(who, DESTROYED, agent.change_params, node, payload)
            return
        assert am.turn is None or am.turn.state == "paused"  # never observed running here
        agent.change_params(node, payload)
        am.params[node] = proposed
        # The engine keeps its own copy: mutating what we passed changes nothing.
        if as_object:
            if isinstance(payload, tl.CannedResponseParams):
                payload.lines.append("mutated")
            else:
                payload.system_prompt = "mutated"
                payload.sampling.temperature = 0.123
        elif "lines" in payload:
            payload["lines"].append("mutated")
        assert agent.get_params(node) == proposed

    def _change_structural_to_same_value(self, who: str, node: str) -> None:
        """Only a structural field that *differs* is 3006; restating it is a no-op."""
        am, agent = self.model[who], self.agents[who]
        fields: dict[str, Any] = {"default_exit": NEXT[node]}
        if KIND[node] == "pause":
            timeout = TIMEOUT_S[node]
            fields["pause_timeout_ms"] = int(timeout * 1000) if timeout else 0
            fields["timeout_exit"] = TIMEOUT_EXIT[node]
        if am.destroyed:
            self._expect_rejected(who, DESTROYED, agent.change_params, node, fields)
            return
        before = self._snapshot(who)
        agent.change_params(node, fields)
        assert self._snapshot(who) == before

    def _change_rejected(
        self, who: str, case: tuple[str, dict[str, Any], int], as_object: bool
    ) -> None:
        node, fields, code = case
        am, agent = self.model[who], self.agents[who]
        payload: Any = copy.deepcopy(fields)
        if as_object:
            base = am.params.get(node) or (
                tl.GenerateParams() if "system_prompt" in fields else tl.CannedResponseParams()
            )
            payload = copy.deepcopy(base)
            for key, value in copy.deepcopy(fields).items():
                setattr(payload, key, value)
        expected = DESTROYED if am.destroyed else code
        self._expect_rejected(who, expected, agent.change_params, node, payload)

    @rule(
        who=WHO,
        case=st.one_of(
            st.tuples(st.just("change"), st.sampled_from(REJECTED_CHANGES), st.booleans()),
            st.tuples(st.just("same"), st.sampled_from(NODES), st.just(False)),
            st.tuples(st.just("get"), st.sampled_from(["nope", ""]), st.just(False)),
            st.tuples(
                st.just("resume"),
                st.one_of(
                    st.tuples(st.just(""), st.just(())),
                    st.tuples(st.sampled_from(["nope", "Gate", "answer ", "END"]), st.just(())),
                    st.tuples(st.sampled_from(["", "answer", "gate"]), TOOL_BATCHES),
                ),
                st.just(False),
            ),
        ),
    )
    def probe(self, who: str, case: tuple[str, Any, bool]) -> None:
        """Calls that must be refused, or be no-ops, and change nothing: change_params
        3005/3006/3007, restating a structural value, get_params 3005, resume to an unknown
        node 3005 or with tool results on a Pause-node pause 3016, resume when not paused
        3012 (a plain resume of a paused turn is just a resume)."""
        self.steps_done += 1
        kind, arg, as_object = case
        if kind == "resume":
            self._resume_rule(who, *arg)
        elif kind == "same":
            self._change_structural_to_same_value(who, arg)
        elif kind == "get":
            code = DESTROYED if self.model[who].destroyed else UNKNOWN_NODE
            self._expect_rejected(who, code, self.agents[who].get_params, arg)
        else:
            self._change_rejected(who, arg, as_object)

    @rule(who=WHO)
    def cancel(self, who: str) -> None:
        self.steps_done += 1
        am, agent = self.model[who], self.agents[who]
        if am.destroyed:
            self._expect_rejected(who, DESTROYED, agent.cancel)
        elif am.turn is None:
            before = self._snapshot(who)
            assert agent.cancel() is False  # "nothing to cancel", not an error
            assert self._snapshot(who) == before
        else:
            assert agent.cancel() is True
            self._cancel(am)
            self._settled(who, None, len(self.mock.requests))

    def _timeouts_until(self, target: float) -> list[tuple[AgentModel, str]]:
        """Fire (in the model) every pause deadline <= target; return the walks to continue."""
        fired = []
        for am in self.model.values():
            turn = am.turn
            if turn is None or turn.state != "paused":
                continue
            timeout = TIMEOUT_S[turn.pause_node or ""]
            if timeout is not None and turn.pause_started + timeout <= target:
                fired.append((turn.pause_started + timeout, am))
        walks = []
        for deadline, am in sorted(fired, key=lambda x: x[0]):
            turn = am.turn
            assert turn is not None
            node = self._end_pause(turn, deadline)
            if TIMEOUT_EXIT[node]:
                am.resumed_nodes.append(node)
                walks.append((am, TIMEOUT_EXIT[node]))
            else:
                self._end(am, turn, "pause_timed_out")
        return walks

    @rule(seconds=ADVANCE)
    def advance_clock(self, seconds: float) -> None:
        """Pause timeouts on the engine's clock: crossing a deadline continues or ends the turn."""
        self.steps_done += 1
        before = len(self.mock.requests)
        self.clock.advance(seconds)
        walks = self._timeouts_until(self.now + seconds)
        self.now += seconds
        for am, node in walks:
            assert am.turn is not None
            self._walk(am, am.turn, node)
        for who in self.agents:
            if self._live(who):
                self._settled(who, None, None)
        self._check_generations(before)

    @rule(offset=st.sampled_from([-0.25, 0.0, 0.0, 0.25]))
    def advance_to_next_deadline(self, offset: float) -> None:
        """Move the clock to just before, exactly onto, or just past the next pause deadline."""
        deadlines = [
            am.turn.pause_started + timeout
            for am in self.model.values()
            if am.turn is not None
            and am.turn.pause_node is not None
            and (timeout := TIMEOUT_S[am.turn.pause_node]) is not None
        ]
        if not deadlines:
            self.advance_clock(0.25)
            return
        self.advance_clock(max(0.0, min(deadlines) - self.now + offset))

    @precondition(lambda self: self.steps_done >= 30)  # near the end: every op then is 3002
    @rule(who=st.sampled_from(["A", "B"]))
    def destroy(self, who: str) -> None:
        self.steps_done += 1
        am, agent = self.model[who], self.agents[who]
        if am.destroyed:
            self._expect_rejected(who, DESTROYED, agent.destroy)
            return
        agent.destroy()
        if am.turn is not None:
            self._cancel(am)
        am.destroyed = True

    # --- races (docs/reference/pauses.md#races) -----------------------------------------------

    def _paused_at(self, who: str, *nodes: str) -> bool:
        am = self.model[who]
        return (
            not am.destroyed
            and am.turn is not None
            and am.turn.state == "paused"
            and am.turn.pause_node in nodes
        )

    @precondition(lambda self: self._paused_at("A", "gate", "maybe", "strict"))
    @rule(
        kind=st.sampled_from(["timeout", "timeout", "two_resumes", "cancel"]),
        node=st.sampled_from(("", "", *NODES)),
        extra=st.sampled_from([0.0, 0.25]),
        head_start=st.sampled_from([0.0, 0.002]),
    )
    def race_on_pause(self, kind: str, node: str, extra: float, head_start: float) -> None:
        """Races and one completion per turn under concurrency, on agent A's pause."""
        self.steps_done += 1
        if kind == "timeout" and self._paused_at("A", "maybe", "strict"):
            self._race_resume_against_timeout(
                node if node in ("answer", "fallback") else "", extra, head_start
            )
        elif kind == "cancel":
            self._race_resume_then_cancel(node)
        else:
            self._race_two_resumes(node if node in ("answer", "fallback") else "")

    def _race_resume_against_timeout(self, node: str, extra: float, head_start: float) -> None:
        """A resume and a pause deadline race: exactly one wins; a losing resume is 3012."""
        am, agent = self.model["A"], self.agents["A"]
        turn = am.turn
        assert turn is not None and turn.pause_node is not None
        target = node
        if not target and NEXT[turn.pause_node] != "answer":
            target = "answer"  # the winner must not pause again: its start time would be racy
        timeout = TIMEOUT_S[turn.pause_node]
        assert timeout is not None
        seconds = turn.pause_started + timeout - self.now + extra
        before = len(self.mock.requests)
        future = agent.resume_async(target)
        if head_start:  # none: the deadline usually wins; a head start lets the resume win
            time.sleep(head_start)
        self.clock.advance(seconds)
        try:
            step = future.result(5)
        except tl.TurnloomError as error:
            assert int(error.code) == NOT_PAUSED, error
            step = None
        event(f"resume vs timeout: {'resume' if step is not None else 'timeout'} won")
        if step is not None:  # the resume won; the timer must be a no-op
            self._resume(am, target)
            self._timeouts_until(self.now + seconds)
            self.now += seconds
        else:  # the timeout won
            walks = self._timeouts_until(self.now + seconds)
            assert am.turn is None or am.turn.state != "paused"
            self.now += seconds
            for am_, next_node in walks:
                assert am_.turn is not None
                self._walk(am_, am_.turn, next_node)
        self._settled("A", step, before)

    def _race_two_resumes(self, node: str) -> None:
        """Two resumes of one pause: one wins, the other gets 3012."""
        am, agent = self.model["A"], self.agents["A"]
        assert am.turn is not None and am.turn.pause_node is not None
        target = node
        if not target and NEXT[am.turn.pause_node] != "answer":
            target = "fallback"  # keep the winner from pausing again (then a 2nd resume is legal)
        before = len(self.mock.requests)
        futures = [agent.resume_async(target), agent.resume_async(target)]
        outcomes = []
        for future in futures:
            try:
                outcomes.append(("ok", future.result(5)))
            except tl.TurnloomError as error:
                outcomes.append(("err", int(error.code)))
        # One wins, the other is 3012; calls reach the engine in order: the first wins.
        assert [o[0] for o in outcomes] == ["ok", "err"], outcomes
        assert outcomes[1][1] == NOT_PAUSED, outcomes
        self._resume(am, target)
        self._settled("A", next(o[1] for o in outcomes if o[0] == "ok"), before)

    def _race_resume_then_cancel(self, node: str) -> None:
        """resume_async then cancel(): the turn ends once, cancelled unless it already ended."""
        am, agent = self.model["A"], self.agents["A"]
        saved = copy.deepcopy(am)
        old = copy.deepcopy(am.turn)
        assert old is not None and old.pause_node is not None
        before = len(self.mock.requests)
        future = agent.resume_async(node)
        cancelled = agent.cancel()
        outcome = code_of(future.result, 5)
        assert outcome[0] == "ok", f"the resume was made first, yet got {outcome}"
        agent.wait(timeout=5)
        event(f"resume then cancel: cancel() -> {cancelled}")
        self._resume(am, node)  # what the turn does when nothing cancels it
        normal = am.completed[-1] if am.turn is None else am.turn
        if not cancelled:
            assert am.turn is None, "cancel() said no open turn, yet the model's turn is open"
            self._settled("A", None, before)
            return
        self.pending_gens = []
        result = self.rec["A"].results[-1]
        assert result.turn_id == old.turn_id and result.status.value == "cancelled"
        assert result.text.startswith(old.reply) and normal.reply.startswith(result.text)
        assert old.pause_count <= result.pause_count <= normal.pause_count
        self.model["A"] = am = saved
        turn = am.turn
        assert turn is not None
        turn.paused_s += self.now - turn.pause_started  # every later pause lasted 0 s
        turn.state, turn.pause_node, turn.exact = "running", None, False
        turn.reply = result.text
        am.paused_events.extend(
            (n, "default") for n in normal.pause_nodes[old.pause_count : result.pause_count]
        )
        turn.pause_count = result.pause_count
        am.resumed_nodes.append(old.pause_node)
        self._end(am, turn, "cancelled")
        self._settled("A", None, None)

    @precondition(lambda self: self._paused_at("A", *TIMEOUT_S) or self._live("B"))
    @rule(who=st.sampled_from(["A", "B"]), text=USER_TEXT)
    def race_change_while_running(self, who: str, text: str) -> None:
        """change_params right behind a resume (A) or a send (B): 3004 while the turn is
        running or resuming (and nothing changes), else applied, before or after the turn."""
        self.steps_done += 1
        if who == "A" and not self._paused_at("A", *TIMEOUT_S):
            who = "B"
        if not self._live(who) or (who == "B" and self.model["B"].turn is not None):
            return
        am, agent = self.model[who], self.agents[who]
        prompt = f"racing {self.steps_done}"
        if am.params["answer"].system_prompt == prompt:
            return
        before = len(self.mock.requests)
        turn_future = agent.resume_async("answer") if who == "A" else agent.send_message_async(text)
        change_future = agent.change_params_async("answer", {"system_prompt": prompt})
        try:
            change_future.result(5)
            changed = True
        except tl.TurnloomError as error:
            assert int(error.code) == BUSY, error
            changed = False
        turn_future.result(5)
        agent.wait(timeout=5)
        event(f"change while running: {'applied' if changed else 'AgentBusy'}")
        turn_id = next(self.turn_ids) if who == "B" else None
        assert not self.pending_gens
        self.pending_gens = []
        if who == "A":
            self._resume(am, "answer")
        else:
            self._start(am, text, turn_id)
        with_old = self.pending_gens
        if not changed:
            self._settled(who, None, before)
            return
        assert am.turn is None, "change_params applied while the turn is paused again"
        # Calls made from one thread reach the engine loop in order, so the change was handled
        # after the resume/send: applied means the turn had already ended, and its Generate node
        # ran with the old params. (Had it been applied while the turn ran, the prompt could
        # carry the new system prompt.)
        self.pending_gens = with_old
        self._settled(who, None, before)
        am.params["answer"].system_prompt = prompt

    @precondition(lambda self: any(self._live(w) and self.model[w].turn is None for w in "AB"))
    @rule(who=WHO, text=USER_TEXT)
    def race_send_then_cancel(self, who: str, text: str) -> None:
        """send_message_async then cancel(): whichever order, exactly one completion."""
        self.steps_done += 1
        am, agent = self.model[who], self.agents[who]
        if am.destroyed or am.turn is not None:
            return
        saved = copy.deepcopy(am)
        before = len(self.mock.requests)
        future = agent.send_message_async(text)
        cancelled = agent.cancel()
        future.result(5)
        agent.wait(timeout=5)
        event(f"send then cancel: cancel() -> {cancelled}")
        normal = self._start(am, text)  # what the turn does when nothing cancels it
        if not cancelled:
            # cancel() is handled after send_message, so it found no turn only if it had ended.
            assert am.turn is None, "cancel() found no turn, but the turn is still open"
            self._settled(who, None, before)
            return
        self.pending_gens = []  # how far the generation got is racy
        result = self.rec[who].results[-1]
        assert result.turn_id == normal.turn_id
        assert result.status.value == "cancelled"
        assert normal.reply.startswith(result.text), (normal.reply, result.text)
        assert result.pause_count <= normal.pause_count
        assert result.paused_duration_s == 0.0  # no time passed
        # Rebuild the model from the observed (racy) cut point.
        self.model[who] = am = saved
        turn = TurnModel(normal.turn_id, text, exact=False)
        turn.reply = result.text
        turn.pause_count = result.pause_count
        am.paused_events.extend((n, "default") for n in normal.pause_nodes[: result.pause_count])
        self._end(am, turn, "cancelled")
        self._settled(who, None, None)

    # --- invariants ----------------------------------------------------------------------------

    @invariant()
    def engine_agrees_with_model(self) -> None:
        # Ask every live agent for its step and params at once (fewer loop round trips).
        asked = {
            who: (agent.wait_async(), [agent.get_params_async(n) for n in NODES])
            for who, agent in self.agents.items()
            if not self.model[who].destroyed
        }
        for who, am in self.model.items():
            agent, rec = self.agents[who], self.rec[who]
            self._check_completions(who)
            # Pause notifications and resumes.
            assert rec.paused == am.paused_events
            assert [node for node, _ in rec.resumed] == am.resumed_nodes
            if am.destroyed:
                assert code_of(agent.wait, timeout=5) == ("err", DESTROYED)
                assert code_of(agent.get_params, "answer") == ("err", DESTROYED)
                continue
            # The agent's state, and its params (per agent: A's changes never leak into B).
            step_future, param_futures = asked[who]
            step = step_future.result(5)
            if am.turn is None:
                assert step.pause is None
                assert step.result == agent.last_result
                if am.completed:
                    assert agent.last_result == rec.results[-1]
            else:
                assert step.pause is not None
                assert (step.pause.node_name, step.pause.pending_exit) == (
                    am.turn.pause_node,
                    "default",
                )
            for node, future in zip(NODES, param_futures, strict=True):
                assert future.result(5) == am.params[node], node

    def _check_completions(self, who: str) -> None:
        """Completions, answer chunks and paused time: every TurnResult and AnswerText chunk
        against the model."""
        am, rec = self.model[who], self.rec[who]
        # Exactly one completion per turn, only for turns that ended, in order.
        counts = Counter(r.turn_id for r in rec.results)
        assert all(c == 1 for c in counts.values()), counts
        assert [r.turn_id for r in rec.results] == [t.turn_id for t in am.completed]
        for result, turn in zip(rec.results, am.completed, strict=True):
            assert result.status.value == turn.state, (result, turn)
            assert result.error_code == turn.error_code, (result, turn)
            assert result.pause_count == turn.pause_count, (result, turn)
            assert result.paused_duration_s == pytest.approx(turn.paused_s, abs=1e-9), (
                result,
                turn,
            )
            if turn.exact:
                assert result.text == turn.reply, (result, turn)
                assert (result.tokens_generated > 0) == turn.generated, (result, turn)
        # Exactly one is_final chunk per finished turn, carrying the whole reply.
        check_answer_chunks(rec.chunks, rec.results, None if am.turn is None else am.turn.reply)


AgentMachine.TestCase.settings = settings(
    max_examples=75,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestAgentMachine = AgentMachine.TestCase


# Hand-picked runs of the same machine: the paths below are reached on every run, whatever the
# random search happens to explore. Expectations still come from the reference model, plus a few
# literal ones from docs/reference/pauses.md.

SCENARIOS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "timeout_exit_continues": [  # a timeout_exit: reply "fallback", 1.0 s paused
        ("resume", {"node": "", "empty_batch": ()}),
        ("advance_clock", {"seconds": 0.75}),
        ("advance_clock", {"seconds": 0.25}),
    ],
    "timeout_without_exit_ends_turn": [  # no timeout_exit: pause_timed_out, dialog keeps it
        ("advance_clock", {"seconds": 2.0}),  # gate waits forever
        ("resume", {"node": "strict", "empty_batch": []}),
        ("advance_clock", {"seconds": 0.25}),
        ("advance_clock", {"seconds": 0.25}),
        ("send_message", {"who": "A", "text": "again"}),
        ("resume", {"node": "answer", "empty_batch": ()}),
    ],
    "stale_deadline_is_ignored": [  # a deadline of an earlier pause never ends a later one
        ("resume", {"node": "", "empty_batch": ()}),  # maybe at t=0, deadline 1.0
        ("advance_clock", {"seconds": 0.75}),
        ("resume", {"node": "", "empty_batch": ()}),  # strict at t=0.75, deadline 1.25
        ("advance_clock", {"seconds": 0.25}),  # t=1.0: maybe's old deadline, nothing happens
        ("advance_clock", {"seconds": 0.25}),  # t=1.25: strict times out
        ("send_message", {"who": "A", "text": "again"}),
        ("resume", {"node": "maybe", "empty_batch": ()}),  # maybe at t=1.25, deadline 2.25
        ("advance_clock", {"seconds": 0.5}),
        ("resume", {"node": "maybe", "empty_batch": ()}),  # maybe again at 1.75, deadline 2.75
        ("advance_clock", {"seconds": 0.5}),  # t=2.25: the first maybe's deadline, ignored
        ("advance_clock", {"seconds": 0.5}),  # t=2.75: timeout_exit -> fallback
    ],
    "max_steps_exceeded": [  # max_steps_per_turn: 4003 on the 7th node of one turn
        ("resume", {"node": "intro", "empty_batch": ()}),
        ("resume", {"node": "intro", "empty_batch": ()}),
        ("resume", {"node": "answer", "empty_batch": ()}),
    ],
    "change_while_paused_is_seen_after_resume": [  # seen in the same turn
        (
            "change_mutable",
            {
                "who": "A",
                "change": ("answer", {"template": "T:{{human_message}}", "system_prompt": "s"}),
                "as_object": False,
            },
        ),
        (
            "change_mutable",
            {"who": "A", "change": ("fallback", {"lines": ["fb"]}), "as_object": True},
        ),
        ("resume", {"node": "maybe", "empty_batch": ()}),
        ("advance_to_next_deadline", {"offset": 0.0}),
        ("send_message", {"who": "A", "text": "more"}),
        ("resume", {"node": "answer", "empty_batch": ()}),
    ],
    "rejections_change_nothing": [  # and their codes
        ("probe", {"who": "A", "case": ("resume", ("nope", ()), False)}),
        ("probe", {"who": "A", "case": ("resume", ("", [("c00000000", "r")]), False)}),
        ("probe", {"who": "A", "case": ("change", REJECTED_CHANGES[0], True)}),
        ("probe", {"who": "A", "case": ("change", REJECTED_CHANGES[11], False)}),
        ("probe", {"who": "B", "case": ("resume", ("", ()), False)}),
        ("send_message", {"who": "A", "text": "busy"}),
        ("cancel", {"who": "B"}),
    ],
    "destroyed_agent_refuses_everything": [  # 3002
        ("destroy", {"who": "A"}),
        ("send_message", {"who": "A", "text": "x"}),
        ("cancel", {"who": "A"}),
        ("probe", {"who": "A", "case": ("get", "answer", False)}),
        ("probe", {"who": "A", "case": ("resume", ("", ()), False)}),
        ("destroy", {"who": "A"}),
        ("send_message", {"who": "B", "text": "still fine"}),
    ],
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario(name: str) -> None:
    machine = AgentMachine()
    try:
        machine.open_a_turn("hi there")
        machine.engine_agrees_with_model()
        for rule_name, kwargs in SCENARIOS[name]:
            getattr(machine, rule_name)(**kwargs)
            machine.engine_agrees_with_model()
    finally:
        machine.teardown()
    a_results = machine.rec["A"].results
    if name == "timeout_exit_continues":
        assert [(r.status.value, r.text, r.pause_count) for r in a_results] == [
            ("success", "intro\nfallback", 2)
        ]
        assert a_results[0].paused_duration_s == 1.0
    elif name == "timeout_without_exit_ends_turn":
        assert a_results[0].status.value == "pause_timed_out"
        assert a_results[0].paused_duration_s == 2.5  # 2.0 at gate + 0.5 at strict
        # The next turn's prompt still holds the timed-out interaction.
        assert machine.mock.requests[-1].messages[:2] == [
            {"role": "user", "content": "hi there"},
            {"role": "assistant", "content": "intro"},
        ]
    elif name == "stale_deadline_is_ignored":
        assert [(r.status.value, r.pause_count, r.paused_duration_s) for r in a_results] == [
            ("pause_timed_out", 3, 1.25),
            ("success", 3, 1.5),
        ]
    elif name == "max_steps_exceeded":
        assert [(r.status.value, r.error_code) for r in a_results] == [("error", 4003)]
    elif name == "change_while_paused_is_seen_after_resume":
        assert a_results[0].text == "intro\nfb"
        assert a_results[1].text == "intro\nYou said: T:more"
        assert machine.mock.requests[-1].messages[0] == {"role": "system", "content": "s"}
    elif name == "destroyed_agent_refuses_everything":
        assert [r.status.value for r in a_results] == ["cancelled"]
        assert machine.rec["B"].results[-1].text == "You said: still fine"


# --------------------------------------------------------------------------------------------
# Exhaustive state x trigger, against the transition table of docs/reference/turns.md, written
# out literally.
# --------------------------------------------------------------------------------------------

REFERENCE_STATES = (
    "idle",
    "running",
    "paused",
    "resuming",
    "done",
    "pause_timed_out",
    "cancelled",
    "failed",
)
REFERENCE_TERMINAL = ("done", "pause_timed_out", "cancelled", "failed")
REFERENCE_TRIGGERS = (
    "start",
    "pause",
    "resume",
    "proceed",
    "time_out",
    "finish",
    "fail",
    "cancel",
    "edit",
    "queue",
    "interrupt",
    "merge",
)

#: (state, trigger) -> destination; for time_out the destination depends on has_timeout_exit.
REFERENCE_TABLE: dict[tuple[str, str], str | dict[bool, str]] = {
    ("idle", "start"): "running",
    ("running", "pause"): "paused",
    ("paused", "resume"): "resuming",
    ("resuming", "proceed"): "running",
    ("paused", "time_out"): {True: "resuming", False: "pause_timed_out"},
    ("running", "finish"): "done",
    ("running", "fail"): "failed",
    ("resuming", "fail"): "failed",
    ("running", "cancel"): "cancelled",
    ("paused", "cancel"): "cancelled",
    ("resuming", "cancel"): "cancelled",
    ("idle", "edit"): "idle",  # change_params is a self-loop while idle or paused
    ("paused", "edit"): "paused",
    # A message while a turn is open (input policies): enqueue waits (a self-loop), interrupt
    # and merge end the open turn cancelled (the new turn is a new idle turn's start).
    ("running", "queue"): "running",
    ("paused", "queue"): "paused",
    ("resuming", "queue"): "resuming",
    ("running", "interrupt"): "cancelled",
    ("paused", "interrupt"): "cancelled",
    ("resuming", "interrupt"): "cancelled",
    ("running", "merge"): "cancelled",
    ("paused", "merge"): "cancelled",
    ("resuming", "merge"): "cancelled",
}


def spec_dest(state: str, trigger: str, has_timeout_exit: bool) -> str | None:
    dest = REFERENCE_TABLE.get((state, trigger))
    if isinstance(dest, dict):
        return dest[has_timeout_exit]
    return dest


def test_states_and_triggers_are_the_spec_ones() -> None:
    assert sorted(s.value for s in TurnState) == sorted(REFERENCE_STATES)
    assert sorted(t.value for t in Trigger) == sorted(REFERENCE_TRIGGERS)


@pytest.mark.parametrize("has_timeout_exit", [False, True])
@pytest.mark.parametrize("trigger", list(Trigger), ids=str)
@pytest.mark.parametrize("state", list(TurnState), ids=str)
def test_fire_follows_the_spec_table(
    state: TurnState, trigger: Trigger, has_timeout_exit: bool
) -> None:
    expected = spec_dest(state.value, trigger.value, has_timeout_exit)
    assert is_legal(state, trigger) == (expected is not None)
    for form in (trigger, trigger.value):
        turn = SimpleNamespace(state=state, has_timeout_exit=has_timeout_exit)
        if expected is None:
            with pytest.raises(IllegalTransition) as info:
                fire(turn, form)
            assert turn.state == state.value  # a rejection never changes state
            assert (info.value.trigger, info.value.state) == (trigger.value, state.value)
        else:
            assert fire(turn, form) == expected
            assert turn.state == expected


@pytest.mark.parametrize("state", REFERENCE_TERMINAL)
def test_terminal_states_accept_no_trigger(state: str) -> None:
    for trigger, flag in itertools.product(Trigger, (False, True)):
        turn = SimpleNamespace(state=TurnState(state), has_timeout_exit=flag)
        with pytest.raises(IllegalTransition):
            fire(turn, trigger)
        assert turn.state == state


def test_idle_is_only_left_by_start() -> None:
    for trigger, flag in itertools.product(Trigger, (False, True)):
        turn = SimpleNamespace(state=TurnState.IDLE, has_timeout_exit=flag)
        if trigger.value == "start":
            assert fire(turn, trigger) == "running"
        elif trigger.value == "edit":
            assert fire(turn, trigger) == "idle"
        else:
            with pytest.raises(IllegalTransition):
                fire(turn, trigger)
            assert turn.state == "idle"
