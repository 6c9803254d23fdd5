"""The interface every inference backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..graph.model_params import SamplingParams
from ..tools.families import ToolCallFamily

#: A chat message in the shape chat templates take: role, content, and for tools
#: `tool_calls` / `tool_call_id`.
ChatMessage = dict[str, Any]


@dataclass(slots=True)
class GenerationProgress:
    """How far a running generation has got, kept up to date while it runs.

    A backend counts its tokens here as it produces them (`add` / `reach`, on the engine loop),
    so a generation that is cancelled or runs out of time still reports what it produced. The
    engine listens through `listener` (called with each increment); a backend that never
    reports progress leaves it at 0.
    """

    tokens: int = 0
    listener: Callable[[int], None] | None = field(default=None, repr=False, compare=False)

    def add(self, count: int = 1) -> None:
        """Count `count` more tokens (a negative or zero count changes nothing)."""
        if count <= 0:
            return
        self.tokens += count
        if self.listener is not None:
            self.listener(count)

    def reach(self, total: int) -> None:
        """Bring the count up to `total` (for a backend that counts elsewhere, e.g. on a
        worker thread); a total below the current count changes nothing."""
        self.add(total - self.tokens)

    def tracking(
        self, tokens: Callable[[], int], on_delta: Callable[[str], None] | None
    ) -> Callable[[str], None]:
        """A delta callback for a backend that counts its tokens elsewhere (e.g. on a worker
        thread): each delta first brings the count up to `tokens()`, then goes to `on_delta`."""

        def relay(text: str) -> None:
            self.reach(tokens())
            if on_delta is not None:
                on_delta(text)

        return relay


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """One generation: the projected chat, the tools to offer (JSON-schema dicts), sampling."""

    messages: list[ChatMessage]
    sampling: SamplingParams = field(default_factory=SamplingParams)
    tools: list[dict[str, Any]] | None = None
    #: The agent asking: a backend with several instances keeps an agent on one of them, so
    #: the model's prompt cache (prefix reuse) survives from turn to turn.
    agent_id: int = 0
    #: Where the backend reports the tokens produced so far (see `GenerationProgress`).
    progress: GenerationProgress = field(
        default_factory=GenerationProgress, repr=False, compare=False
    )


@dataclass(frozen=True, slots=True)
class GenerationResult:
    """What a generation produced."""

    text: str
    tokens: int
    #: Tokens of the prompt as this backend counted them (0: it does not say).
    prompt_tokens: int = 0


class ModelBackend(ABC):
    """An inference engine for one model name.

    `generate` runs on the engine loop; cancelling the awaiting task must stop the generation
    within a few tokens. A backend should count each token it produces in `request.progress`
    as it goes, so that a cancelled or timed-out turn still counts them (a backend that does
    not is counted only by the `tokens` of the result it returns).
    """

    name: str

    @abstractmethod
    async def generate(
        self, request: GenerationRequest, on_delta: Callable[[str], None] | None = None
    ) -> GenerationResult:
        """Generate a reply for `request`, calling `on_delta` with each piece of text."""

    def context_tokens(self) -> int | None:
        """How many tokens one agent's prompt and reply may take together (the model's
        context), as far as is known without asking a server; None: no limit known."""
        return None

    async def reply_room(self, request: GenerationRequest) -> int | None:
        """The context `request`'s prompt and reply share (None: no limit known, so no history
        is left out) less the room kept for the reply: `max_tokens`, or more where a grammar
        forces a call's head and lets the call run past `max_tokens` to close. So: the most
        tokens the prompt may have."""
        context = self.context_tokens()
        return None if context is None else context - request.sampling.max_tokens

    async def count_prompt_tokens(self, request: GenerationRequest) -> int:
        """The tokens of the prompt `request` renders to (its chat and tools, as this model
        renders and tokenizes them). Called only where `reply_room` is not None."""
        raise NotImplementedError(f"backend {type(self).__name__} cannot count tokens")

    def count_tokens_now(
        self, messages: list[ChatMessage], tools: list[dict[str, Any]] | None = None
    ) -> int | None:
        """The prompt tokens of a chat (offering `tools`), if they can be counted at once
        (without loading weights or asking a server): for checks when an agent is made or its
        params change. None: not now."""
        return None

    def tool_call_family(self) -> ToolCallFamily:
        """The call markup this model emits, which picks the parser for its output."""
        return ToolCallFamily.GENERIC

    def tool_support_error(self) -> str | None:
        """Why this model cannot render tools, or None if it can."""
        return None

    def default_tool_decision(self) -> str:
        """How a ToolCall node that names no `decision` decides on this model: `"generate"`
        (the model writes its call) or `"score"` (see `tool_decision`)."""
        return "generate"

    def measured(self, name: str) -> Mapping[str, float] | None:
        """Values the `score` decision would measure at this model's first decision, if they
        were measured once for this model file and ship with it, under `name` (which names
        what was measured, and how); None: measure them."""
        return None

    def scoring_error(self) -> str | None:
        """Why this backend cannot score texts by likelihood (so a ToolCall node's `score`
        decision falls back to generating), or None if it can (`score_choices`)."""
        return f"backend {type(self).__name__} cannot score texts by likelihood"

    async def score_choices(
        self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
    ) -> list[float]:
        """How likely the model is to continue the raw text `prompt` (no chat template) with
        each of `choices`, as a choice among them: the natural-log probabilities of the tokens
        where the choices part ways, summed along each one (tokens that no other choice could
        take instead count as certain). `greedy` follows only the likeliest branch at each
        parting, so only the choice it reaches scores (the rest get -inf): one model step per
        parting instead of one per branch. Only where `scoring_error()` is None."""
        raise NotImplementedError(self.scoring_error())
