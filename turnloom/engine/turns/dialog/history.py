"""The history budget: which earlier exchanges a model-using node's prompt keeps.

Before each generation the prompt must leave room in the model's context for the reply. When
the prompt at the node's current first kept exchange would pass its budget, the oldest
exchanges are left out in one go, down to a low-water mark (`HistoryParams.trim_to` of the
budget), and the node remembers where its kept history now starts (`node_state`, kept in
snapshots). Later turns append to that history until the budget is passed again, so the
prompt's prefix stays the same for several turns and the model's prompt cache keeps working.
A trim of one exchange per turn would change the prefix every turn and re-evaluate it all.

Never left out: the system prompt, this turn's exchange (its user message and any tool calls
and results so far) and pinned exchanges (the first `keep_first`, and those marked pinned in a
seeded dialog). Whole exchanges go, so a tool call never loses its result. The dialog itself
keeps every exchange: only the prompt leaves them out.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ...graph.model_params import HistoryParams
from ...graph.params import NodeParams
from ...inference.base import ChatMessage, GenerationRequest, ModelBackend
from ...support.guards import brief
from ...support.rejections import InvalidParamValue
from ..results import InferenceFailed
from .projection import Interaction

#: Where a node's `node_state` keeps the index of its first kept (unpinned) exchange.
START_KEY = "history_start"


async def choose_start(
    count: Callable[[int], Awaitable[int]],
    *,
    exchanges: int,
    start: int,
    budget: int,
    low_water: int,
) -> tuple[int, int] | None:
    """The first exchange to keep and the prompt's tokens then, or None if even leaving out
    every unpinned exchange leaves the prompt over `budget`.

    `count(s)` is the prompt's tokens when it keeps the exchanges from `s` on (pinned ones
    too), for `start <= s <= exchanges`; it must not grow with `s`. While the prompt from
    `start` fits the budget, `start` stays. Past it, the start moves to the first exchange from
    which the prompt fits `low_water` (or, if nothing does, the budget).
    """
    start = min(max(start, 0), exchanges)
    tokens = await count(start)
    if tokens <= budget:
        return start, tokens
    least = await count(exchanges)
    if least > budget:
        return None
    target = low_water if least <= low_water else budget
    low, high = start + 1, exchanges  # count(start) > budget >= target, count(high) <= target
    while low < high:
        middle = (low + high) // 2
        if await count(middle) <= target:
            high = middle
        else:
            low = middle + 1
    return high, await count(high)


def kept_exchanges(dialog: Sequence[Interaction], start: int, keep_first: int) -> list[Interaction]:
    """The exchanges a prompt keeps: the pinned ones before `start`, then all from `start`."""
    pinned = [
        past for index, past in enumerate(dialog[:start]) if index < keep_first or past.pinned
    ]
    return [*pinned, *dialog[start:]]


async def fit_history(
    backend: ModelBackend,
    history: HistoryParams,
    dialog: Sequence[Interaction],
    state: dict[str, Any],
    build: Callable[[Sequence[Interaction]], GenerationRequest],
) -> tuple[GenerationRequest, dict[str, Any] | None]:
    """The request of a generation whose prompt fits (built by `build` from the exchanges it
    keeps) and what the budget did, for the node's diagnostics (None: nothing was counted).

    Raises `InferenceFailed` (4001), naming both sizes, when nothing can make it fit.
    """
    if not history.trim:
        return build(dialog), None
    # The reply's room depends on the sampling and the tools, not on the dialog.
    bare = build(())
    room = await backend.reply_room(bare)
    if room is None:
        return build(dialog), None
    budget = min(room, history.max_prompt_tokens) if history.max_prompt_tokens else room
    if budget <= 0:
        raise InferenceFailed(
            f"model '{backend.name}': its context of {backend.context_tokens()} tokens leaves "
            f"no room for a prompt after the reply's {bare.sampling.max_tokens} max_tokens"
        )
    requests: dict[int, tuple[GenerationRequest, int]] = {}
    counts: dict[int, int] = {}

    async def count(start: int) -> int:
        if start not in counts:
            kept = kept_exchanges(dialog, start, history.keep_first)
            request = build(kept)
            requests[start] = (request, len(kept))
            counts[start] = await backend.count_prompt_tokens(request)
        return counts[start]

    before = min(int(state.get(START_KEY, 0)), len(dialog))
    chosen = await choose_start(
        count,
        exchanges=len(dialog),
        start=before,
        budget=budget,
        low_water=int(budget * history.trim_to),
    )
    if chosen is None:
        least = counts[len(dialog)]
        raise InferenceFailed(
            f"model '{backend.name}': the prompt is {least} tokens with every earlier exchange "
            f"that is not pinned left out, over its budget of {budget} tokens (the context of "
            f"{backend.context_tokens()} less the reply's room); shorten the system prompt or "
            "the pinned exchanges, or lower max_tokens"
        )
    start, tokens = chosen
    state[START_KEY] = start
    request, kept = requests[start]
    diagnostics: dict[str, Any] = {
        "prompt_tokens": tokens,
        "budget_tokens": budget,
        "first_kept": start,
        "left_out": len(dialog) - kept,
    }
    if start > before:
        diagnostics["newly_left_out"] = [before, start]
    return request, diagnostics


def check_fits(where: str, node_name: str, params: NodeParams, backend: ModelBackend) -> None:
    """Refuse (3007) params with which no prompt of the node could ever fit, as far as can be
    told now without loading a model or asking a server (`fit_error`)."""
    history = getattr(params, "history", None)
    if not isinstance(history, HistoryParams):
        return
    sampling = getattr(params, "sampling", None)
    max_tokens = getattr(sampling, "max_tokens", 0)
    tools = [tool.json_schema() for tool in getattr(params, "tools", [])] or None
    system = str(getattr(params, "system_prompt", ""))
    reason = fit_error(backend, history, max_tokens, system, tools)
    if reason:
        raise InvalidParamValue(f"{where}: node {brief(node_name)}: {reason}")


def fit_error(
    backend: ModelBackend,
    history: HistoryParams,
    max_tokens: int,
    system: str,
    tools: list[dict[str, Any]] | None = None,
) -> str:
    """Why no prompt of a node could ever fit (its reply's room, system prompt and tools alone
    pass the model's context), as far as can be told now; '' if nothing says so."""
    context = backend.context_tokens()
    if context is None or not history.trim:
        return ""
    budget = context - max_tokens
    if history.max_prompt_tokens:
        budget = min(budget, history.max_prompt_tokens)
    if budget <= 0:
        return (
            f"max_tokens {max_tokens} leaves no room for a prompt in the context of model "
            f"'{backend.name}' ({context} tokens)"
        )
    chat: list[ChatMessage] = [{"role": "system", "content": system}] if system else []
    least = backend.count_tokens_now([*chat, {"role": "user", "content": ""}], tools)
    if least is not None and least > budget:
        alone = "the system prompt and tools" if tools else "the system prompt"
        return (
            f"{alone} alone take {least} tokens, over the prompt budget of {budget} "
            f"tokens (the context of model '{backend.name}', {context} tokens, less max_tokens "
            f"{max_tokens})"
        )
    return ""
