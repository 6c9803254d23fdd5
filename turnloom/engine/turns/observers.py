"""Engine-wide observers: what the inspector, traces and metrics see of every agent.

An agent has one listener (the host API's dispatch or a wire session) and nothing else may take
its place. An observer watches every agent of an engine beside those listeners: the runtime
keeps a list of them (`Runtime.observers`), empty by default. The executor calls them where it
tells a listener of a pause, a resume, a tool call or a completion (just before the listener
hears of it), where a turn starts, a node begins and ends, and a generation ends, and where
an agent joins or leaves the engine. Where no observer implements the hook (the list empty
above all) each of those points costs one truth test.

Observers run on the engine loop, must not block, and must not change the turn: a failing one
is logged and left out of that call, like a failing listener. An observer is called only at
the hooks it implements (overrides): the list resolves which, once, when it changes. An
observer that records everything a turn does (the inspector's timeline) reads each turn's event
log instead (`TurnObserver.reads_turn_logs`), which costs a turn a list append per event.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Self, SupportsIndex

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
        "error",
        "max_tokens",
        "model",
        "prompt_tokens_if_counted",
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
        #: The prompt's token count if it is known without counting now (the backend said, or
        #: an observer has read `prompt_tokens`), else None. A plain attribute: an observer
        #: that only shows what is known reads it without a call.
        self.prompt_tokens_if_counted: int | None
        if callable(prompt_tokens):
            self.prompt_tokens_if_counted = None
            self._count_prompt: Callable[[], int] | None = prompt_tokens
        else:
            self.prompt_tokens_if_counted, self._count_prompt = prompt_tokens, None

    @property
    def prompt_tokens(self) -> int:
        """Tokens of the prompt as the backend counted them (0 when it cannot say)."""
        if self.prompt_tokens_if_counted is None:
            count, self._count_prompt = self._count_prompt, None
            self.prompt_tokens_if_counted = count() if count is not None else 0
        return self.prompt_tokens_if_counted

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

    #: True for an observer that reads each turn's event log (`Turn.log`) instead of being
    #: called at each of its events: while one is added, every turn that starts keeps a log,
    #: which the engine fills where the events happen, with no call (what the inspector's
    #: timeline takes: an inspected game pays for a list append per event, not a call). The
    #: observer is still called at the hooks it implements (a turn's start and end, say), and
    #: is told of a turn already open through `agent_added` (give it `turn.log = []` there).
    #: Each event is three items: its kind, its time on the engine clock (`Runtime.log_time`),
    #: and its values: "turn_started" the player's message; "node_started" the node;
    #: "node_ended" the exit it took (a node that pauses logs none: its "paused" event ends
    #: it, with the exit it took as its pending exit); "generation" (node, model, prompt
    #: tokens or None if not counted, tokens, seconds to the first token or None, seconds,
    #: error or ""); "tool_call"
    #: (node, call id, tool, arguments JSON, disposition); "paused" (node, pending exit, its
    #: target, timeout ms, the pending call ids, awaits results); "resumed" (node, the node
    #: jumped to or "", the results sent back by call id or None); "turn_ended" (status value, text,
    #: tokens, error code, error message, pauses, seconds paused).
    reads_turn_logs = False

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

    def agent_added(self, agent: Any) -> None:
        """`agent` is in the engine from now on, as it stands: made, or restored, loaded,
        forked or taken from a store (then maybe paused, its pause begun elsewhere). Told too
        of every agent already there when the observer is added with `add_observer`."""

    def agent_removed(self, agent_id: int) -> None:
        """The agent left the engine (destroyed, or let go to its store)."""


#: The hooks an observer may implement, in the order a turn calls them.
HOOKS = (
    "turn_started",
    "node_started",
    "node_ended",
    "generation_ended",
    "tool_called",
    "paused",
    "resumed",
    "turn_ended",
    "rejected",
    "agent_added",
    "agent_removed",
)


def implemented_hooks(observer: object) -> tuple[str, ...]:
    """The hooks `observer` implements: those its class (or the instance itself) overrides
    of `TurnObserver`'s, or for an object that is not one, those it has."""
    if not isinstance(observer, TurnObserver):
        return tuple(hook for hook in HOOKS if callable(getattr(observer, hook, None)))
    cls, own = type(observer), getattr(observer, "__dict__", {})
    return tuple(
        hook
        for hook in HOOKS
        if hook in own or getattr(cls, hook) is not getattr(TurnObserver, hook)
    )


Hooks = tuple[Callable[..., None], ...]


class ObserverList(list[TurnObserver]):
    """The engine's observers (`Runtime.observers`), with each hook's callers resolved once.

    A list like any other (its truth is "has observers"), which also keeps, per hook, the bound
    methods of the observers that implement it (`implemented_hooks`), resolved whenever the
    list changes: as an attribute of the hook's name (`observers.node_started`, what the engine
    tests before it tells a hook: an empty tuple when no observer implements it), and in
    `by_hook`. A turn calls only what an observer implements (metrics are never called at a
    node's start), with no attribute lookup per call.
    """

    __slots__ = ("by_hook", "keep_logs", *HOOKS)

    turn_started: Hooks
    node_started: Hooks
    node_ended: Hooks
    generation_ended: Hooks
    tool_called: Hooks
    paused: Hooks
    resumed: Hooks
    turn_ended: Hooks
    rejected: Hooks
    agent_added: Hooks
    agent_removed: Hooks

    def __init__(self, observers: Iterable[TurnObserver] = ()) -> None:
        super().__init__(observers)
        #: Hook name -> the bound methods to call, in the list's order (every hook is a key).
        self.by_hook: dict[str, Hooks] = {}
        self._resolve()

    def hooks(self, hook: str) -> Hooks:
        """The bound `hook` methods of the observers that implement it, in the list's order."""
        return self.by_hook[hook]

    def _resolve(self) -> None:
        found: dict[str, list[Callable[..., None]]] = {hook: [] for hook in HOOKS}
        for observer in self:
            for hook in implemented_hooks(observer):
                found[hook].append(getattr(observer, hook))
        self.by_hook = {hook: tuple(callers) for hook, callers in found.items()}
        for hook, callers in self.by_hook.items():
            setattr(self, hook, callers)
        #: Whether a turn that starts keeps its log (an observer here reads them).
        self.keep_logs = any(getattr(observer, "reads_turn_logs", False) for observer in self)

    # Every way a list changes resolves the hooks again (observers change rarely, turns often).

    def append(self, observer: TurnObserver) -> None:
        """Add `observer` last."""
        super().append(observer)
        self._resolve()

    def extend(self, observers: Iterable[TurnObserver]) -> None:
        """Add `observers` last."""
        super().extend(observers)
        self._resolve()

    def insert(self, index: SupportsIndex, observer: TurnObserver) -> None:
        """Add `observer` at `index`."""
        super().insert(index, observer)
        self._resolve()

    def remove(self, observer: TurnObserver) -> None:
        """Remove `observer` (ValueError if it is not here)."""
        super().remove(observer)
        self._resolve()

    def pop(self, index: SupportsIndex = -1) -> TurnObserver:
        """Remove and return the observer at `index`."""
        observer = super().pop(index)
        self._resolve()
        return observer

    def clear(self) -> None:
        """Remove every observer."""
        super().clear()
        self._resolve()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """Reorder (the order the observers are called in)."""
        super().sort(*args, **kwargs)
        self._resolve()

    def reverse(self) -> None:
        """Reverse the order the observers are called in."""
        super().reverse()
        self._resolve()

    def __setitem__(self, index: Any, value: Any) -> None:
        super().__setitem__(index, value)
        self._resolve()

    def __delitem__(self, index: Any) -> None:
        super().__delitem__(index)
        self._resolve()

    def __iadd__(self, observers: Iterable[TurnObserver]) -> Self:  # type: ignore[override,misc]
        super().__iadd__(observers)
        self._resolve()
        return self

    def __imul__(self, times: SupportsIndex) -> Self:
        super().__imul__(times)
        self._resolve()
        return self


def tell(observers: Sequence[TurnObserver], method: str, *args: Any) -> None:
    """Call `method` on every observer that implements it; one that raises is logged and the
    others still run."""
    try:
        hooks = observers.by_hook[method]  # type: ignore[attr-defined]
    except AttributeError:  # a plain sequence of observers, resolved now
        hooks = tuple(getattr(o, method) for o in observers if method in implemented_hooks(o))
    call_hooks(hooks, method, *args)


def call_hooks(hooks: Hooks, method: str, *args: Any) -> None:
    """Call each of `hooks` (one hook's bound methods, as `ObserverList` resolves them) with
    `args`; one that raises is logged and the others still run."""
    for hook in hooks:
        try:
            hook(*args)
        except Exception:
            observer_failed(hook, method)


def observer_failed(hook: Callable[..., None], method: str) -> None:
    """Log that the observer `hook` belongs to raised in `method` (called in its `except`)."""
    owner = getattr(hook, "__self__", hook)
    log.exception("observer.failed", observer=type(owner).__name__, callback=method)


def tool_results_sent(turn: Turn, call_ids: Iterable[str]) -> dict[str, str]:
    """The results a resume handed back for the calls `call_ids` (by call id), as the model
    will see them: read from the end of the turn's interaction, where the resume has just put
    them."""
    wanted = set(call_ids)
    found: dict[str, str] = {}
    for message in reversed(turn.interaction.messages):
        call_id = message.get("tool_call_id") if message.get("role") == "tool" else None
        if call_id not in wanted:
            break
        found[call_id] = str(message.get("content", ""))
        if len(found) == len(wanted):
            break
    return found
