"""A session's large frames, taken over several loop iterations (issue 9: no one request may
hold the loop, and so every other session, for more than about 10 ms).

Frames of up to `LARGE_BODY_BYTES` are decoded and answered inside `data_received`, as they
always were. A larger body is decoded one slice per loop iteration (`BodyDecode`); a request
whose checks cost more than that (a CreateAgent compiling its graph, a ChangeAgentParam reading
whole params) runs them on the intake's worker thread and commits on the loop; the decoded
frame is then freed a step at a time (`Teardown`). Until the frame is answered, the session's
later frames wait in order, so replies keep request order (R-W2); past `HELD_BYTES` of them its
reading is paused, so its buffers stay bounded. Other sessions go on meanwhile.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Generator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Protocol

from ..engine.collector import CollectorPause
from ..engine.gil import run_switching_often
from ..engine.logs import get_logger
from ..protocol.frames import FrameError, LargeBody
from ..protocol.slices import DECODE_SLICE_BYTES, BodyDecode, Teardown

log = get_logger("turnloom.server")

#: Bodies longer than this take the intake: one decode slice at most is done inline, and the
#: costliest graph this size compiles in about 5 ms (1.2 µs a byte for bare tool lists).
LARGE_BODY_BYTES = min(4096, DECODE_SLICE_BYTES)

#: Bytes read behind a large frame before the session's reading is paused. Reading goes on
#: up to there so that a client hanging up is seen at once (nothing is then committed for it).
HELD_BYTES = 1 << 20

#: What a staged handler yields: work for the worker thread (pure: it reads, creates nothing).
Job = Callable[[], Any]
#: A request answered in stages: yields jobs, is sent their results, sends its reply at the end.
Steps = Generator[Job, Any, None]
Item = dict[str, Any] | FrameError | LargeBody

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


class _FreeLater:
    """Values dropped a step per loop iteration, then a pause released. Nothing here refers
    back to itself (a closure calling itself would): if the loop closes first, its pending
    step is dropped, and the pause with it, without waiting for the (paused) collector."""

    __slots__ = ("_loop", "_pause", "_teardown")

    def __init__(self, values: list[Any], pause: CollectorPause | None) -> None:
        self._teardown = Teardown(values)
        self._pause = pause
        self._loop = asyncio.get_running_loop()
        self._loop.call_soon(self.step)

    def step(self) -> None:
        if not self._teardown.step():
            self._loop.call_soon(self.step)
        elif self._pause is not None:
            self._pause.release()


def free_later(values: list[Any], pause: CollectorPause | None = None) -> None:
    """Drop `values` (the only references to them) a step per loop iteration; then release
    `pause`."""
    _FreeLater(values, pause)


class Intake:
    """The session's frame in slow processing, and what waits behind it.

    The `CollectorPause` of a frame travels with its callbacks, never kept on the intake: a
    session sits in reference cycles, which only the collector frees, so a pause kept there
    would never be freed (and so released) if the loop stopped mid-frame.
    """

    __slots__ = ("_decode", "_held", "_host", "_waiting", "busy")

    def __init__(self, host: IntakeHost) -> None:
        self._host = host
        #: A large frame is being processed: the session's frames wait for it.
        self.busy = False
        #: Frames decoded after the large one, answered once it is.
        self._waiting: deque[Item] = deque()
        #: Bytes read meanwhile, decoded once it is answered.
        self._held = bytearray()
        self._decode: BodyDecode | None = None

    def hold(self, data: bytes) -> None:
        """Keep bytes that arrived while busy, for after."""
        self._held += data
        transport = self._host.transport
        if len(self._held) > HELD_BYTES and transport is not None and transport.is_reading():
            transport.pause_reading()

    def start(self, body: LargeBody, rest: list[Item]) -> None:
        """Take a large body, and the frames that came after it, in order."""
        self.busy = True
        self._waiting.extend(rest)
        self._decode = BodyDecode(body.body)
        asyncio.get_running_loop().call_soon(self._decode_step, CollectorPause())

    def start_frame(self, frame: dict[str, Any], rest: list[Item]) -> None:
        """Take a small frame that is answered in stages, and the frames after it."""
        self.busy = True
        self._waiting.extend(rest)
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

    def _answered(self, remains: list[Any], pause: CollectorPause) -> None:
        """The large frame is answered: free it, and go on with what waited behind it."""
        free_later(remains, pause)
        host = self._host
        waiting = self._waiting
        while waiting and not host.closed:
            item = waiting.popleft()
            if isinstance(item, LargeBody):
                self.start(item, [])
                return
            if isinstance(item, dict) and host.needs_stages(item):
                self.start_frame(item, [])
                return
            host.answer(item)
        self.busy = False
        if host.closed:
            self._abandon([], None)
            return
        held, self._held = self._held, bytearray()
        transport = host.transport
        if transport is not None and not host.writing_paused and not transport.is_reading():
            transport.resume_reading()
        if held:
            host.data_received(bytes(held))

    def _abandon(self, remains: list[Any], pause: CollectorPause | None) -> None:
        """The session closed: drop whatever waits, answering nothing."""
        if self._decode is not None:
            remains.extend(self._decode.take_remains())
            self._decode = None
        remains.append(list(self._waiting))
        self._waiting.clear()
        self._held = bytearray()
        self.busy = False
        free_later(remains, pause)
