"""Choosing among texts by likelihood with the model's bias taken out: the primitive the
`score` decision's tool and argument choices share (`score_decision`, `score_arguments`).

Raw likelihoods mostly measure the model's taste for a label, so each choice's score is taken
relative to its average probability after content-free lines ("N/A", "", "[MASK]": Zhao et
al., *Calibrate Before Use*, 2021), computed once per backend and prompt and cached.
"""

from __future__ import annotations

import json
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence

from ...inference.base import ModelBackend

__all__ = ["best", "calibrated_scores", "one_line", "prompt"]

#: "Calibrate before use": lines that carry no content, whose scores show the model's bias.
_CONTENT_FREE = ("N/A", "", "[MASK]")
#: Per backend (each model has its own biases), the content-free scores of the latest prompts.
_CALIBRATIONS: weakref.WeakKeyDictionary[ModelBackend, OrderedDict[str, list[float]]] = (
    weakref.WeakKeyDictionary()
)
_CALIBRATIONS_KEPT = 256
_CALIBRATIONS_LOCK = threading.Lock()  # engines on several threads may share a backend


def one_line(text: str) -> str:
    """`text` with its whitespace runs (newlines included) made single spaces."""
    return " ".join(text.split())


def prompt(header: str, line: str, tail: str) -> str:
    """A scoring prompt: the `header`'s examples, the player's `line`, then `tail`."""
    return f"{header}Player: {one_line(line)}{tail}"


async def calibrated_scores(
    backend: ModelBackend,
    header: str,
    tail: str,
    choices: Sequence[str],
    line: str,
    agent_id: int,
    *,
    calibrate_on: str | None = None,
) -> list[float]:
    """Each choice's log-probability after `header` and `line` over its average after
    content-free lines, after `calibrate_on` (default: the same `header`)."""
    calibrate_on = header if calibrate_on is None else calibrate_on
    key = json.dumps([calibrate_on, tail, list(choices)])
    with _CALIBRATIONS_LOCK:
        cache = _CALIBRATIONS.setdefault(backend, OrderedDict())
        bias = cache.get(key)
        if bias is not None:
            cache.move_to_end(key)
    if bias is None:
        totals = [0.0] * len(choices)
        for empty in _CONTENT_FREE:
            scores = await backend.score_choices(
                prompt(calibrate_on, empty, tail), choices, agent_id=agent_id
            )
            for i, p in enumerate(_normalized(scores)):
                totals[i] += p / len(_CONTENT_FREE)
        bias = [math.log(max(p, 1e-12)) for p in totals]
        with _CALIBRATIONS_LOCK:
            cache[key] = bias
            while len(cache) > _CALIBRATIONS_KEPT:
                cache.popitem(last=False)
    scores = await backend.score_choices(prompt(header, line, tail), choices, agent_id=agent_id)
    return [s - b for s, b in zip(scores, bias, strict=True)]


def best(scores: Sequence[float]) -> tuple[int, float]:
    """The index of the highest score and its lead over the next (inf if it is alone)."""
    order = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
    if len(order) < 2:
        return order[0], math.inf
    return order[0], scores[order[0]] - scores[order[1]]


def _normalized(logps: list[float]) -> list[float]:
    top = max(logps)
    weights = [math.exp(lp - top) for lp in logps]
    total = sum(weights)
    return [w / total for w in weights]
