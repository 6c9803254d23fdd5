"""Engine-wide observers: what the inspector, traces and metrics see of every agent.

An agent has one listener (the host API's dispatch or a wire session) and nothing else may take
its place. An observer watches every agent of an engine beside those listeners: the runtime
keeps a list of them (`Runtime.observers`), empty by default. The executor calls them where it
tells a listener of a pause, a resume, a tool call or a completion (just before the listener
hears of it), and where a turn starts, a node begins and ends, and a generation ends. With the
list empty each of those points costs one truth test.

Observers run on the engine loop, must not block, and must not change the turn: a failing one
is logged and left out of that call, like a failing listener.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..support.logs import get_logger

if TYPE_CHECKING:
    from .results import PauseInfo, ToolCallEvent, TurnResult
    from .turn import Turn

log = get_logger("turnloom.observers")


class GenerationRecord:
    """One generation as an observer sees it: which model, what it cost, how long it took.

    The prompt's token count may be counted only when first read (`prompt_tokens`): a backend
    that does not report it is asked then, so observers that never read it (a tracer with
    no provider) never pay for the count.
    """

    __slots__ = (
        "_count_prompt",
        "_prompt_tokens",
        "error",
        "max_tokens",
        "model",
        "seconds",
        "seconds_to_first_token",
        "temperature",
        "tokens",
    )

    def __init__(
        self,
        model: str,
        prompt_tokens: int | Callable[[], int],
        tokens: int,
        seconds_to_first_token: float | None,
        seconds: float,
        max_tokens: int,
        temperature: float,
        error: str = "",
    ) -> None:
        self.model = model
        #: Tokens the model produced (also those of a generation cancelled or failed midway).
        self.tokens = tokens
        #: Seconds from the request to the first token (None when no token came).
        self.seconds_to_first_token = seconds_to_first_token
        self.seconds = seconds
        self.max_tokens = max_tokens
        self.temperature = temperature
        #: Why it did not finish ("cancelled", "timeout", the error's text), or "" when it did.
        self.error = error
        if callable(prompt_tokens):
            self._prompt_tokens: int | None = None
            self._count_prompt: Callable[[], int] | None = prompt_tokens
        else:
            self._prompt_tokens, self._count_prompt = prompt_tokens, None

    @property
    def prompt_tokens(self) -> int:
        """Tokens of the prompt as the backend counted them (0 when it cannot say)."""
        if self._prompt_tokens is None:
            count, self._count_prompt = self._count_prompt, None
            self._prompt_tokens = count() if count is not None else 0
        return self._prompt_tokens

    @property
    def prompt_tokens_if_counted(self) -> int | None:
        """The prompt's token count if it is known without counting now (the backend said, or
        an observer has read `prompt_tokens`), else None."""
        return self._prompt_tokens

    def __repr__(self) -> str:
        return (
            f"GenerationRecord(model={self.model!r}, tokens={self.tokens}, "
            f"seconds={self.seconds:.6f}, error={self.error!r})"
        )


class TurnObserver:
    """Watches every agent of an engine (subclass it and override what you need).

    `agent` is the engine's agent (`AgentCore`); `turn` its current `Turn`. Called on the
    engine loop; the methods must not block.
    """

    def records_nothing(self) -> bool:
        """True for an observer that will never record anything, whatever happens (a tracer
        given OpenTelemetry's no-op provider): the engine then never calls it. Asked once,
        when it is added."""
        return False

    def turn_started(self, agent: Any, turn: Turn) -> None:
        """A turn began (its `start` trigger fired), before its first node."""

    def node_started(self, agent: Any, turn: Turn, node: str) -> None:
        """The walk entered `node`."""

    def node_ended(self, agent: Any, turn: Turn, node: str, exit_route: str) -> None:
        """`node` ended, taking `exit_route` (the turn may pause right after)."""

    def generation_ended(self, agent: Any, turn: Turn, node: str, record: GenerationRecord) -> None:
        """A generation of `node` ended (finished, cancelled or failed)."""

    def tool_called(self, agent: Any, turn: Turn, event: ToolCallEvent) -> None:
        """A ToolCall node detected a call of a declared tool."""

    def paused(self, agent: Any, turn: Turn, info: PauseInfo) -> None:
        """The turn paused after `info.node_name`."""

    def resumed(self, agent: Any, turn: Turn, node_name: str, resume_node: str) -> None:
        """The paused turn goes on: plainly ('' resume_node), by a jump, or by its timeout."""

    def turn_ended(self, agent: Any, turn: Turn, result: TurnResult) -> None:
        """The turn reached a terminal state; `result` is its one completion."""

    def rejected(self, agent_id: int | None, operation: str, code: int, message: str) -> None:
        """A host operation was refused with `code` (any face: embedded, wire, inspector)."""


def tell(observers: Sequence[TurnObserver], method: str, *args: Any) -> None:
    """Call `method` on every observer; one that raises is logged and the others still run."""
    for observer in observers:
        try:
            getattr(observer, method)(*args)
        except Exception:
            log.exception("observer.failed", observer=type(observer).__name__, callback=method)


class GenerationWatch:
    """Times one generation for the observers: made only when the engine has some."""

    __slots__ = ("first_token_at", "report", "started")

    def __init__(self, report: Callable[[GenerationRecord], None]) -> None:
        self.report = report
        self.started = time.perf_counter()
        self.first_token_at: float | None = None

    def counting(self, count: Callable[[int], None]) -> Callable[[int], None]:
        """`count` (the turn's token counter), noting when the first token came."""

        def relay(tokens: int) -> None:
            if self.first_token_at is None:
                self.first_token_at = time.perf_counter()
            count(tokens)

        return relay

    def ended(
        self,
        model: str,
        *,
        prompt_tokens: int | Callable[[], int],
        tokens: int,
        max_tokens: int,
        temperature: float,
        error: str = "",
    ) -> None:
        """Report the generation's record (`prompt_tokens` may be a count made when read)."""
        now = time.perf_counter()
        first = self.first_token_at
        if first is None and tokens and not error:  # a backend that reports no progress
            first = now
        self.report(
            GenerationRecord(
                model=model,
                prompt_tokens=prompt_tokens,
                tokens=tokens,
                seconds_to_first_token=None if first is None else first - self.started,
                seconds=now - self.started,
                max_tokens=max_tokens,
                temperature=temperature,
                error=error,
            )
        )


def tool_results_sent(turn: Turn, calls: Sequence[ToolCallEvent]) -> dict[str, str]:
    """The results a resume handed back for `calls` (by call id), as the model will see them:
    read from the end of the turn's interaction, where the resume has just put them."""
    wanted = {call.call_id for call in calls}
    found: dict[str, str] = {}
    for message in reversed(turn.interaction.messages):
        call_id = message.get("tool_call_id") if message.get("role") == "tool" else None
        if call_id not in wanted:
            break
        found[call_id] = str(message.get("content", ""))
        if len(found) == len(wanted):
            break
    return found
