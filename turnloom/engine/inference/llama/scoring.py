"""Likelihood scoring on a GGUF model: how likely each of some choices is to follow a prompt.

This is the primitive the ToolCall node's `score` decision runs on
(`turns.nodes.score.decision`). It works on the instance's own llama.cpp context, on its worker
thread, without a second model and without `logits_all`. The choices' tokens form a trie; the
model is asked for a row of logits only where the trie branches (the prompt's own last row
covers the first branching), because on a model with a large vocabulary (Gemma's 262k) each row
costs about as much as the rest of the model's step. Tokens on an unbranched stretch are fed
along with the next branching's decode and count as certain: the choice is among the given
texts, not over all text.

Scoring runs as agents of its own on each instance (`SCORING_AGENT` and the keys below it),
whichever agent asks: the `score` decision's prompts start with a few-shot header that depends
on the node's tools only (or, for whether a line is a request at all, on nothing), so each
header stays in a cached prompt of its own, under a key of its own (`scoring_key`: one per
header in use, told apart by the prompt's first characters; kept in host memory while agents
generate, as theirs is: `kept`), and a decision reads only what follows it. A fresh NPC's first
decision then costs its line and choices, not the whole header; six tools cost about what three
do, although their header is twice as long; and a decision that asks two prompts in turn, or
NPCs with other tools talked to in turn, re-read no header. (The keys were once a hash of those
characters: two headers whose hashes met took one cached prompt in turn, and each read the
whole of its header again at every decision, four times the time.)

llama.cpp's results depend, in their last bits, on how much of a prompt was cached: a near tie
between two values (a few hundredths of a nat) can go either way depending on what was scored
before.
"""

from __future__ import annotations

import asyncio
import math
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..catalog import CatalogEntry
from .native import Instance

if TYPE_CHECKING:
    from llama_cpp import Llama

__all__ = ["SCORING_AGENT", "LikelihoodScoring", "choice_logprobs", "scoring_key"]

#: The first key the scorer's cached prompts are kept under on each instance (no agent has
#: it); the others count down from it.
SCORING_AGENT = -1
#: How many cached prompts the scorer may keep per instance (a few per tool set in use), and
#: how much of a prompt tells them apart: more than any header's first example.
_SCORING_KEYS = 1024
_KEYED_CHARS = 256


class LikelihoodScoring:
    """The scoring half of `LlamaModel` (a mixin, so that module keeps to generation)."""

    entry: CatalogEntry
    _instances: list[Instance]

    def default_tool_decision(self) -> str:
        """The catalog entry's `tool_decision`."""
        return self.entry.tool_decision

    def scoring_error(self) -> str | None:
        """None: a GGUF model can always score."""
        return None

    def measured(self, name: str) -> Mapping[str, float] | None:
        """The catalog entry's `measured` values under `name`."""
        return self.entry.measured.get(name)

    async def score_choices(
        self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
    ) -> list[float]:
        """See `ModelBackend.score_choices`; runs on the agent's instance thread, in the
        scorer's cached prompt (module docstring)."""
        inst = self._instances[agent_id % len(self._instances)]
        future = inst.executor.submit(_score_on_worker, inst, prompt, list(choices), greedy)
        return await asyncio.wrap_future(future)


class _ScoringKeys:
    """The keys given to the headers in use, by their first `_KEYED_CHARS` characters: a new
    header takes the next free key, or once all `_SCORING_KEYS` are given, the least recently
    used one's (whose cached prompt the new header then replaces: its tokens differ, so it is
    read anew). Shared by every instance's worker thread, hence the lock."""

    def __init__(self) -> None:
        self._keys: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def key(self, prompt: str) -> int:
        head = prompt[:_KEYED_CHARS]
        with self._lock:
            key = self._keys.get(head)
            if key is not None:
                self._keys.move_to_end(head)
                return key
            if len(self._keys) < _SCORING_KEYS:
                key = SCORING_AGENT - len(self._keys)
            else:
                _, key = self._keys.popitem(last=False)
            self._keys[head] = key
            return key


_KEYS = _ScoringKeys()


def scoring_key(prompt: str) -> int:
    """The key the scorer keeps `prompt`'s cached prompt under: one per header in use, no two
    headers sharing one (at most `_SCORING_KEYS` of them, the least recently used giving its
    key up to a new one)."""
    return _KEYS.key(prompt)


def _score_on_worker(inst: Instance, prompt: str, choices: list[str], greedy: bool) -> list[float]:
    """`choice_logprobs` in the scorer's cached prompt (module docstring)."""
    llm = inst.serve(scoring_key(prompt))
    # special=False: the prompt holds the player's words, which must not become control tokens.
    prefix = list(llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False))
    tails = []
    for text in choices:
        whole = list(llm.tokenize((prompt + text).encode("utf-8"), add_bos=True, special=False))
        if whole[: len(prefix)] == prefix and len(whole) > len(prefix):
            tails.append(whole[len(prefix) :])
        else:  # the boundary merged into one token: take the choice's own tokens
            tails.append(list(llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)))
    return choice_logprobs(llm, prefix, tails, greedy=greedy)


#: A row of logits and its log-sum-exp (`choice_logprobs`).
_Row = tuple[Any, float]


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)  # the choices that end here


def choice_logprobs(
    llm: Llama, prefix: list[int], tails: list[list[int]], *, greedy: bool = False
) -> list[float]:
    """Per token list in `tails`: its summed log-probability after `prefix` at the tokens
    where the lists branch (see the module docstring; `greedy` as `score_choices`)."""
    import numpy as np

    if not prefix:
        raise ValueError("scoring needs a prompt of at least one token")
    root = _Node()
    for index, tail in enumerate(tails):
        node = root
        for token in tail:
            node = node.children.setdefault(token, _Node())
        node.ends.append(index)

    head = len(prefix)
    # Reuse the cached prefix, as Llama.generate does (eval drops the cache past n_tokens);
    # the last prompt token is always decoded, for its row of logits.
    shared = 0
    for a, b in zip(llm.input_ids[: llm.n_tokens].tolist(), prefix[: head - 1], strict=False):
        if a != b:
            break
        shared += 1
    llm.n_tokens = shared
    llm.eval(prefix[shared:])
    ctx, batch, n_vocab = llm._ctx, llm._batch, llm.n_vocab()

    scratch = np.empty(n_vocab, dtype=np.float32)

    def log_softmax_row() -> _Row:
        # The logits as llama.cpp holds them (valid until the next decode: each row is read
        # before the walk decodes again) and their log-sum-exp; a token's log-probability is
        # its logit less that. Only the sum is taken in float64: exp in float32 over the 262k
        # entries costs a tenth of a float64 copy of the row, for 1e-8 nats.
        row = np.ctypeslib.as_array(ctx.get_logits_ith(-1), shape=(n_vocab,))
        top = float(row.max())
        np.subtract(row, top, out=scratch)
        np.exp(scratch, out=scratch)
        return row, top + math.log(float(scratch.sum(dtype=np.float64)))

    def row_after(path: list[int]) -> _Row:
        ctx.kv_cache_seq_rm(-1, head, -1)
        batch.set_batch(batch=path, n_past=head, logits_all=False)
        ctx.decode(batch)
        return log_softmax_row()

    scores = [-math.inf] * len(tails)
    try:
        stack: list[tuple[_Node, list[int], float, _Row | None]] = [
            (root, [], 0.0, log_softmax_row())
        ]
        while stack:
            node, path, logp, row = stack.pop()
            for index in node.ends:
                scores[index] = logp
            if not node.children:
                continue
            if len(node.children) == 1 and not node.ends:  # no parting here: certain
                ((token, child),) = node.children.items()
                stack.append((child, [*path, token], logp, None))
                continue
            logits, total = row_after(path) if row is None else row
            branches = list(node.children.items())
            if greedy:
                branches = [max(branches, key=lambda item: logits[item[0]])]
            for token, child in branches:
                stack.append((child, [*path, token], logp + float(logits[token]) - total, None))
    finally:
        ctx.kv_cache_seq_rm(-1, head, -1)
        llm.n_tokens = head
    return scores
