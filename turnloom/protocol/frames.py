"""Wire framing: a 4-byte little-endian length, then one msgpack map
(docs/protocol.md#1-transport-and-framing).

`FrameDecoder` is sans-IO, like h11: feed it bytes as they arrive and take out whole frames or
the framing errors they caused. It never raises for bad input, so one bad frame costs its
sender an `ErrorResponse` and nothing else.
"""

from __future__ import annotations

import gc
import struct
from collections.abc import Mapping
from typing import Any

import msgpack

from ..engine.support.guards import brief
from .errors import ErrorCode

#: Where `python -m turnloom serve` listens and `turnloom.connect` connects when given nothing.
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7411
#: The version this code speaks; a client announces its own in `ConfigureSession` (5004).
PROTOCOL_VERSION = 1
#: Largest msgpack body of one frame, in either direction (5003).
MAX_FRAME_BYTES = 1 << 20
#: Largest request id (ids are unsigned and fit an int64 in every client language).
MAX_REQUEST_ID = (1 << 63) - 1

_HEADER = struct.Struct("<I")
HEADER_BYTES = _HEADER.size


class FrameError(Exception):
    """A frame that cannot be used: `code` (5001, 5002, 5003) and words; its `request_id` if
    the frame got far enough to name one."""

    def __init__(self, code: ErrorCode, message: str, request_id: int | None = None) -> None:
        super().__init__(f"[{int(code)}] {message}")
        self.code = code
        self.message = message
        self.request_id = request_id


def encode_frame(
    message: Mapping[str, Any], max_bytes: int = MAX_FRAME_BYTES, in_pieces: bool = False
) -> bytes:
    """One frame for `message` (a map with a `type`); 5003 if the body is over `max_bytes`.

    `in_pieces`: packed by `pack_in_pieces`, for a worker thread packing a large reply.
    """
    body = pack_in_pieces(message) if in_pieces else msgpack.packb(message, use_bin_type=True)
    if len(body) > max_bytes:
        raise FrameError(
            ErrorCode.FrameTooLarge,
            f"{brief(message.get('type'))} frame is {len(body)} bytes, "
            f"over the {max_bytes}-byte limit",
            _request_id_or_none(message.get("request_id")),
        )
    return _HEADER.pack(len(body)) + body


_NESTING = (dict, list, tuple)


def pack_in_pieces(value: Any) -> bytes:
    """Exactly `msgpack.packb(value, use_bin_type=True)`, made of one `pack` per flat
    container (one whose items hold no dict, list or tuple) plus the headers above them.

    msgpack holds the GIL for a whole `packb`: 2-3 ms, one to five times longer on a busy
    machine, for the params of a ToolCall node of 128 tools of 64 parameters. A worker thread
    packing them in pieces gives the GIL back to the engine loop between pieces.
    """
    packer = msgpack.Packer(use_bin_type=True)
    pieces: list[bytes] = []
    _pack_into(value, packer, pieces)
    return b"".join(pieces)


def _pack_into(value: Any, packer: msgpack.Packer, pieces: list[bytes]) -> None:
    kind = type(value)
    if kind is dict and any(type(item) in _NESTING for item in value.values()):
        pieces.append(packer.pack_map_header(len(value)))
        for key, item in value.items():
            pieces.append(packer.pack(key))
            _pack_into(item, packer, pieces)
    elif (kind is list or kind is tuple) and any(type(item) in _NESTING for item in value):
        pieces.append(packer.pack_array_header(len(value)))
        for item in value:
            _pack_into(item, packer, pieces)
    else:
        pieces.append(packer.pack(value))


def _request_id_or_none(value: Any) -> int | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_REQUEST_ID
    return value if ok else None


def decode_body(body: bytes) -> dict[str, Any]:
    """The map of one frame body, with a string `type` and a valid `request_id` (or 5001)."""
    # The cyclic collector would run over and over while a frame of many small containers is
    # built (each allocation counts towards the next collection): a third of the time for the
    # worst frames, as msgpack's docs warn. The objects are acyclic; it runs again after.
    collecting = gc.isenabled()
    gc.disable()
    try:
        # unpackb, not a streaming Unpacker: the length prefix already delimits the body, and
        # unpackb refuses trailing bytes (ExtraData), which is what "one map per frame" means.
        message = msgpack.unpackb(body, raw=False, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated types for bad input
        raise not_msgpack(exc) from None
    finally:
        if collecting:
            gc.enable()
    return checked_frame(message)


def not_msgpack(exc: Exception) -> FrameError:
    """The 5001 of a body msgpack could not read as one value (`exc` is msgpack's error)."""
    return FrameError(
        ErrorCode.MalformedMessage, f"frame body is not one msgpack value ({brief(str(exc))})"
    )


def checked_frame(message: Any) -> dict[str, Any]:
    """`message`, a decoded body, if it is a map with a string `type` and a valid
    `request_id`; else its 5001."""
    if not isinstance(message, dict):
        raise FrameError(
            ErrorCode.MalformedMessage, f"frame body must be a map, got {type(message).__name__}"
        )
    raw_id = message.get("request_id")
    request_id = _request_id_or_none(raw_id)
    if raw_id is not None and request_id is None:
        raise FrameError(
            ErrorCode.MalformedMessage,
            f"request_id must be an integer in [0, 2^63), got {brief(raw_id)}",
        )
    kind = message.get("type")
    if not isinstance(kind, str) or not kind:
        raise FrameError(ErrorCode.MalformedMessage, "frame has no 'type' string field", request_id)
    return message


class LargeBody:
    """A frame body over the decoder's `defer_above`, handed out undecoded: decoding it at
    once could hold its caller for hundreds of ms (`protocol.slices.BodyDecode` takes it a
    slice at a time)."""

    __slots__ = ("body",)

    def __init__(self, body: bytes) -> None:
        #: The msgpack body, its length prefix taken off.
        self.body = body


class FrameDecoder:
    """Bytes in, frames (dicts) or `FrameError`s out, in order: all at once (`feed`), or one
    at a time (`push`, then `pull` until it gives None), so a reader can stop decoding where
    it stops answering and leave the rest undecoded for later."""

    __slots__ = ("_buffer", "_pos", "_skip", "max_bytes")

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        #: Where the next frame starts in the buffer (what comes before is consumed).
        self._pos = 0
        #: Largest body accepted; frames announcing more are 5003 and skipped.
        self.max_bytes = max_bytes
        #: Bytes of an oversize frame still to be thrown away as they arrive (never buffered).
        self._skip = 0

    @property
    def buffered(self) -> int:
        """Bytes held that no frame taken out so far has consumed."""
        return len(self._buffer) - self._pos

    def feed(self, data: bytes) -> list[dict[str, Any] | FrameError]:
        """Take `data` and return every frame it completed."""
        self.push(data)
        out: list[dict[str, Any] | FrameError] = []
        # Every body fits max_bytes, so none comes out undecoded.
        while (item := self.pull(self.max_bytes)) is not None:
            out.append(item)  # type: ignore[arg-type]
        return out

    def push(self, data: bytes) -> None:
        """Take `data`, decoding nothing yet."""
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        if self._pos:  # drop what was consumed, once per push rather than once per frame
            del self._buffer[: self._pos]
            self._pos = 0
        self._buffer += data

    def pull(self, above: int) -> dict[str, Any] | FrameError | LargeBody | None:
        """The next complete frame (a body longer than `above` bytes as a `LargeBody`), or
        None until more bytes come."""
        buffer, pos = self._buffer, self._pos
        if len(buffer) - pos < HEADER_BYTES:
            return None
        (length,) = _HEADER.unpack_from(buffer, pos)
        if length > self.max_bytes:
            # The stream stays in sync: the body is skipped, not parsed, and the session goes
            # on. The frame's request_id is unknowable without parsing it.
            pos += HEADER_BYTES
            dropped = min(length, len(buffer) - pos)
            self._pos = pos + dropped
            self._skip = length - dropped
            return FrameError(
                ErrorCode.FrameTooLarge,
                f"frame announces {length} bytes, over the {self.max_bytes}-byte limit; "
                "it was skipped",
            )
        end = pos + HEADER_BYTES + length
        if end > len(buffer):
            return None
        body = bytes(buffer[pos + HEADER_BYTES : end])
        self._pos = end
        if length > above:
            return LargeBody(body)
        try:
            return decode_body(body)
        except FrameError as error:
            return error
