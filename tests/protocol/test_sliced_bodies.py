"""Large frame bodies are decoded and freed a slice at a time (`protocol.slices`), with
exactly the frames and the 5001 messages `decode_body` gives in one call."""

from __future__ import annotations

import random
import struct
from typing import Any

import msgpack
import pytest

from turnloom.engine.support.teardown import Teardown
from turnloom.protocol.frames import FrameDecoder, FrameError, LargeBody, decode_body
from turnloom.protocol.slices import DECODE_SLICE_BYTES, BodyDecode


def whole(body: bytes) -> dict[str, Any] | str:
    """What decode_body makes of `body`: the frame, or its error's text."""
    try:
        return decode_body(body)
    except FrameError as error:
        return f"{int(error.code)} {error.message} {error.request_id}"


def sliced(body: bytes) -> tuple[dict[str, Any] | str, int]:
    """What BodyDecode makes of `body`, and in how many steps."""
    decode = BodyDecode(body)
    steps = 0
    while True:
        steps += 1
        result = decode.step()
        if result is not None:
            break
    if isinstance(result, FrameError):
        return f"{int(result.code)} {result.message} {result.request_id}", steps
    return result, steps


def big_frame() -> bytes:
    """A valid ~100 KB CreateAgent body of many small containers."""
    nodes = [
        {
            "name": f"n{i}",
            "type": "CannedResponse",
            "params": {"lines": [f"line {j}" for j in range(60)]},
        }
        for i in range(200)
    ]
    graph = {"nodes": nodes, "start_node": "n0", "default_model_name": "mock"}
    return msgpack.packb({"type": "CreateAgent", "request_id": 7, "graph": graph})


def array32(count: int, item: bytes) -> bytes:
    return b"\xdd" + count.to_bytes(4, "big") + item * count


MALFORMED = {
    "cut short": big_frame()[:-3],
    "trailing bytes": big_frame() + b"\xc0",
    "a reserved byte at the end": big_frame()[:-1] + b"\xc1",
    "not a map": array32(50_000, b"\x90"),
    "nested past msgpack's limit": b"\x91" * 20_000 + b"\xc0",
    "an int map key": msgpack.packb({"type": "X", "pad": "y" * 9000})[:-1] + b"\x81\x01\x02",
    "bad utf-8 at the end": b"\x82\xa4type\xa1X\xa3pad" + b"\xda\x27\x10" + b"\xff" * 10_000,
    "an array header past the body": b"\x82\xa4type\xa1X\xa3pad"
    + b"\xdd\x7f\xff\xff\xff"
    + b"\xc0" * 9000,
    "a bad request_id": msgpack.packb({"type": "X", "request_id": -1, "pad": [[]] * 9000}),
    "no type": msgpack.packb({"request_id": 3, "pad": [{}] * 9000}),
}


def test_a_large_valid_body_is_the_same_frame_decoded_over_several_steps() -> None:
    body = big_frame()
    frame, steps = sliced(body)
    assert frame == whole(body)
    assert steps >= len(body) // DECODE_SLICE_BYTES > 10


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_large_body_gets_the_5001_decode_body_gives(case: str) -> None:
    body = MALFORMED[case]
    expected = whole(body)
    assert isinstance(expected, str) and expected.startswith("5001 ")
    assert sliced(body)[0] == expected


def test_mutated_bodies_get_what_decode_body_gives() -> None:
    rng = random.Random(9)
    base = big_frame()
    for _ in range(300):
        body = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            position = rng.randrange(len(body))
            match rng.randrange(3):
                case 0:
                    body[position] = rng.randrange(256)
                case 1:
                    del body[position:]
                case _:
                    body[position:position] = bytes([rng.randrange(256)])
        if body:
            assert sliced(bytes(body))[0] == whole(bytes(body))


def test_the_decoder_hands_out_bodies_over_the_threshold_undecoded_in_order() -> None:
    small = msgpack.packb({"type": "Cancel", "request_id": 1, "agent_id": 1})
    large = big_frame()
    data = b"".join(struct.pack("<I", len(b)) + b for b in (small, large, small))
    decoder = FrameDecoder()
    decoder.push(data)
    items = [decoder.pull(4096) for _ in range(3)]
    assert decoder.pull(4096) is None
    assert [type(i).__name__ for i in items] == ["dict", "LargeBody", "dict"]
    assert isinstance(items[1], LargeBody) and items[1].body == large
    # `feed` decodes everything, as it always did.
    assert [type(i).__name__ for i in FrameDecoder().feed(data)] == ["dict"] * 3


def test_a_teardown_takes_a_big_value_apart_over_several_steps() -> None:
    value = [[[] for _ in range(100)] for _ in range(1000)] + [{f"k{i}": [i] for i in range(5000)}]
    teardown = Teardown([value])
    del value
    steps = 1
    while not teardown.step(budget=500):
        steps += 1
    assert steps > 100


def test_a_body_found_bad_at_its_end_leaves_its_containers_to_the_teardown() -> None:
    # Empty arrays, then a byte msgpack refuses: msgpack frees what it built at once.
    body = b"\x92" + b"\xdd" + (200_000).to_bytes(4, "big") + b"\x90" * 200_000 + b"\xc1"
    decode = BodyDecode(body)
    while (result := decode.step()) is None:
        pass
    assert isinstance(result, FrameError)
    made, value, _ = decode.take_remains()
    assert value is None and len(made) == 200_001  # the arrays, and the one holding them


def test_a_teardown_leaves_what_something_else_still_holds_intact() -> None:
    kept = ["a", ["b"], {"c": 1}]
    teardown = Teardown([{"lines": kept, "more": [kept]}])
    while not teardown.step(budget=1):
        pass
    assert kept == ["a", ["b"], {"c": 1}]


def test_what_a_decode_leaves_is_handed_over_whole() -> None:
    decode = BodyDecode(big_frame())
    while decode.step() is None:
        pass
    made, value, unpacker = decode.take_remains()
    assert isinstance(value, dict) and value["type"] == "CreateAgent"
    assert unpacker is not None and decode.value is None
    # Every container it made, the frame last: a half-built value is only let go of.
    assert made[-1] is value and len(made) == 3 + 200 * 3  # frame, graph, nodes; 3 a node
