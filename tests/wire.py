"""A raw, blocking socket client for protocol tests: frames by hand, no turnloom client."""

from __future__ import annotations

import socket
import struct
from typing import Any

import msgpack

import turnloom as tl

REQUEST_TIMEOUT = 5.0


def frame(message: Any) -> bytes:
    """A length-prefixed msgpack frame of any value (not only valid messages)."""
    body = msgpack.packb(message, use_bin_type=True)
    return struct.pack("<I", len(body)) + body


def raw_frame(body: bytes) -> bytes:
    """A frame around an arbitrary body."""
    return struct.pack("<I", len(body)) + body


def pause_graph_wire(timeout_ms: int = 0) -> dict[str, Any]:
    """gate (Pause) → say (CannedResponse 'ok'), as wire data."""
    return {
        "nodes": [
            {
                "name": "gate",
                "type": "Pause",
                "params": {"default_exit": "say", "pause_timeout_ms": timeout_ms},
            },
            {"name": "say", "type": "CannedResponse", "params": {"lines": ["ok"]}},
        ],
        "start_node": "gate",
        "default_model_name": "mock",
    }


class RawSession:
    """One connection to a server, driven frame by frame."""

    def __init__(self, address: tuple[str, int], *, rcvbuf: int | None = None) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf is not None:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.settimeout(REQUEST_TIMEOUT)
        self.sock.connect(address)
        self.buffer = bytearray()
        self.next_id = 1
        self.ready = self.recv()

    def close(self) -> None:
        """Hang up."""
        self.sock.close()

    def send_bytes(self, data: bytes) -> None:
        """Write raw bytes."""
        self.sock.sendall(data)

    def send(self, message: dict[str, Any]) -> int:
        """Send a request with a fresh request_id; return the id."""
        request_id = self.next_id
        self.next_id += 1
        self.send_bytes(frame({**message, "request_id": request_id}))
        return request_id

    def recv(self, timeout: float = REQUEST_TIMEOUT) -> dict[str, Any]:
        """The next frame (socket.timeout when none comes; ConnectionError at EOF)."""
        self.sock.settimeout(timeout)
        while True:
            if len(self.buffer) >= 4:
                (length,) = struct.unpack_from("<I", self.buffer)
                if len(self.buffer) >= 4 + length:
                    message: dict[str, Any] = msgpack.unpackb(self.buffer[4 : 4 + length])
                    del self.buffer[: 4 + length]
                    return message
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buffer += chunk

    def recv_all(self, timeout: float = REQUEST_TIMEOUT) -> list[dict[str, Any]]:
        """Every frame until the server closes the connection."""
        frames = []
        try:
            while True:
                frames.append(self.recv(timeout))
        except ConnectionError:
            return frames

    def reply(self, request_id: int, events: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The reply to `request_id`; frames before it go to `events` (if given)."""
        while True:
            message = self.recv()
            if message.get("request_id") == request_id and message["type"] != "NodeEvent":
                return message
            if events is not None:
                events.append(message)

    def request(self, message: dict[str, Any], events: list[dict[str, Any]] | None = None) -> Any:
        """Send and return the reply."""
        return self.reply(self.send(message), events)

    def configure(self) -> dict[str, Any]:
        """ConfigureSession with this library's version (must be acknowledged)."""
        ack = self.request({"type": "ConfigureSession", "protocol_version": 1})
        assert ack["type"] == "Ack", ack
        return ack

    def until(self, predicate: Any, timeout: float = REQUEST_TIMEOUT) -> list[dict[str, Any]]:
        """Frames up to and including the first one `predicate` accepts."""
        seen = []
        while True:
            message = self.recv(timeout)
            seen.append(message)
            if predicate(message):
                return seen


def code_of(reply: dict[str, Any]) -> tl.ErrorCode | None:
    """The error code of a reply, None for a success."""
    return tl.ErrorCode(reply["code"]) if reply["type"] == "ErrorResponse" else None
