"""Large frame bodies decoded a slice at a time.

Decoding a 1 MiB body of a million tiny containers takes msgpack 100-400 ms in one call, and
freeing the result 20-30 ms more: time during which one session would hold every other. The
decode here is a sans-IO step of bounded work the caller runs once per loop iteration; the
freeing is `engine.teardown`'s.
"""

from __future__ import annotations

import gc
from typing import Any

import msgpack

from .frames import FrameError, checked_frame, not_msgpack

#: Bytes of body fed to the unpacker per step. Measured on a 2-core VM, the costliest content
#: (msgpack ext values, empty arrays) takes 2-4 ms per 8 KiB: half that a step.
DECODE_SLICE_BYTES = 4 * 1024


class BodyDecode:
    """One frame body decoded over several `step`s, ending in exactly the frame or the
    `FrameError` that `frames.decode_body` gives for it."""

    __slots__ = ("_body", "_made", "_pos", "_unpacker", "value")

    def __init__(self, body: bytes) -> None:
        self._body = memoryview(body)
        self._pos = 0
        # Every container, as msgpack completes it. A body found bad (or cut off) after a
        # million of them leaves them in a half-built value that msgpack frees in one call
        # (20-40 ms); held here too, they are only let go of there, and freed in steps after.
        made: list[Any] = []
        keep = made.append

        def kept(value: Any) -> Any:
            keep(value)
            return value

        self._made = made
        # max_buffer_size = the body's length gives the unpacker the very limits unpackb
        # derives from it (max_str_len, max_array_len, ...), so the errors read the same.
        self._unpacker: msgpack.Unpacker | None = msgpack.Unpacker(
            raw=False,
            strict_map_key=True,
            max_buffer_size=max(len(body), 1),
            list_hook=kept,
            object_hook=kept,
        )
        #: The decoded value once done (a non-map too), for `Teardown` after its answer.
        self.value: Any = None

    def take_remains(self) -> list[Any]:
        """What the decode still holds (its value, a half-built one inside the unpacker, the
        containers it made): to be freed by a `Teardown` rather than at once."""
        # Popped last first: the unpacker lets go of a half-built value while every container
        # in it is still held by `made`.
        remains = [self._made, self.value, self._unpacker]
        self.value = self._unpacker = None
        self._made = []
        return remains

    def step(self) -> dict[str, Any] | FrameError | None:
        """Decode the next slice: the frame (or its `FrameError`) once the body is read,
        None while there is more to read."""
        unpacker = self._unpacker
        assert unpacker is not None, "step() after the end"
        end = min(self._pos + DECODE_SLICE_BYTES, len(self._body))
        # As in decode_body: the collector would otherwise run over and over on the young
        # containers of each slice.
        collecting = gc.isenabled()
        gc.disable()
        try:
            unpacker.feed(self._body[self._pos : end])
            self._pos = end
            try:
                value = unpacker.unpack()
            except msgpack.OutOfData:
                if end < len(self._body):
                    return None
                # What unpackb says of a body that ends inside its value.
                return not_msgpack(ValueError("Unpack failed: incomplete input"))
            self.value = value
            if unpacker.tell() < len(self._body):
                return not_msgpack(msgpack.ExtraData(value, b""))
        except Exception as exc:  # msgpack raises several unrelated types for bad input
            return not_msgpack(exc)
        finally:
            if collecting:
                gc.enable()
        try:
            return checked_frame(value)
        except FrameError as error:
            # Its traceback would keep `value` alive past its Teardown, freed at once after.
            return error.with_traceback(None)
