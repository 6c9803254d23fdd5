"""What a model-using node asks of its model: how to sample (`SamplingParams`) and how much of
the dialog its prompt keeps (`HistoryParams`). Both are nested in Generate and ToolCall params.
"""

from __future__ import annotations

from dataclasses import dataclass

from .fields import Declared, param

#: The longest timeout a param or setting takes, in ms (about 24.8 days): the largest signed
#: 32-bit int, so it fits the int fields of clients in other languages (C# for Unity, C++ for
#: Unreal). A longer wait is `0`, "forever".
MAX_TIMEOUT_MS = 2**31 - 1
#: The largest explicit seed: llama.cpp takes a uint32 seed and reads 0xFFFFFFFF as "random".
MAX_SEED = 2**32 - 2
#: Larger than any model's vocabulary (the largest are about 262k tokens): top_k past it is the
#: same as 0, "off", so nothing is lost by refusing it.
MAX_TOP_K = 1_000_000
#: The longest reply one generation may produce, in tokens.
MAX_TOKENS = 32768
#: The largest prompt budget a node may set, in tokens: past any model's context.
MAX_PROMPT_TOKENS = 2**24


@dataclass(slots=True)
class SamplingParams(Declared):
    """Sampling options for a model-using node. All mutable."""

    temperature: float = param(0.7, min=0.0, max=5.0, doc="0 = greedy")
    top_p: float = param(0.95, min=0.0, max=1.0, doc="nucleus sampling; 1 = off")
    top_k: int = param(40, min=0, max=MAX_TOP_K, doc="0 = off")
    min_p: float = param(0.05, min=0.0, max=1.0, doc="0 = off")
    repeat_penalty: float = param(1.1, min=0.0, max=10.0, doc="1 = off")
    max_tokens: int = param(256, min=1, max=MAX_TOKENS, doc="longest reply, in tokens")
    seed: int = param(-1, min=-1, max=MAX_SEED, doc="-1 = random")
    timeout_ms: int = param(
        0, min=0, max=MAX_TIMEOUT_MS, doc="time budget of one generation; 0 = none (4002)"
    )


@dataclass(slots=True)
class HistoryParams(Declared):
    """How much of the dialog a model-using node's prompt keeps. All mutable.

    Before each generation the prompt (system prompt, earlier exchanges, this turn) must leave
    room in the model's context for the reply (`max_tokens`, and the head of a call a grammar
    forces). When it would not, the oldest whole exchanges are left out of the prompt, in one
    go, until the prompt fills at most `trim_to` of its budget: the exchanges kept then stay the
    same for several turns, so the model's prompt cache keeps working. The system prompt, this
    turn's message and pinned exchanges are never left out; the dialog itself keeps everything.
    """

    trim: bool = param(
        True, doc="leave out the oldest exchanges when the prompt would not fit; off = 4001"
    )
    trim_to: float = param(
        0.75, min=0.1, max=1.0, doc="after leaving some out, the prompt fills at most this share"
    )
    keep_first: int = param(
        0, min=0, max=MAX_PROMPT_TOKENS, doc="the dialog's first N exchanges are never left out"
    )
    max_prompt_tokens: int = param(
        0,
        min=0,
        max=MAX_PROMPT_TOKENS,
        doc="a smaller prompt budget, in tokens; 0 = the model's context less the reply's room",
    )
