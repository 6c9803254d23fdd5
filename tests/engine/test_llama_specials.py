"""Call markers that are control tokens are detokenized as their text, so the
parser and the lazy grammar's trigger see them.

No vocabulary with `[TOOL_CALLS]` or `<|python_tag|>` as control tokens is installed, so the
mechanism is checked on the default model's own control tokens (Gemma's `<start_of_turn>` /
`<end_of_turn>`), loaded vocab-only: a control token named as a marker is kept as text, an
end-of-generation one never is, and everything else renders as llama.cpp renders it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import turnloom as tl
from turnloom.engine.inference.llama.specials import (
    detokenize,
    marker_texts,
    special_marker_tokens,
)


@pytest.fixture(scope="module")
def vocab() -> Iterator[object]:
    """The default GGUF's vocabulary only (no weights)."""
    import llama_cpp

    path = tl.LlamaModel.from_catalog(tl.models.DEFAULT_MODEL).model_path()
    llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
    yield llm
    llm.close()


def test_marker_texts_come_from_the_family_table() -> None:
    texts = marker_texts()
    assert {"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>"} <= texts
    assert "" not in texts


def test_a_control_token_marker_is_kept_as_text(vocab: object) -> None:
    import llama_cpp

    llm = vocab
    assert isinstance(llm, llama_cpp.Llama)
    (start,) = llm.tokenize(b"<start_of_turn>", add_bos=False, special=True)
    (end,) = llm.tokenize(b"<end_of_turn>", add_bos=False, special=True)
    native_vocab = llama_cpp.llama_model_get_vocab(llm.model)
    assert not llama_cpp.llama_vocab_is_eog(native_vocab, start)
    assert llm.detokenize([start]) == b""  # a control token: dropped without specials

    def is_end(token: int) -> bool:
        return bool(llama_cpp.llama_vocab_is_eog(native_vocab, token))

    texts = ["<start_of_turn>", "<end_of_turn>", "<tool_call>", "door"]
    keep = special_marker_tokens(llm, texts, is_end)
    # <tool_call> is several ordinary tokens here and "door" one ordinary token: neither is a
    # special; <end_of_turn> ends a generation, so it is never rendered.
    assert keep == {start}
    assert (end in keep) is False
    assert detokenize(llm, start, keep) == b"<start_of_turn>"
    assert detokenize(llm, start, frozenset()) == b""
    (door,) = llm.tokenize(b"door", add_bos=False, special=True)
    assert detokenize(llm, door, keep) == b"door"


def test_the_default_model_keeps_no_specials_it_does_not_use_as_markers(vocab: object) -> None:
    import llama_cpp

    llm = vocab
    assert isinstance(llm, llama_cpp.Llama)
    # Gemma 3 writes Hermes-style calls as plain text: no family marker is one of its specials.
    assert special_marker_tokens(llm, marker_texts()) == frozenset()
