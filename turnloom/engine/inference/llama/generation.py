"""One generation as a conversation with whatever decodes it.

A generation is a Python generator that asks for tokens: `Prime` (make the sequence hold these
tokens, reusing the prefix it already holds, and sample the next one) or `Next` (decode the
token just sampled and sample the next), and is sent each sampled token. So the rules of a
reply (stop strings, the lazy call trigger, a grammar switched on mid-reply, budgets, cancel)
read as straight-line code, written once, whether the tokens come from an instance's own
context (`drive_alone`, on its worker thread) or from the batched context that serves many
agents at once (`batching.BatchedDecoder`).
"""

from __future__ import annotations

import codecs
import time
from collections import deque
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...graph.model_params import SamplingParams
from ...support.logs import get_logger
from ..base import ChatMessage
from ..catalog import CatalogEntry, ToolGrammar
from .grammar import ToolCallGrammar
from .native import Instance
from .specials import detokenize
from .streaming import GenerationStats, Job, Reply

if TYPE_CHECKING:
    from llama_cpp import Llama

log = get_logger("turnloom.llama")

#: llama.cpp's seed for "random".
RANDOM_SEED = 0xFFFFFFFF
#: The repeat penalty's window, in sampled tokens (llama-cpp-python's `last_n_tokens_size`).
PENALTY_LAST_N = 64


@dataclass(slots=True)
class Prime:
    """Make the sequence hold `tokens` (its cached prefix reused) and sample the next token
    with `sampler`."""

    tokens: list[int]
    sampler: Any
    #: Set by the scheduler: how many of `tokens` it had to decode (the rest were cached).
    evaluated: int = 0


@dataclass(slots=True)
class Next:
    """Decode the token just sampled and sample the next one with `sampler`."""

    sampler: Any


Ask = Prime | Next
#: A running generation: asks for tokens, is sent each sampled token.
Generation = Generator[Ask, int, None]


def sampler_chain(llm: Llama, sampling: Any, grammar: str | None) -> Any:
    """A llama.cpp sampler chain as llama-cpp-python's `Llama.generate` builds one: repeat
    penalty, the grammar, then greedy at temperature 0, else top-k, top-p, min-p, temperature
    and a seeded draw."""
    import llama_cpp

    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())

    def add(sampler: Any) -> None:
        llama_cpp.llama_sampler_chain_add(chain, sampler)

    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    # The arguments llama-cpp-python's own `Llama.generate` passes (its binding still takes
    # n_vocab first), so a reply is the same on either path.
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)
    add(
        llama_cpp.llama_sampler_init_penalties(
            n_vocab, PENALTY_LAST_N, sampling.repeat_penalty, 0.0, 0.0
        )
    )
    if grammar is not None:
        add(llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode(), b"root"))
    if sampling.temperature == 0:
        add(llama_cpp.llama_sampler_init_greedy())
    else:
        add(llama_cpp.llama_sampler_init_top_k(sampling.top_k))
        add(llama_cpp.llama_sampler_init_typical(1.0, 1))
        add(llama_cpp.llama_sampler_init_top_p(sampling.top_p, 1))
        add(llama_cpp.llama_sampler_init_min_p(sampling.min_p, 1))
        add(llama_cpp.llama_sampler_init_temp(sampling.temperature))
        add(llama_cpp.llama_sampler_init_dist(sampling.seed if sampling.seed >= 0 else RANDOM_SEED))
    return chain


def sample_reply(
    inst: Instance,
    job: Job,
    tokens: list[int],
    sampler: Any,
    budget: int,
    reply: Reply,
    *,
    first: bool,
) -> Generator[Ask, int, int]:
    """Sample up to `budget` tokens after `tokens` into `reply` (as `streaming.sample` does on
    a context of its own); the count sampled."""
    import llama_cpp

    llm = inst.llama
    assert llm is not None
    stats = job.stats
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    count = 0
    if budget <= 0:
        return 0
    prime = Prime(tokens, sampler)
    token = yield prime
    try:
        while True:
            if count == 0 and first:
                stats.prompt_tokens_evaluated = prime.evaluated
                stats.seconds_to_first_token = time.perf_counter() - stats.started
            if job.cancelled.is_set():
                stats.cancelled = True
                break
            if llama_cpp.llama_vocab_is_eog(inst.vocab_ptr, token) or token in inst.stop_tokens:
                break
            count += 1
            stats.tokens += 1
            piece = decoder.decode(detokenize(llm, token, inst.marker_tokens))
            if piece and reply.add(piece):
                break
            if count >= budget:
                break
            token = yield Next(sampler)
    finally:
        llama_cpp.llama_sampler_free(sampler)
    rest = decoder.decode(b"", final=True)
    if rest:
        reply.add(rest)
    return count


def drive_alone(llm: Llama, generation: Generation) -> None:
    """Run one generation on a context of its own (an instance's, on its worker thread): the
    prefix the context holds is reused, as `Llama.generate` does."""
    import llama_cpp

    token = -1
    try:
        ask = next(generation)
    except StopIteration:
        return
    while True:
        if isinstance(ask, Prime):
            cached = llm.input_ids[: llm.n_tokens].tolist()
            common = 0
            limit = min(len(cached), len(ask.tokens))
            while common < limit and cached[common] == ask.tokens[common]:
                common += 1
            if common == len(ask.tokens):
                common -= 1  # the last token is decoded again, for its logits
            llm._ctx.kv_cache_seq_rm(-1, common, -1)
            llm.n_tokens = common
            ask.evaluated = len(ask.tokens) - common
            llm.eval(ask.tokens[common:])
        else:
            llm.eval([token])
        token = llama_cpp.llama_sampler_sample(ask.sampler, llm.ctx, -1)
        try:
            ask = generation.send(token)
        except StopIteration:
            return


class Replies:
    """The reply half of `LlamaModel` (a mixin, so that module keeps to loading and the
    model's faces): one generation as straight-line code."""

    name: str
    entry: CatalogEntry
    tool_grammar: ToolGrammar
    generations: deque[GenerationStats]

    if TYPE_CHECKING:  # LlamaModel's own, which these methods use

        def render_prompt(
            self,
            messages: Sequence[ChatMessage],
            tools: Sequence[Mapping[str, Any]] | None = None,
        ) -> str: ...
        def _tokenize_prompt(self, llm: Llama, prompt: str) -> list[int]: ...
        def _effective_sampling(self, requested: SamplingParams) -> SamplingParams: ...
        def _grammar_for(
            self, inst: Instance, tools: Sequence[Mapping[str, Any]], max_tokens: int
        ) -> ToolCallGrammar: ...

    def _generation(self, inst: Instance, job: Job) -> Generation:
        """One generation, asking its driver (an instance's context, or the batched one) for
        tokens; its record kept in `generations` when it ends."""
        stats = job.stats
        stats.started = started = time.perf_counter()
        try:
            yield from self._reply(inst, job)
        except BaseException as exc:
            if not isinstance(exc, GeneratorExit):
                stats.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            stats.seconds = time.perf_counter() - started
            self.generations.append(stats)
            log.debug(
                "llama.generated", model=self.name, instance=stats.instance, **stats.log_fields()
            )

    def _reply(self, inst: Instance, job: Job) -> Generator[Ask, int, None]:
        if job.cancelled.is_set():  # cancelled while queued behind another generation
            job.stats.cancelled = True
            return
        request, stats = job.request, job.stats
        llm = inst.ensure_loaded()
        tools = request.tools or None
        stats.prompt = prompt = self.render_prompt(request.messages, tools)
        tokens = self._tokenize_prompt(llm, prompt)
        stats.prompt_tokens = len(tokens)
        n_ctx = self.entry.n_ctx
        room = n_ctx - len(tokens)
        if room <= 0:
            raise ValueError(
                f"model '{self.name}': the prompt is {len(tokens)} tokens, which does not fit "
                f"its context of {n_ctx} tokens"
            )
        sampling = self._effective_sampling(request.sampling)
        budget = min(sampling.max_tokens, room)

        mode = ToolGrammar(self.tool_grammar) if tools else ToolGrammar.OFF
        stats.grammar = mode.value
        spec: ToolCallGrammar | None = None
        if tools and mode is not ToolGrammar.OFF:
            spec = self._grammar_for(inst, tools, budget)
        # Tool-call replies are parsed whole, so they are not streamed piece by piece.
        emit = None if tools else job.emit
        trigger: str | bool | None = False
        if spec is not None and mode is ToolGrammar.LAZY:
            trigger = spec.trigger
        reply = Reply(self.entry.stop, emit, trigger)

        if spec is not None and mode is ToolGrammar.REQUIRED:
            head = (spec.trigger or "") + spec.forced
            reply.text = head
            tokens = tokens + llm.tokenize(head.encode("utf-8"), add_bos=False, special=True)
            stats.prompt_tokens = len(tokens)
            # The call always gets what its grammar may need to close, even past max_tokens.
            budget = min(max(budget, spec.max_tokens), n_ctx - len(tokens))
            chain = sampler_chain(llm, sampling, spec.gbnf)
            yield from sample_reply(inst, job, tokens, chain, budget, reply, first=True)
        else:
            chain = sampler_chain(llm, sampling, None)
            sampled = yield from sample_reply(inst, job, tokens, chain, budget, reply, first=True)
            if reply.cut is not None and tools and not stats.cancelled:
                # The model opened a call: keep what it wrote up to the opener, force the
                # call's fixed head, and constrain only the rest.
                stats.grammar = "lazy-triggered"
                budget -= sampled
                # Built for what is left of the budget, so the call can still close in it.
                spec = self._grammar_for(inst, tools, budget)
                reply.text = reply.text[: reply.cut] + spec.forced
                reply.trigger = False
                tokens = tokens + llm.tokenize(
                    reply.text.encode("utf-8"), add_bos=False, special=True
                )
                budget = min(max(budget, spec.max_tokens), n_ctx - len(tokens))
                chain = sampler_chain(llm, sampling, spec.gbnf)
                yield from sample_reply(inst, job, tokens, chain, budget, reply, first=False)
        stats.text = reply.finish()
        if tools and job.emit is not None and stats.text:
            job.emit(stats.text)
