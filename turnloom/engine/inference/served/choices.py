"""The choices of a scoring as a token trie, and their scores from the rows a server sends.

The same rule as the local model's scorer (`inference.llama.scoring`): a choice's score is the
sum of the log-probabilities of its tokens at the partings, the nodes of the trie where more
than one way goes on (or where one choice ends and another goes on); a token no other choice
could take instead counts as certain. A server is asked only for the log-probabilities of the
tokens that can come next at each parting (`Parting.tokens`), so how it is asked (one request
per parting, several at once, or whole sequences) is the caller's business.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["ChoiceTrie", "Parting", "RowFetcher", "Tokenize", "choice_tails"]


@dataclass
class _Node:
    children: dict[int, _Node] = field(default_factory=dict)
    ends: list[int] = field(default_factory=list)  # the choices that end here


@dataclass(frozen=True, slots=True)
class Parting:
    """A node where choices part ways: the tokens after the prompt that lead to it, and the
    tokens that can come next there."""

    path: tuple[int, ...]
    tokens: tuple[int, ...]


#: Asked for the next-token log-probabilities at some partings: one mapping per parting, from
#: each of its `tokens` to its log-probability.
RowFetcher = Callable[[Sequence[Parting]], Awaitable[list[Mapping[int, float]]]]


#: A server's tokenizer: a text's tokens, with what it puts before a whole prompt (its BOS)
#: when the flag is set, without it otherwise.
Tokenize = Callable[[str, bool], Awaitable[list[int]]]


async def choice_tails(
    prompt: str, choices: Sequence[str], tokenize: Tokenize
) -> tuple[list[int], list[list[int]]]:
    """The prompt's tokens, and each choice's tokens after them: the prompt and each prompt +
    choice tokenized at once, and the choice's own tokens where the boundary merged into one
    token (as the local model's scorer does)."""
    texts = [prompt, *(prompt + choice for choice in choices)]
    prefix, *wholes = await asyncio.gather(*(tokenize(text, True) for text in texts))
    if not prefix:
        raise ValueError("scoring needs a prompt of at least one token")
    tails = []
    for choice, whole in zip(choices, wholes, strict=True):
        if whole[: len(prefix)] == prefix and len(whole) > len(prefix):
            tails.append(whole[len(prefix) :])
        else:  # the boundary merged into one token: take the choice's own tokens
            tails.append(await tokenize(choice, False))
    return prefix, tails


class ChoiceTrie:
    """The choices' token lists after the prompt, as a trie."""

    def __init__(self, tails: Sequence[Sequence[int]]) -> None:
        self.count = len(tails)
        self._root = _Node()
        for index, tail in enumerate(tails):
            node = self._root
            for token in tail:
                node = node.children.setdefault(token, _Node())
            node.ends.append(index)

    def partings(self) -> list[Parting]:
        """Every parting, parents before children."""
        found: list[Parting] = []
        stack: list[tuple[_Node, tuple[int, ...]]] = [(self._root, ())]
        while stack:
            node, path = stack.pop(0)
            if _parts(node):
                found.append(Parting(path, tuple(node.children)))
            stack.extend((child, (*path, token)) for token, child in node.children.items())
        return found

    async def scores(self, fetch: RowFetcher, *, greedy: bool = False) -> list[float]:
        """Each choice's summed log-probability at the partings (see the module docstring);
        `greedy` follows only the likeliest token at each parting, so only the choice it
        reaches scores and the rest get -inf. Without `greedy`, `fetch` is called once with
        every parting; with it, once per parting on the way, in order."""
        scores = [-math.inf] * self.count
        if not greedy:
            partings = self.partings()
            rows = dict(zip((p.path for p in partings), await fetch(partings), strict=True))
            self._walk(self._root, (), 0.0, rows, scores)
            return scores
        node, logp = self._root, 0.0
        path: tuple[int, ...] = ()
        while True:
            for index in node.ends:
                scores[index] = logp
            if not node.children:
                return scores
            if not _parts(node):
                ((token, node),) = node.children.items()
                path = (*path, token)
                continue
            (row,) = await fetch([Parting(path, tuple(node.children))])
            token = max(node.children, key=lambda t: row[t])
            node, path, logp = node.children[token], (*path, token), logp + row[token]

    def _walk(
        self,
        node: _Node,
        path: tuple[int, ...],
        logp: float,
        rows: Mapping[tuple[int, ...], Mapping[int, float]],
        scores: list[float],
    ) -> None:
        for index in node.ends:
            scores[index] = logp
        row = rows.get(path) if _parts(node) else None
        for token, child in node.children.items():
            gain = 0.0 if row is None else row[token]
            self._walk(child, (*path, token), logp + gain, rows, scores)


def _parts(node: _Node) -> bool:
    """Whether choices part ways at `node` (so its next token is scored)."""
    return len(node.children) > 1 or bool(node.children and node.ends)
