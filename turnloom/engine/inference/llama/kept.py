"""Each agent's cached prompt, kept while another agent uses the instance.

A llama.cpp instance holds one conversation's KV cache at a time. NPCs talked to in turn on
one model would each find the previous NPC's prompt there and re-read their whole prompt:
3,700 of 3,900 tokens a turn with four NPCs on the default model, 0.9 s a turn instead of 0.4.
So when an instance passes to another agent, the KV cells of the agent that had it are copied
to host memory (llama.cpp's per-sequence state, about 11 MB and 7 ms per 1,000 tokens of the
default model) and put back when that agent speaks again (3 ms): its next prompt then shares
its whole cached prefix, as if it had never left. The copies are capped in bytes (least
recently used dropped first); a dropped agent re-reads its prompt once, as before.
"""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llama_cpp import Llama

#: Host memory for the kept prompts of one model's agents, by default (MB): 45 agents with
#: 1,000 tokens each, or 11 with a full 4,096-token context, of the default model.
DEFAULT_KEPT_MB = 512
#: The one sequence a high-level `Llama` context uses.
_SEQUENCE = 0


@dataclass(slots=True)
class _Kept:
    cells: Any  # a ctypes byte array: llama.cpp's state of the sequence
    tokens: list[int]


class KeptPrompts:
    """The agents' cached prompts of one instance: which agent's is in the context, and the
    others' in host memory, within `limit_bytes`."""

    def __init__(self, limit_bytes: int) -> None:
        self.limit_bytes = limit_bytes
        #: The agent whose prompt the context holds (None: nobody's yet).
        self.current: int | None = None
        self._kept: OrderedDict[int, _Kept] = OrderedDict()
        self._bytes = 0

    @property
    def kept_bytes(self) -> int:
        """Host memory the kept prompts take."""
        return self._bytes

    def agents(self) -> list[int]:
        """The agents whose prompts are kept in host memory, least recently used first."""
        return list(self._kept)

    def switch_to(self, llm: Llama, agent_id: int) -> None:
        """Make `llm`'s context (one sequence) hold `agent_id`'s prompt: its kept copy, or
        nothing; the agent that had it is kept (worker thread)."""
        if self.current == agent_id:
            return
        if self.current is not None and llm.n_tokens > 0:
            self.save(llm.ctx, _SEQUENCE, self.current, llm.input_ids[: llm.n_tokens].tolist())
        llm.reset()
        tokens = self.restore(llm.ctx, _SEQUENCE, agent_id)
        if tokens:
            llm.input_ids[: len(tokens)] = tokens
            llm.n_tokens = len(tokens)
        self.current = agent_id

    def save(self, ctx: Any, seq: int, agent_id: int, tokens: list[int]) -> None:
        """Copy sequence `seq` of `ctx` (holding `tokens`) to host memory as `agent_id`'s, if
        it fits the cap, and empty the sequence."""
        import llama_cpp

        size = llama_cpp.llama_state_seq_get_size(ctx, seq) if tokens else 0
        if 0 < size <= self.limit_bytes:
            cells = (ctypes.c_uint8 * size)()
            if llama_cpp.llama_state_seq_get_data(ctx, cells, size, seq) == size:
                self._keep(agent_id, _Kept(cells, list(tokens)))
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), seq, -1, -1)

    def restore(self, ctx: Any, seq: int, agent_id: int) -> list[int]:
        """Put `agent_id`'s kept prompt into the empty sequence `seq` of `ctx` (and forget the
        copy); the tokens it holds, [] if none was kept."""
        import llama_cpp

        kept = self._kept.pop(agent_id, None)
        if kept is None:
            return []
        size = len(kept.cells)
        self._bytes -= size
        if llama_cpp.llama_state_seq_set_data(ctx, kept.cells, size, seq) == size:
            return kept.tokens
        # Refused (not seen): start from an empty sequence, as without keeping.
        llama_cpp.llama_memory_seq_rm(llama_cpp.llama_get_memory(ctx), seq, -1, -1)
        return []

    def _keep(self, agent_id: int, kept: _Kept) -> None:
        old = self._kept.pop(agent_id, None)
        if old is not None:
            self._bytes -= len(old.cells)
        self._kept[agent_id] = kept
        self._bytes += len(kept.cells)
        while self._bytes > self.limit_bytes and self._kept:
            _, dropped = self._kept.popitem(last=False)
            self._bytes -= len(dropped.cells)
