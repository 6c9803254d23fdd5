"""A session's large frames, taken over several loop iterations (no one request may hold the
loop, and so every other session, for more than about 10 ms).

Frames of up to `LARGE_BODY_BYTES` are decoded and answered inside `data_received`, as they
always were. A larger body is decoded one slice per loop iteration (`BodyDecode`); a request
whose checks cost more than that (a CreateAgent compiling its graph, a ChangeAgentParam reading
whole params) runs them on the intake's worker thread and commits on the loop; the decoded
frame is then freed a step at a time (`Teardown`). Until the frame is answered, the session's
later frames wait in order, so replies keep request order; past `HELD_BYTES` of them its
reading is paused, so its buffers stay bounded. Other sessions go on meanwhile. Small frames
pipelined by the thousand wait the same way once a read's answers have taken
`ANSWER_BUDGET_S`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from ..engine.support.collector import CollectorPause
from ..engine.support.gil import run_switching_often
from ..engine.support.logs import get_logger
from ..engine.support.teardown import free_later
from ..protocol.frames import FrameError, LargeBody
from ..protocol.slices import DECODE_SLICE_BYTES, BodyDecode

log = get_logger("turnloom.server")

#: Bodies longer than this take the intake: one decode slice at most is done inline, and the
#: costliest graph this size compiles in about 5 ms (1.2 µs a byte for bare tool lists).
LARGE_BODY_BYTES = min(4096, DECODE_SLICE_BYTES)

#: Time a session may spend answering the frames of one read before the rest wait for a later
#: loop iteration: a client that pipelines thousands of small frames must not hold the loop,
#: and so every other session, for tens of ms (36 ms was seen in the wire fuzz).
ANSWER_BUDGET_S = 0.002

#: Bytes read behind a large frame before the session's reading is paused. Reading goes on
#: up to there so that a client hanging up is seen at once (nothing is then committed for it).
HELD_BYTES = 1 << 20

#: What a staged handler yields: work for the worker thread (pure: it reads, creates nothing).
Job = Callable[[], Any]
#: A request answered in stages: yields jobs, is sent their results, sends its reply at the end.
Steps = Generator[Job, Any, None]

_worker: ThreadPoolExecutor | None = None
_worker_lock = threading.Lock()


def worker() -> ThreadPoolExecutor:
    """The one thread that runs staged jobs, for every session of the process.

    One thread, not a pool: with several, the loop could wait a GIL switch interval (5 ms) for
    each of them in turn; with one, it waits at most one."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="turnloom-intake")
        return _worker


class IntakeHost(Protocol):
    """What the intake needs of its session."""

    closed: bool
    transport: asyncio.Transport | None
    #: The client is behind on reading: the session's reading stays paused for it.
    writing_paused: bool

    def answer(self, item: dict[str, Any] | FrameError) -> None:
        """Answer one frame (or framing error) at once."""
        ...

    def handle_staged(self, frame: dict[str, Any]) -> Steps:
        """Answer a frame of a large body in stages."""
        ...

    def needs_stages(self, frame: dict[str, Any]) -> bool:
        """Whether a small frame is answered in stages all the same."""
        ...

    def data_received(self, data: bytes) -> None:
        """Bytes from the client."""
        ...


class Intake:
    """The session's frame in slow processing; the bytes read behind it.

    The `CollectorPause` of a frame travels with its callbacks, never kept on the intake: a
    session sits in reference cycles, which only the collector frees, so a pause kept there
    would never be freed (and so released) if the loop stopped mid-frame.
    """

    __slots__ = ("_decode", "_held", "_host", "busy")

    def __init__(self, host: IntakeHost) -> None:
        self._host = host
        #: A large frame is being processed (or a read's budget is used up): the session's
        #: later frames wait, undecoded, in the session's decoder and here.
        self.busy = False
        #: Bytes read meanwhile, decoded once it is answered.
        self._held = bytearray()
        self._decode: BodyDecode | None = None

    def hold(self, data: bytes) -> None:
        """Keep bytes that arrived while busy, for after."""
        self._held += data
        transport = self._host.transport
        if len(self._held) > HELD_BYTES and transport is not None and transport.is_reading():
            transport.pause_reading()

    def start(self, body: LargeBody) -> None:
        """Take a large body."""
        self.busy = True
        self._decode = BodyDecode(body.body)
        asyncio.get_running_loop().call_soon(self._decode_step, CollectorPause())

    def start_frame(self, frame: dict[str, Any]) -> None:
        """Take a small frame that is answered in stages."""
        self.busy = True
        self._drive(self._host.handle_staged(frame), None, None, [], CollectorPause())

    def _decode_step(self, pause: CollectorPause) -> None:
        decode = self._decode
        assert decode is not None
        if self._host.closed:
            self._abandon([], pause)
            return
        result = decode.step()
        if result is None:
            asyncio.get_running_loop().call_soon(self._decode_step, pause)
            return
        self._decode = None
        remains = decode.take_remains()
        if isinstance(result, FrameError):
            self._host.answer(result)
            self._answered(remains, pause)
            return
        self._drive(self._host.handle_staged(result), None, None, remains, pause)

    def _drive(
        self,
        steps: Steps,
        result: Any,
        error: BaseException | None,
        remains: list[Any],
        pause: CollectorPause,
    ) -> None:
        """Run the staged request to its next job (handed to the worker) or its end."""
        try:
            job = steps.send(result) if error is None else steps.throw(error)
        except StopIteration:
            self._answered(remains, pause)
            return
        loop = asyncio.get_running_loop()

        def back(done: Future[Any]) -> None:  # on the worker thread
            try:
                loop.call_soon_threadsafe(self._job_done, done, steps, remains, pause)
            except RuntimeError:  # the loop closed meanwhile: nothing is committed
                pause.release()

        # Not run_in_executor: the asyncio future it chains refers to the executor's and back,
        # a cycle that would keep the pause (and the collector off) if the loop closed first.
        worker().submit(run_switching_often, job).add_done_callback(back)

    def _job_done(
        self,
        done: Future[Any],
        steps: Steps,
        remains: list[Any],
        pause: CollectorPause,
    ) -> None:
        if self._host.closed:
            # Nothing is committed for a session that is gone.
            steps.close()
            self._abandon(remains, pause)
            return
        if done.cancelled():  # the loop's executor shut down under it
            self._drive(steps, None, asyncio.CancelledError(), remains, pause)
            return
        error = done.exception()
        self._drive(steps, None if error else done.result(), error, remains, pause)

    def defer(self) -> None:
        """The session's answers to one read used up `ANSWER_BUDGET_S`: go on with its frames
        (still undecoded in the session's decoder) in the next loop iteration."""
        self.busy = True
        asyncio.get_running_loop().call_soon(self._go_on)

    def _answered(self, remains: list[Any], pause: CollectorPause) -> None:
        """The large frame is answered: free it, and go on with what waited behind it."""
        free_later(remains, pause)
        self._go_on()

    def _go_on(self) -> None:
        """Read on: the frames the session's decoder still holds, then the bytes held here."""
        host = self._host
        self.busy = False
        if host.closed:
            self._abandon([], None)
            return
        held, self._held = self._held, bytearray()
        transport = host.transport
        if transport is not None and not host.writing_paused and not transport.is_reading():
            transport.resume_reading()
        host.data_received(bytes(held))

    def _abandon(self, remains: list[Any], pause: CollectorPause | None) -> None:
        """The session closed: drop whatever waits, answering nothing."""
        if self._decode is not None:
            remains.extend(self._decode.take_remains())
            self._decode = None
        self._held = bytearray()
        self.busy = False
        free_later(remains, pause)
