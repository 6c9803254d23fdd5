"""Framing: length prefix, one msgpack map, 1 MiB limit, and the decoder's errors
(docs/protocol.md#1-transport-and-framing)."""

from __future__ import annotations

import struct

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import turnloom as tl
from turnloom.protocol.frames import (
    MAX_FRAME_BYTES,
    FrameDecoder,
    FrameError,
    encode_frame,
    pack_in_pieces,
)
from turnloom.protocol.messages import REQUESTS, parse_request

Code = tl.ErrorCode

messages = st.fixed_dictionaries(
    {"type": st.sampled_from(sorted(REQUESTS))},
    optional={
        "request_id": st.integers(0, 2**63 - 1),
        "text": st.text(max_size=50),
        "agent_id": st.integers(0, 2**32),
    },
)


plain = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text()
    | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=20)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5), inner, max_size=20)
    ),
    max_leaves=200,
)


@settings(deadline=None)
@given(plain)
def test_packing_in_pieces_gives_the_very_bytes_of_one_packb(value: object) -> None:
    assert pack_in_pieces(value) == msgpack.packb(value, use_bin_type=True)


def test_a_frame_packed_in_pieces_is_the_same_frame() -> None:
    tools = [
        {"name": f"t{i}", "parameters": [{"name": f"p{k}"} for k in range(64)]} for i in range(9)
    ]
    message = {"type": "AgentParamResponse", "request_id": 3, "params": {"tools": tools}}
    assert encode_frame(message, in_pieces=True) == encode_frame(message)
    with pytest.raises(FrameError) as refused:
        encode_frame(message, max_bytes=100, in_pieces=True)
    assert refused.value.code == Code.FrameTooLarge and refused.value.request_id == 3


def test_a_frame_is_a_little_endian_length_then_one_msgpack_map() -> None:
    data = encode_frame({"type": "Ack", "request_id": 7})
    (length,) = struct.unpack_from("<I", data)
    assert length == len(data) - 4
    assert msgpack.unpackb(data[4:]) == {"type": "Ack", "request_id": 7}


@settings(deadline=None)  # a loaded machine is no failure of framing
@given(st.lists(messages, max_size=5), st.data())
def test_frames_survive_any_chunking(batch: list[dict[str, object]], data: st.DataObject) -> None:
    stream = b"".join(encode_frame(m) for m in batch)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    decoder = FrameDecoder()
    out: list[object] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        out += decoder.feed(stream[start:end])
    assert out == batch and decoder.buffered == 0


@settings(deadline=None)
@given(st.lists(messages, max_size=5), st.data())
def test_pulled_one_at_a_time_frames_come_out_the_same(
    batch: list[dict[str, object]], data: st.DataObject
) -> None:
    # What a server does under its answer budget: push a read, pull some frames, stop, push
    # the next read later; the frames not pulled yet stay undecoded in between.
    stream = b"".join(encode_frame(m) for m in batch)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    decoder = FrameDecoder()
    out: list[object] = []
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        decoder.push(stream[start:end])
        for _ in range(data.draw(st.integers(0, 2))):
            item = decoder.pull(MAX_FRAME_BYTES)
            if item is not None:
                out.append(item)
    while (item := decoder.pull(MAX_FRAME_BYTES)) is not None:
        out.append(item)
    assert out == batch and decoder.buffered == 0


def test_pull_decodes_one_frame_and_leaves_the_rest_as_bytes() -> None:
    decoder = FrameDecoder()
    first, second = encode_frame({"type": "A"}), encode_frame({"type": "B"})
    decoder.push(first + second + second[:3])
    assert decoder.pull(MAX_FRAME_BYTES) == {"type": "A"}
    assert decoder.buffered == len(second) + 3
    assert decoder.pull(MAX_FRAME_BYTES) == {"type": "B"}
    assert decoder.pull(MAX_FRAME_BYTES) is None and decoder.buffered == 3
    decoder.push(second[3:])
    assert decoder.pull(MAX_FRAME_BYTES) == {"type": "B"} and decoder.buffered == 0


def test_oversize_frame_is_5003_skipped_without_buffering_and_the_stream_goes_on() -> None:
    decoder = FrameDecoder(max_bytes=100)
    header = struct.pack("<I", 1000)
    out = decoder.feed(header + b"x" * 10)
    assert [e.code for e in out if isinstance(e, FrameError)] == [Code.FrameTooLarge]
    assert decoder.buffered == 0
    assert decoder.feed(b"x" * 500) == [] and decoder.buffered == 0
    after = encode_frame({"type": "Cancel", "agent_id": 1})
    assert decoder.feed(b"x" * 490 + after) == [{"type": "Cancel", "agent_id": 1}]


@pytest.mark.parametrize(
    "body, words",
    [
        (b"\xc1", "not one msgpack value"),  # 0xc1 is never used in msgpack
        (msgpack.packb([1, 2]), "must be a map"),
        (msgpack.packb({"type": "Ack"}) + b"\x00", "not one msgpack value"),  # trailing bytes
        (msgpack.packb({"kind": "Ack"}), "no 'type'"),
        (msgpack.packb({"type": 5}), "no 'type'"),
        (msgpack.packb({1: "int keys"}), "not one msgpack value"),
        (msgpack.packb({"type": "Cancel", "request_id": -1}), "request_id"),
        (msgpack.packb({"type": "Cancel", "request_id": "abc"}), "request_id"),
        (b"\xdd\xff\xff\xff\xff", "not one msgpack value"),  # array of 4G items, no items
        (b"\x91" * 5000, "not one msgpack value"),  # nesting deeper than msgpack's stack
    ],
)
def test_undecodable_bodies_are_5001(body: bytes, words: str) -> None:
    (error,) = FrameDecoder().feed(struct.pack("<I", len(body)) + body)
    assert isinstance(error, FrameError)
    assert error.code == Code.MalformedMessage and words in error.message


def test_a_bad_frame_keeps_the_request_id_when_it_can() -> None:
    (error,) = FrameDecoder().feed(encode_frame({"type": 3, "request_id": 9}))
    assert isinstance(error, FrameError) and error.request_id == 9


def test_encoding_over_the_limit_is_5003() -> None:
    with pytest.raises(FrameError) as info:
        encode_frame({"type": "AnswerText", "text": "x" * MAX_FRAME_BYTES})
    assert info.value.code == Code.FrameTooLarge


def test_unknown_type_is_5002_and_bad_fields_are_5001() -> None:
    with pytest.raises(FrameError) as info:
        parse_request({"type": "LaunchMissiles", "request_id": 3})
    assert info.value.code == Code.UnknownMessageType and info.value.request_id == 3
    for frame, words in [
        ({"type": "Cancel"}, "'agent_id' is required"),
        ({"type": "Cancel", "agent_id": "1"}, "'agent_id' must be int"),
        ({"type": "Cancel", "agent_id": True}, "'agent_id' must be int"),
        ({"type": "CreateAgent", "graph": []}, "'graph' must be map"),
        ({"type": "ResumeAgent", "agent_id": 1, "tool_results": {}}, "'tool_results'"),
    ]:
        with pytest.raises(FrameError) as info:
            parse_request(frame)
        assert info.value.code == Code.MalformedMessage and words in info.value.message


def test_defaults_are_filled_in_and_unknown_fields_ignored() -> None:
    kind, fields = parse_request({"type": "ResumeAgent", "agent_id": 4, "future_field": 1})
    assert kind == "ResumeAgent"
    assert fields == {"agent_id": 4, "resume_node": "", "tool_results": ()}
