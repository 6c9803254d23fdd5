"""Property: input policies against a reference model, with pauses, timeouts, cancels, policy
changes, save slots and loads interleaved at random (docs/reference/turns.md#input-policies,
docs/reference/durability.md#save-slots).

The agent's graph pauses at `gate` (1 s timeout to `say`), then says a canned line, so its turn
is idle or paused between calls, never running. The model below is written from the reference
pages alone: what each message does under each policy, when a waiting message starts, what a
load brings back. After every step the agent's state, dialog and the fates of the waiting
callers must match it.

It runs twice: the store's writes made on the loop, and every group written off it by the
store's writing thread (as a busy worker's are), so that steps meet rests still on their way
to the store; the model is the same, since a rest in flight is not yet a rest for the host.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

import turnloom as tl
from turnloom.engine.durable.store import write_queue

LIMIT = 3
GRAPH = (
    tl.GraphDescription()
    .add_node("gate", tl.PauseParams(default_exit="say", pause_timeout_ms=1000, timeout_exit="say"))
    .add_node("say", tl.CannedResponseParams(lines=["ok"]))
    .set_start_node("gate")
    .set_default_model_name("mock")
)
POLICIES = st.sampled_from(["reject", "enqueue", "interrupt", "merge"])
TEXTS = st.sampled_from(["hi", "wait", "and you?", "bye"])
SLOTS = st.sampled_from(["one", "two"])


@dataclass
class Waiting:
    """A message the model expects to be queued, with the caller's future (None after a load)."""

    text: str
    future: concurrent.futures.Future[tl.Step] | None


@dataclass
class Model:
    policy: str = "reject"
    open: str | None = None  # the paused turn's user message
    queue: list[Waiting] = field(default_factory=list)
    dialog: list[str] = field(default_factory=list)


class PolicyMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clock = tl.VirtualClock()
        self.engine = tl.Engine(
            tl.MockModel("mock"),
            clock=self.clock,
            store=":memory:",
            settings=tl.EngineSettings(max_queued_messages=LIMIT),
        )
        self.agent = self.engine.create_agent(GRAPH, durable=False)
        self.model = Model()
        self.saved: dict[str, tuple[str, str | None, list[str], list[str]]] = {}

    def teardown(self) -> None:
        self.engine.close()

    # --- the model's moves ----------------------------------------------------------------

    def _turn_ended(self, kept: bool) -> None:
        """The open turn ended (kept in the dialog or not); the oldest waiting message starts."""
        m = self.model
        if kept and m.open is not None:
            m.dialog.append(m.open)
        m.open = None
        if m.queue:
            waiting = m.queue.pop(0)
            m.open = waiting.text
            if waiting.future is not None:
                step = waiting.future.result(timeout=10)
                assert step.paused, step

    # --- rules ---------------------------------------------------------------------------

    @rule(text=TEXTS)
    def send(self, text: str) -> None:
        m = self.model
        if m.open is None:
            assert self.agent.send_message(text).paused
            m.open = text
        elif m.policy == "reject":
            with pytest.raises(tl.AgentBusy):
                self.agent.send_message(text)
        elif m.policy == "enqueue":
            future = self.agent.send_message_async(text)
            self.agent.wait()  # after the send: it reached the agent
            if len(m.queue) >= LIMIT:
                assert isinstance(future.exception(timeout=10), tl.AgentBusy)
            else:
                assert not future.done()
                m.queue.append(Waiting(text, future))
        else:
            step = self.agent.send_message(text)
            assert step.paused
            m.open = text if m.policy == "interrupt" else f"{m.open}\n{text}"

    @rule()
    def resume(self) -> None:
        if self.model.open is None:
            with pytest.raises(tl.AgentNotPaused):
                self.agent.resume()
            return
        self.agent.resume()
        self.agent.wait()
        self._turn_ended(kept=True)

    @rule()
    def cancel(self) -> None:
        was_open = self.model.open is not None
        assert self.agent.cancel() == was_open
        if was_open:
            self.agent.wait()
            self._turn_ended(kept=False)

    @rule()
    def time_passes(self) -> None:
        self.clock.advance(1.5)
        self.agent.wait()
        if self.model.open is not None:
            self._turn_ended(kept=True)  # timed out to `say`: the turn ends done

    @rule(policy=POLICIES)
    def set_policy(self, policy: str) -> None:
        self.agent.set_input_policy(policy)
        self.model.policy = policy

    @rule(slot=SLOTS)
    def save(self, slot: str) -> None:
        self.agent.save(slot)
        m = self.model
        self.saved[slot] = (m.policy, m.open, [w.text for w in m.queue], list(m.dialog))

    @precondition(lambda self: bool(self.saved))
    @rule(data=st.data())
    def load_in_place(self, data: st.DataObject) -> None:
        slot = data.draw(st.sampled_from(sorted(self.saved)))
        old_queue = self.model.queue
        self.agent = self.engine.load(slot, replace=self.agent.agent_id)
        for waiting in old_queue:  # the replaced agent's waiting callers: dropped, 3002
            if waiting.future is not None:  # (those of an earlier load have no caller)
                exception = waiting.future.exception(timeout=10)
                assert isinstance(exception, tl.AgentAlreadyDestroyed)
        policy, open_text, queue, dialog = self.saved[slot]
        self.model = Model(policy, open_text, [Waiting(t, None) for t in queue], list(dialog))

    # --- what must always hold -----------------------------------------------------------

    @invariant()
    def agent_matches_the_model(self) -> None:
        step = self.agent.wait()
        assert step.paused == (self.model.open is not None)
        assert self.agent.input_policy == self.model.policy
        users = [msg["content"] for msg in self.agent.dialog if msg["role"] == "user"]
        assert users == self.model.dialog
        for waiting in self.model.queue:
            assert waiting.future is None or not waiting.future.done()


@pytest.mark.parametrize("writes", ["on the loop", "off the loop"])
def test_input_policies_follow_the_reference(writes: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if writes == "off the loop":  # a lone agent's rest too, not only a group of 8 or more
        monkeypatch.setattr(write_queue, "OFF_LOOP_FROM", 1)
        monkeypatch.setattr(write_queue, "OFF_LOOP_WAIT_S", 0)
    run_state_machine_as_test(
        PolicyMachine, settings=settings(max_examples=60, stateful_step_count=30, deadline=None)
    )
