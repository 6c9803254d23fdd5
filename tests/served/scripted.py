"""A small HTTP server on loopback that answers as a given serving engine would at a given
moment: a broken one, or one whose stream must contain something a real small model will not
write on cue. Real sockets and real HTTP; nothing in turnloom is replaced.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def sse(*texts: str, finish: str = "stop") -> bytes:
    """A completion stream of `texts`, its finish reason, and `[DONE]`."""
    events = [{"choices": [{"text": text, "finish_reason": None}]} for text in texts]
    events.append({"choices": [{"text": "", "finish_reason": finish}]})
    lines = [f"data: {json.dumps(event)}\n\n" for event in events] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


#: The routes answered from `ScriptedServer.replies`: OpenAI's completions and llama.cpp's own.
_COMPLETION_PATHS = ("/v1/completions", "/completion")


class ScriptedServer(ThreadingHTTPServer):
    """Answers `/v1/completions` POSTs from `replies` in order (the last one again once they run
    out), token counts from a rough count; keeps every request's path and JSON body."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        #: (status, content type, body) per completion request.
        self.replies: list[tuple[int, str, bytes]] = [(200, "text/event-stream", sse("ok"))]
        self.requests: list[tuple[str, Any]] = []
        self._served = 0

    @property
    def url(self) -> str:
        """Its base URL."""
        return f"http://127.0.0.1:{self.server_address[1]}"

    @property
    def completions(self) -> list[Any]:
        """The bodies of the completion requests it got (OpenAI's and llama.cpp's own)."""
        return [body for path, body in self.requests if path in _COMPLETION_PATHS]

    def next_reply(self) -> tuple[int, str, bytes]:
        """The reply to the next completion request."""
        reply = self.replies[min(self._served, len(self.replies) - 1)]
        self._served += 1
        return reply


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.loads(raw) if raw else None
        self.server.requests.append((self.path, body))
        if self.path in _COMPLETION_PATHS:
            status, content_type, payload = self.server.next_reply()
        else:
            status, content_type = 200, "application/json"
            payload = json.dumps(_tokenizer_reply(self.path, body or {})).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


def _tokenizer_reply(path: str, body: dict[str, Any]) -> dict[str, Any]:
    """llama-cpp-python's, llama.cpp's and vLLM's tokenizer routes, for a tokenizer of one token per
    character (its code point) after a BOS (0); the count route says about one token per 3
    characters."""
    if path == "/tokenize" and "content" in body:  # llama.cpp's
        bos = [0] if body.get("add_special") else []
        return {"tokens": [*bos, *(ord(c) for c in str(body["content"]))]}
    if path == "/tokenize" and "prompt" in body:  # vLLM's
        bos = [0] if body.get("add_special_tokens") else []
        return {"tokens": [*bos, *(ord(c) for c in str(body["prompt"]))]}
    if path == "/extras/tokenize":
        return {"tokens": [0, *(ord(c) for c in str(body.get("input", "")))]}
    if path == "/extras/detokenize":
        return {"text": "".join(chr(t) for t in body.get("tokens", []) if t)}
    return {"count": 1 + len(str(body.get("input", ""))) // 3}


@contextmanager
def scripted_server() -> Iterator[ScriptedServer]:
    """A `ScriptedServer` running on a thread for the block."""
    server = ScriptedServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
