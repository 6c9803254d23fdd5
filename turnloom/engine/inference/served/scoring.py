"""The `score` decision's half of `ServedModel`: likelihood scoring on the server, and whether
this server can do it at all.

Whether it can is known from the server's kind (an `openai` server cannot), then asked of the
server once, at the first `scoring_error()`: a completion asking for log-probabilities that
samples one token at most (`probe.probe_request`). The answer is kept, unless the server
could not be reached or was busy (it may come up later). That first call blocks for the one
small request (at most `_PROBE_SECONDS`: a server that is busy for longer is asked again next
time), on the engine loop where a node asks; a host that wants no such wait on the loop calls
`scoring_error()` itself before creating agents. Not at the model's creation: a served model
sends nothing until it is needed, so that it can be made before its server is up.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ...support.logs import get_logger
from ..catalog import CatalogEntry
from .errors import ServedModelError
from .kinds import ServerKind
from .logprobs import ScoringStats, ServedScorer
from .probe import probe_request, probe_verdict, scorer_for, unsupported_reason
from .under_way import UnderWay

if TYPE_CHECKING:
    import threading

    from .transport import Transport

log = get_logger("turnloom.served")

#: How long the probe may wait (on the engine loop): a server busy for longer is asked again
#: at the next node that wants to score.
_PROBE_SECONDS = 10.0
#: Statuses that say the server is busy or starting, not what it can do: not kept.
_PASSING = frozenset({502, 503, 504})


class ServedScoring:
    """The scoring half of `ServedModel` (a mixin, so that module keeps to generation)."""

    name: str
    entry: CatalogEntry
    server_kind: ServerKind
    model: str | None
    _transport: Transport
    _lock: threading.Lock
    #: Generations and scorings under way (`wait_idle`).
    _under_way: UnderWay
    #: The probe's verdict once known: (None,) can score, (reason,) cannot.
    _scoring_verdict: tuple[str | None] | None
    _scorer: ServedScorer | None
    #: The most recent `score_choices` calls, newest last (each from its start).
    scorings: deque[ScoringStats]

    def _init_scoring(self) -> None:
        self._scoring_verdict = None
        self._scorer = None
        self.scorings = deque(maxlen=128)

    def default_tool_decision(self) -> str:
        """The catalog entry's `tool_decision` (where the server cannot score, a node asking
        for `score` generates instead, saying why in its diagnostics)."""
        return self.entry.tool_decision

    def measured(self, name: str) -> Mapping[str, float] | None:
        """The catalog entry's `measured` values under `name` (the entry names the model file
        the server serves)."""
        return self.entry.measured.get(name)

    def scoring_error(self) -> str | None:
        """Why this server cannot score texts by likelihood, or None if it can: known from its
        kind, else asked once (blocking; see the module docstring)."""
        verdict = self._scoring_verdict
        if verdict is not None:
            return verdict[0]
        reason = unsupported_reason(self.server_kind)
        keep = True
        if reason is None:
            path, body = probe_request(self.server_kind, self.model)
            try:
                status, reply, message = self._transport.post_blocking(
                    path, body, timeout=_PROBE_SECONDS
                )
            except ServedModelError as exc:
                status, reply, message, keep = 0, None, str(exc), False
            if status == 0:
                reason = f"it could not be asked ({message})"
            else:
                keep = status not in _PASSING
                reason = probe_verdict(self.server_kind, status, reply, message)
        if reason is not None:
            reason = (
                f"model '{self.name}': the {self.server_kind.value} server at "
                f"{self._transport.base_url} cannot score by likelihood: {reason}"
            )
        if keep:
            with self._lock:
                self._scoring_verdict = (reason,)
        log.debug("served.scoring_probe", model=self.name, reason=reason, kept=keep)
        return reason

    async def score_choices(
        self, prompt: str, choices: Sequence[str], *, greedy: bool = False, agent_id: int = 0
    ) -> list[float]:
        """See `ModelBackend.score_choices`: asked of the server (4001 on its failures); only
        where `scoring_error()` is None."""
        reason = self.scoring_error()
        if reason is not None:
            raise ServedModelError(reason)
        if self._scorer is None:
            self._scorer = scorer_for(self.server_kind, self._transport, self.model)
        stats = ScoringStats(choices=len(choices), greedy=greedy)
        started = time.perf_counter()
        self._under_way.begin()
        self.scorings.append(stats)
        try:
            return await self._scorer.scores(prompt, list(choices), greedy, stats)
        except asyncio.CancelledError:
            stats.cancelled = True
            raise
        except ServedModelError as exc:
            stats.error = str(exc)
            raise ServedModelError(f"model '{self.name}': {exc}") from None
        finally:
            stats.seconds = time.perf_counter() - started
            stats.finished = True
            self._under_way.end()
            log.debug(
                "served.scored",
                model=self.name,
                agent_id=agent_id,
                choices=stats.choices,
                greedy=greedy,
                partings=stats.partings,
                requests=stats.requests,
                seconds=round(stats.seconds, 3),
            )
