"""The peers and floors `bench.turns` times turnloom against, each checking its own work.

Every function runs `turns` sequential turns of the same shape (a user message runs to a pause
before node "reply", the host resumes, "reply" answers "ok") after an untimed set-up, asserts
that each turn really paused and really answered, and returns the timed seconds.

* Floors: the least any turn engine on that face can cost. asyncio: a task awaiting a future the
  host resolves. Blocking: the same, driven from the caller's thread through a loop on a
  background thread (`asyncio.run_coroutine_threadsafe` twice per turn, as a loop-thread design
  must), with nothing else.
* Apache Burr: actions gate -> reply -> gate, in memory; `run(halt_before=["reply"])` pauses,
  `run(halt_after=["reply"])` resumes (and `arun` for its asyncio face).
* LangGraph: gate (`interrupt()`) -> reply, `InMemorySaver`, a new thread per turn; `invoke` /
  `ainvoke`, each with LangGraph's default durability and with `durability="exit"` (checkpoints
  written only when the run exits: its fastest setting).
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from typing import Any

# --- floors ------------------------------------------------------------------------------------


async def _await(future: asyncio.Future[str]) -> str:
    return await future


async def asyncio_floor(turns: int) -> float:
    """A task parks on a future (the pause); the host resolves it and awaits the task."""
    loop = asyncio.get_running_loop()
    gc.collect()
    paused = 0
    t0 = time.perf_counter()
    for _ in range(turns):
        future: asyncio.Future[str] = loop.create_future()
        task = loop.create_task(_await(future))
        await asyncio.sleep(0)  # the "turn" runs up to its pause
        paused += not task.done()
        future.set_result("ok")  # the host resumes
        reply = await task
    seconds = time.perf_counter() - t0
    assert paused == turns and reply == "ok", (paused, reply)
    return seconds


def blocking_floor(turns: int) -> float:
    """The asyncio floor's turn, each half handed to a loop thread and waited for."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()

    async def send() -> tuple[asyncio.Future[str], asyncio.Task[str]]:
        future: asyncio.Future[str] = loop.create_future()
        task = loop.create_task(_await(future))
        await asyncio.sleep(0)
        return future, task

    async def resume(future: asyncio.Future[str], task: asyncio.Task[str]) -> str:
        future.set_result("ok")
        return await task

    try:
        gc.collect()
        paused = 0
        t0 = time.perf_counter()
        for _ in range(turns):
            future, task = asyncio.run_coroutine_threadsafe(send(), loop).result()
            paused += not task.done()
            reply = asyncio.run_coroutine_threadsafe(resume(future, task), loop).result()
        seconds = time.perf_counter() - t0
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join()
        loop.close()
    assert paused == turns and reply == "ok", (paused, reply)
    return seconds


# --- Apache Burr -------------------------------------------------------------------------------


def _burr_app() -> Any:
    from burr.core import ApplicationBuilder, State, action

    @action(reads=[], writes=["decision"])
    def gate(state: State) -> State:
        return state.update(decision="go")

    @action(reads=["decision"], writes=["reply"])
    def reply(state: State) -> State:
        return state.update(reply="ok")

    return (
        ApplicationBuilder()
        .with_actions(gate=gate, reply=reply)
        .with_transitions(("gate", "reply"), ("reply", "gate"))
        .with_state(decision="", reply="")
        .with_entrypoint("gate")
        .build()
    )


def burr_run(turns: int) -> float:
    """Burr's blocking face: `run` to the pause, `run` through the reply."""
    app = _burr_app()
    gc.collect()
    paused = 0
    t0 = time.perf_counter()
    for _ in range(turns):
        halted, _, _ = app.run(halt_before=["reply"])
        paused += halted.name == "reply"
        _, _, state = app.run(halt_after=["reply"])
    seconds = time.perf_counter() - t0
    assert paused == turns and state["reply"] == "ok", (paused, state)
    return seconds


async def burr_arun(turns: int) -> float:
    """Burr's asyncio face: `arun` to the pause, `arun` through the reply."""
    app = _burr_app()
    gc.collect()
    paused = 0
    t0 = time.perf_counter()
    for _ in range(turns):
        halted, _, _ = await app.arun(halt_before=["reply"])
        paused += halted.name == "reply"
        _, _, state = await app.arun(halt_after=["reply"])
    seconds = time.perf_counter() - t0
    assert paused == turns and state["reply"] == "ok", (paused, state)
    return seconds


# --- LangGraph ---------------------------------------------------------------------------------


def langgraph_app(checkpointer: Any = None) -> Any:
    """Gate (`interrupt()`) -> reply, compiled with `checkpointer` (default: a fresh
    InMemorySaver, which keeps every thread's checkpoints)."""
    from typing import TypedDict

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    class TurnState(TypedDict, total=False):
        message: str
        decision: str
        reply: str

    def gate(state: TurnState) -> dict[str, str]:
        return {"decision": interrupt({"node": "gate", "pending_exit": "default"})}

    def reply(state: TurnState) -> dict[str, str]:
        return {"reply": "ok"}

    builder = StateGraph(TurnState)
    builder.add_node("gate", gate)
    builder.add_node("reply", reply)
    builder.add_edge(START, "gate")
    builder.add_edge("gate", "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer or InMemorySaver())


def langgraph_invoke(turns: int, durability: str | None = None, checkpointer: Any = None) -> float:
    """LangGraph's blocking face; `durability=None` is its default, `checkpointer` as for
    `langgraph_app`."""
    from langgraph.types import Command

    app = langgraph_app(checkpointer)
    options = {} if durability is None else {"durability": durability}
    gc.collect()
    paused = 0
    t0 = time.perf_counter()
    for thread in range(turns):
        config = {"configurable": {"thread_id": str(thread)}}
        paused += "__interrupt__" in app.invoke({"message": "hi"}, config, **options)
        done = app.invoke(Command(resume="go"), config, **options)
    seconds = time.perf_counter() - t0
    assert paused == turns and done["reply"] == "ok", (paused, done)
    return seconds


async def langgraph_ainvoke(turns: int, durability: str | None = None) -> float:
    """LangGraph's asyncio face; `durability=None` is its default."""
    from langgraph.types import Command

    app = langgraph_app()
    options = {} if durability is None else {"durability": durability}
    gc.collect()
    paused = 0
    t0 = time.perf_counter()
    for thread in range(turns):
        config = {"configurable": {"thread_id": str(thread)}}
        paused += "__interrupt__" in await app.ainvoke({"message": "hi"}, config, **options)
        done = await app.ainvoke(Command(resume="go"), config, **options)
    seconds = time.perf_counter() - t0
    assert paused == turns and done["reply"] == "ok", (paused, done)
    return seconds
