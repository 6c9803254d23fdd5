"""Decoding a frame never raises, whatever its body holds; refusals quote briefly."""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

import turnloom as tl
from tests.helpers import nested
from tests.wire import frame
from turnloom.protocol.frames import FrameDecoder, FrameError
from turnloom.protocol.messages import parse_request


@pytest.mark.parametrize(
    "request_id",
    [nested(1000), "x" * 100_000, {"k": nested(900)}, -(2**63)],
    ids=["deep", "long", "map", "negative"],
)
def test_a_hostile_request_id_is_5001_without_an_id(request_id: Any) -> None:
    (item,) = FrameDecoder().feed(frame({"type": "Cancel", "request_id": request_id}))
    assert isinstance(item, FrameError)
    assert item.code == tl.ErrorCode.MalformedMessage and item.request_id is None
    assert "request_id" in item.message and len(item.message) < 300


def test_an_unknown_type_is_quoted_briefly() -> None:
    kind = "T" * 500_000
    body = msgpack.packb({"type": kind, "request_id": 3})
    (message,) = FrameDecoder().feed(len(body).to_bytes(4, "little") + body)
    assert isinstance(message, dict)
    with pytest.raises(FrameError) as caught:
        parse_request(message)
    assert caught.value.code == tl.ErrorCode.UnknownMessageType
    assert caught.value.request_id == 3 and len(caught.value.message) < 1000
