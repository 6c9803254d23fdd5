"""The `llama` backend: real inference on a GGUF model with llama-cpp-python.

One module per job: `chat_template` (rendering and the tool-support probe), `grammar`
(constrained tool calls), `native` (llama.cpp's log, vocabulary and instances), `streaming` (the
token loop and its text on the way to the engine loop) and `model` (`LlamaModel`, which ties
them together), with `scoring` and `counting` as its mixins. This package offers the names
the rest of turnloom and its tests use. Like all of `inference`, it may import `tools`, `graph`
and `support`.
"""

from .chat_template import ChatTemplate, probe_chat_template
from .grammar import ToolCallGrammar, string_caps, tool_call_grammar
from .model import LlamaModel
from .streaming import GenerationStats

__all__ = [
    "ChatTemplate",
    "GenerationStats",
    "LlamaModel",
    "ToolCallGrammar",
    "probe_chat_template",
    "string_caps",
    "tool_call_grammar",
]
