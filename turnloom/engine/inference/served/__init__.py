"""The `served` backend: inference on a serving engine over the OpenAI-compatible HTTP API.

One module per job: `kinds` (the engines and the request body each takes), `transport` (the
pooled HTTP client, bounded retries, the SSE completion stream and its errors) and `model`
(`ServedModel`, which renders prompts with the llama backend's templates and grammars and
streams replies into the same `Reply`). Needs the `served` extra (httpx, httpx-sse)
and, for chat templates and grammars, llama-cpp-python's Python side (`inference.llama`).
`counting` is the history budget's part; `scoring` the `score` decision's (whether the server
can, and `score_choices`), over `choices` (the choices' token trie) and `logprobs` (how each
kind of server is asked).
"""

from .errors import ServedModelError
from .kinds import Completion, ServerKind, completion_body
from .model import ServedModel

__all__ = ["Completion", "ServedModel", "ServedModelError", "ServerKind", "completion_body"]
