"""Control tokens that are tool-call markup: detokenized as their text, not dropped.

llama.cpp renders a control token (one of a vocabulary's special tokens) as nothing unless asked
for specials, and many GGUFs make their call markers control tokens (`[TOOL_CALLS]` in Mistral's,
`<|python_tag|>` in Llama 3's, `<tool_call>` in some). Dropped, they would reach neither the lazy
grammar's trigger nor the parser. Rendering every special would put chat-structure tokens
(`<start_of_turn>`, headers) into replies, so, like llama.cpp's server keeps the "preserved
tokens" of a chat format as text, only the tokens whose text is some family's markup are kept;
end-of-generation tokens end the generation before they are ever rendered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...tools.families import FAMILIES

if TYPE_CHECKING:
    from llama_cpp import Llama


def marker_texts() -> frozenset[str]:
    """Every text a family's markup names (openers, closers, markers), from the family table."""
    texts: set[str] = set()
    for markup in FAMILIES.values():
        for field in dataclasses.fields(markup):
            value = getattr(markup, field.name)
            values = value if isinstance(value, tuple | list | frozenset) else (value,)
            texts.update(v for v in values if isinstance(v, str) and v.strip())
    return frozenset(texts)


def special_marker_tokens(
    llm: Llama, texts: Iterable[str], is_end: Callable[[int], bool] = lambda _: False
) -> frozenset[int]:
    """The tokens of `llm`'s vocabulary that are one of `texts` whole and that detokenizing
    without specials would drop (control tokens), end-of-generation tokens excepted."""
    found = set()
    for text in texts:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        if len(ids) != 1 or is_end(ids[0]):
            continue
        token = ids[0]
        if llm.detokenize([token], special=True) != llm.detokenize([token], special=False):
            found.add(token)
    return frozenset(found)


def detokenize(llm: Llama, token: int, keep: frozenset[int]) -> bytes:
    """The bytes of one sampled token: a kept special token as its text, others as llama.cpp
    renders them without specials."""
    return llm.detokenize([token], special=token in keep)
