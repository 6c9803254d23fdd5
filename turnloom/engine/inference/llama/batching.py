"""Continuous batching: several agents' generations decoded together in one llama.cpp context.

One context holds `sequences` sequences (a sequence id per agent in each `llama_batch`) over a
unified KV cache of `sequences x n_ctx` cells, so any agent's prompt may use the whole `n_ctx`.
A scheduler thread runs the loop: each step it gives every running generation its next token
to decode and fills the rest of the batch (up to `n_batch` tokens) with the prompts of
generations that are starting, so a new prompt is prefilled alongside running decodes, a long
reply never holds a short one back, and a finished generation frees its sequence at once.
On 2 cores the step is compute-bound (the default model's 262k-token output layer), so four
replies decoded together cost about 1.5 times one, not 4 times.

Each agent keeps its sequence, and with it its cached prompt, while there is room: its next
turn re-reads only what is new. When a sequence is needed for another agent, the least
recently used idle one's cells go to host memory (`KeptPrompts`) and come back when its agent
speaks again.

Each generation is a Python generator (`generation.Generation`) that asks for tokens; the
scheduler answers many of them in one batch.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ...support.logs import get_logger
from .generation import Ask, Generation, Prime
from .kept import KeptPrompts
from .native import _LOG_ROUTE, Instance
from .streaming import GenerationStats, Job

log = get_logger("turnloom.llama")

#: How long an idle scheduler waits for more generations after the first arrives (seconds).
GATHER_S = 0.005
#: Agents decoded together by default, and the most a model takes.
DEFAULT_SEQUENCES = 4
MAX_SEQUENCES = 64


@dataclass(slots=True)
class _Running:
    """A generation in the scheduler's hands: waiting for a sequence, or running in one."""

    job: Job
    #: None until the generation starts (when it gets a sequence).
    generation: Generation | None
    done: Future[GenerationStats]
    #: What the generation asked for last.
    ask: Ask | None = None
    #: Tokens of that ask still to decode; the logits of the last one are sampled from.
    feed: list[int] = field(default_factory=list)
    #: The token sampled last (a `Next` decodes it).
    last_token: int = -1


@dataclass(slots=True)
class _Sequence:
    """One sequence of the batched context: the agent whose prompt it holds, and what runs."""

    seq: int
    agent: int | None = None
    #: The tokens the sequence's KV cells hold, in order.
    tokens: list[int] = field(default_factory=list)
    running: _Running | None = None
    #: When it last ended a generation (`time.monotonic`): the least recent idle one is reused.
    used: float = 0.0


class BatchedDecoder:
    """The scheduler of one model's batched context (see the module's docstring)."""

    def __init__(
        self,
        model_name: str,
        inst: Instance,
        sequences: int,
        n_ctx: int,
        kept_bytes: int,
        start: Callable[[Instance, Job], Generation],
    ) -> None:
        self._inst = inst
        self._sequences = [_Sequence(i) for i in range(sequences)]
        self._n_ctx = n_ctx
        self._start = start
        self.prompts = KeptPrompts(kept_bytes)
        self._lock = threading.Condition()
        self._waiting: deque[_Running] = deque()
        self._closed = False
        self._ctx: Any = None
        self._batch: Any = None
        self._n_batch = 0
        self._thread = threading.Thread(
            target=self._run, name=f"turnloom-llama-{model_name}-batch", daemon=True
        )
        self._started = False

    @property
    def sequences(self) -> int:
        """How many agents' generations it decodes together."""
        return len(self._sequences)

    def submit(self, job: Job) -> Future[GenerationStats]:
        """Queue a generation; its stats once it has ended (or its exception)."""
        done: Future[GenerationStats] = Future()
        with self._lock:
            if self._closed:
                raise RuntimeError("the model is closed")
            self._waiting.append(_Running(job, None, done))  # its generation starts later
            if not self._started:
                self._started = True
                self._thread.start()
            self._lock.notify()
        return done

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until no generation is waiting or running; False if `timeout` passed first."""
        with self._lock:
            return self._lock.wait_for(
                lambda: not self._waiting and not self._busy(), timeout=timeout
            )

    def close(self) -> None:
        """Stop the scheduler once what it runs has ended, and free the context."""
        with self._lock:
            self._closed = True
            self._lock.notify()
        if self._started:
            self._thread.join()
        self._free()

    # --- the scheduler thread ---

    def _run(self) -> None:
        try:
            self._open()
        except BaseException as exc:  # no context: every generation fails with the reason
            with self._lock:
                self._closed = True
                while self._waiting:
                    self._waiting.popleft().done.set_exception(exc)
            return
        while True:
            with self._lock:
                idle = not self._busy()
                while not self._closed and not self._waiting and not self._busy():
                    self._lock.wait()
                if self._closed and not self._waiting and not self._busy():
                    return
                if idle and not self._closed:
                    # NPCs told something at the same moment arrive a few microseconds apart:
                    # gathered, their prompts are read in one step instead of one step each.
                    deadline = time.monotonic() + GATHER_S
                    while (left := deadline - time.monotonic()) > 0:
                        self._lock.wait(left)
            try:
                with self._lock:
                    self._admit()
                if self._busy():
                    self._step()
            except Exception as exc:  # a bug here must fail the generations, not hang them
                log.error("llama.batch_failed", error=f"{type(exc).__name__}: {exc}")
                for seq in self._sequences:
                    if seq.running is not None:
                        self._finish(seq, exc)

    def _busy(self) -> bool:
        return any(s.running is not None for s in self._sequences)

    def _open(self) -> None:
        import llama_cpp

        llm = self._inst.ensure_loaded()
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        params.n_ctx = self._n_ctx * len(self._sequences)
        params.n_seq_max = len(self._sequences)
        params.kv_unified = True
        with _LOG_ROUTE.borrowed():  # llama.cpp logs its KV cache's set-up on stderr
            self._ctx = llama_cpp.llama_init_from_model(llm.model, params)
        if not self._ctx:
            raise RuntimeError("llama.cpp could not create the batched context")
        self._n_batch = int(llama_cpp.llama_n_batch(self._ctx))
        self._batch = llama_cpp.llama_batch_init(self._n_batch, 0, 1)

    def _free(self) -> None:
        import llama_cpp

        if self._batch is not None:
            llama_cpp.llama_batch_free(self._batch)
            self._batch = None
        if self._ctx is not None:
            llama_cpp.llama_free(self._ctx)
            self._ctx = None

    def _admit(self) -> None:
        """Give waiting generations a sequence: their agent's own, else a free one, else the
        least recently used idle one (its agent's cells kept in host memory). Lock held."""
        while self._waiting:
            running = self._waiting[0]
            agent = running.job.request.agent_id
            target = next((s for s in self._sequences if s.agent == agent), None)
            if target is not None and target.running is not None:
                return  # the agent's previous generation is still ending
            if target is None:
                idle = [s for s in self._sequences if s.running is None]
                if not idle:
                    return
                target = min(idle, key=lambda s: (s.agent is not None, s.used))
                if target.agent is not None:
                    self.prompts.save(self._ctx, target.seq, target.agent, target.tokens)
                target.agent = agent
                target.tokens = self.prompts.restore(self._ctx, target.seq, agent)
            self._waiting.popleft()
            if not running.done.set_running_or_notify_cancel():
                continue  # its awaiting task was cancelled while it waited
            target.running = running
            target.used = time.monotonic()
            running.job.stats.instance = target.seq
            if running.job.cancelled.is_set():
                running.job.stats.cancelled = True
                self._finish(target)
                continue
            running.generation = self._start(self._inst, running.job)
            self._advance(target, None)

    def _advance(self, seq: _Sequence, token: int | None) -> None:
        """Send the generation its token (None: start it) and set up what it asks next."""
        running = seq.running
        assert running is not None
        generation = running.generation
        assert generation is not None
        try:
            ask = next(generation) if token is None else generation.send(token)
        except StopIteration:
            self._finish(seq)
            return
        except BaseException as exc:
            running.job.stats.error = f"{type(exc).__name__}: {exc}"
            self._finish(seq, exc)
            return
        running.ask = ask
        if isinstance(ask, Prime):
            common = 0
            limit = min(len(seq.tokens), len(ask.tokens))
            while common < limit and seq.tokens[common] == ask.tokens[common]:
                common += 1
            if common == len(ask.tokens):
                common -= 1  # the last token is decoded again, for its logits
            self._drop_from(seq, common)
            running.feed = ask.tokens[common:]
            ask.evaluated = len(running.feed)
        else:
            running.feed = [running.last_token]

    def _drop_from(self, seq: _Sequence, position: int) -> None:
        import llama_cpp

        if position < len(seq.tokens):
            memory = llama_cpp.llama_get_memory(self._ctx)
            llama_cpp.llama_memory_seq_rm(memory, seq.seq, position, -1)
            del seq.tokens[position:]

    def _step(self) -> None:
        """One `llama_decode`: a token for every decoding sequence, then prompt chunks."""
        import llama_cpp

        batch = self._batch
        plan: list[tuple[_Sequence, int, int | None]] = []  # (sequence, tokens fed, logits at)
        n = 0
        # Decoding sequences first (one token each), so a prefill never delays them.
        order = sorted(
            (s for s in self._sequences if s.running is not None and s.running.feed),
            key=lambda s: len(s.running.feed) if s.running else 0,
        )
        for seq in order:
            running = seq.running
            assert running is not None
            if running.job.cancelled.is_set() and isinstance(running.ask, Prime):
                running.job.stats.cancelled = True  # no token is sampled: end it now
                if running.generation is not None:
                    running.generation.close()
                self._finish(seq)
                continue
            take = min(len(running.feed), self._n_batch - n)
            if take <= 0:
                break
            start = len(seq.tokens)
            for offset, token in enumerate(running.feed[:take]):
                batch.token[n] = token
                batch.pos[n] = start + offset
                batch.n_seq_id[n] = 1
                batch.seq_id[n][0] = seq.seq
                batch.logits[n] = 0
                n += 1
            logits_at = None
            if take == len(running.feed):
                logits_at = n - 1
                batch.logits[logits_at] = 1
            plan.append((seq, take, logits_at))
        if not n:
            return
        batch.n_tokens = n
        status = llama_cpp.llama_decode(self._ctx, batch)
        if status != 0:
            error = RuntimeError(f"llama_decode failed ({status}): the batch did not fit")
            for seq, _, _ in plan:
                if seq.running is not None:
                    if seq.running.generation is not None:
                        seq.running.generation.close()
                    self._finish(seq, error)
            return
        for seq, take, logits_at in plan:
            running = seq.running
            assert running is not None and running.ask is not None
            seq.tokens.extend(running.feed[:take])
            del running.feed[:take]
            if logits_at is None:
                continue
            token = llama_cpp.llama_sampler_sample(running.ask.sampler, self._ctx, logits_at)
            running.last_token = token
            self._advance(seq, token)

    def _finish(self, seq: _Sequence, error: BaseException | None = None) -> None:
        with self._lock:
            running = seq.running
            seq.running = None
            seq.used = time.monotonic()
            self._lock.notify_all()
        if running is None or running.done.done():
            return
        if error is None:
            running.done.set_result(running.job.stats)
        else:
            running.done.set_exception(error)
