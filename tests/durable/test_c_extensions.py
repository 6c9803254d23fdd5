"""The package's C extensions make the bytes the Python code makes, and are built and used here.

A durable agent's snapshot head is joined from packed pieces in one C call
(`engine/durable/pieces.py`): byte for byte, and error for error, what the same pieces packed by
msgpack in Python give; a stored agent's writes are the same bytes either way. A Redis store's
write group is packed as one SAVE_MANY call in C (`store/redis_writes.py`): byte for byte the
call made of `save_arguments` and packed by hiredis, and a real Redis takes either."""

from __future__ import annotations

import enum
import os
import sysconfig
from pathlib import Path
from typing import Any

import msgpack
import pytest
from hiredis import pack_command
from hypothesis import given, settings
from hypothesis import strategies as st

import turnloom as tl
from tests.durable import scenario
from turnloom.engine.durable import dialog_parts, head, pieces
from turnloom.engine.durable.pieces import _joined_in_python
from turnloom.engine.durable.store import open_store
from turnloom.engine.durable.store.parts import SplitWrite
from turnloom.engine.durable.store.redis import RedisStore
from turnloom.engine.durable.store.redis_writes import _packed_call, save_arguments


class Mood(enum.StrEnum):
    """A str subclass: packed as its text by msgpack, handed back to it by the C code."""

    GLAD = "glad"


def _outcome(join: Any, items: tuple[Any, ...]) -> tuple[Any, ...]:
    try:
        return ("bytes", join(items))
    except Exception as exc:  # the error itself is compared
        return ("error", type(exc), str(exc))


def _same(items: tuple[Any, ...]) -> None:
    assert _outcome(pieces.join_packed, items) == _outcome(_joined_in_python, items)


def test_the_c_extensions_are_built_and_used() -> None:
    # The rest of the suite then runs the C code at every durable agent's rest and every Redis
    # write group. Without a C compiler the package falls back to Python, which this suite
    # must not do unnoticed.
    built = {"_packed_pieces": pieces.accelerated, "_save_call": _packed_call is not None}
    missing = [name for name, ok in built.items() if not ok]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    if missing and not headers.exists() and not os.environ.get("CI"):
        pytest.skip(
            f"SKIPPED LOUDLY, the C extensions {missing} are not built: Python's headers are "
            f"missing ({headers}): sudo apt-get install python3-dev, then make test"
        )
    assert not missing, (
        f"C extensions not built: {missing}; run the editable install again (make test does) "
        "with a C compiler and Python's headers"
    )


_BOUNDS = [0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1]
_INTS = sorted({sign * n + d for n in _BOUNDS for sign in (1, -1) for d in (-1, 0, 1)})


@pytest.mark.parametrize(
    "value",
    [
        *_INTS,
        2**63,  # an unsigned 64-bit int: msgpack's own
        2**64 - 1,
        2**64,  # too large for msgpack: its error
        -(2**63) - 1,
        None,
        True,
        False,
        0.0,
        -0.0,
        1.5,
        float("inf"),
        float("nan"),
        *("x" * n for n in (0, 31, 32, 255, 256, 65535, 65536)),
        "é" * 100,
        "\ud800",  # a lone surrogate: msgpack's error
        *(b"y" * n for n in (0, 255, 256, 65536)),
        *([1] * n for n in (0, 15, 16, 65536)),
        *({str(k): k for k in range(n)} for n in (0, 15, 16, 65536)),
        (1, "two", [3.0]),
        Mood.GLAD,
        {"mood": Mood.GLAD},
        bytearray(b"ab"),
        {1.5: None, None: [b"bin"]},
    ],
    ids=repr,
)
def test_every_kind_of_value_is_packed_as_msgpack_packs_it(value: Any) -> None:
    _same((value,))
    _same((b"\x81\xa1a", value, b"raw"))  # among pieces packed before, copied as they are
    _same(([value],))  # and nested


@pytest.mark.parametrize("depth", [510, 511, 512])
def test_nesting_stops_where_msgpack_stops_it(depth: int) -> None:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    _same((value,))


def test_anything_but_a_tuple_is_refused() -> None:
    with pytest.raises(TypeError, match="tuple"):
        pieces.join_packed([b"x"])  # type: ignore[arg-type]


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**65), max_value=2**65)
    | st.floats(allow_nan=True)
    | st.text()
    | st.binary(max_size=300)
    | st.sampled_from([Mood.GLAD])
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=20)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=8) | st.integers(), inner, max_size=18)
    ),
    max_leaves=60,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_VALUES | st.binary(max_size=40), max_size=8).map(tuple))
def test_pieces_are_joined_as_msgpack_and_python_join_them(items: tuple[Any, ...]) -> None:
    _same(items)


def _stored_bytes(monkeypatch: pytest.MonkeyPatch, join: Any) -> list[Any]:
    """The heads, parts and constant entries a stored agent writes over a few turns with
    pauses, a tool call and a long dialog, its pieces joined by `join`."""
    monkeypatch.setattr(head, "join_packed", join)
    monkeypatch.setattr(dialog_parts, "join_packed", join)
    written: list[Any] = []
    store = open_store(":memory:")
    save_many = store.save_many

    def recorded(writes: Any) -> list[int]:
        for _, document, deadline in writes:
            written.append((document.head, document.parts, document.constant, deadline))
        return save_many(writes)

    store.save_many = recorded  # type: ignore[method-assign]
    with tl.Engine(scenario.model(), clock=tl.VirtualClock(), store=store) as engine:
        agent = engine.create_agent(scenario.graph("pause"), tags={"npc": "mira"})
        for turn in range(2 * dialog_parts.TAIL_TURNS + 3):
            scenario.finish(agent, agent.send_message(f"turn {turn} é"), "pause")
        looking = engine.create_agent(scenario.graph("await"))
        step = looking.send_message("look")
        assert step.pause is not None
        calls = step.pause.pending_calls
        looking.resume(tool_results=[tl.ToolResult(c.call_id, "a lamp") for c in calls])
    return written


def test_a_stored_agent_writes_the_same_bytes_with_the_c_code_or_without(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with_c = _stored_bytes(monkeypatch, pieces.join_packed)
    in_python = _stored_bytes(monkeypatch, _joined_in_python)
    assert len(with_c) > 2 * dialog_parts.TAIL_TURNS
    assert with_c == in_python


# --- the Redis store's write call ---------------------------------------------------------------

_FIRST = (b"EVALSHA", b"f" * 40, b"5", b"turnloom:agents", b"w1", b"turnloom:dialog:")
_BLOBS = st.binary(max_size=300)
_SPLITS = st.builds(
    SplitWrite,
    _BLOBS,
    st.none() | st.integers(min_value=0, max_value=2**40),
    st.lists(_BLOBS, max_size=4).map(tuple),
    st.booleans(),
    st.none() | _BLOBS,
)
_WRITES = st.tuples(
    st.integers(min_value=1, max_value=2**62),
    _SPLITS | _BLOBS,
    st.none() | st.floats(allow_nan=False),
)


def _python_call(writes: list[Any]) -> bytes:
    table, blobs = save_arguments(writes)
    packed_table = msgpack.packb(table, use_bin_type=False)
    return bytes(pack_command((*_FIRST, packed_table, *blobs)))


@settings(max_examples=300, deadline=None)
@given(st.lists(_WRITES, max_size=40))
def test_a_write_group_is_packed_as_python_and_hiredis_pack_it(writes: list[Any]) -> None:
    assert _packed_call(_FIRST, writes, SplitWrite) == _python_call(writes)


class _OwnSplit(SplitWrite):
    """A subclass: left to the Python code, as anything unusual."""


@pytest.mark.parametrize(
    "write",
    [
        (7, bytearray(b"head"), None),  # a snapshot that is not bytes
        (7, SplitWrite(b"head", 0, (bytearray(b"part"),), True), None),  # nor a part
        (7, _OwnSplit(b"head"), None),
        (7, b"head", 12),  # a deadline that is not a float
        (True, b"head", None),  # an id that is not an int
    ],
    ids=["bytearray head", "bytearray part", "subclass", "int deadline", "bool id"],
)
def test_an_unusual_write_is_left_to_the_python_code(write: Any) -> None:
    assert _packed_call(_FIRST, [(1, b"fine", None), write], SplitWrite) is None


def test_a_redis_store_writes_unusual_groups_as_it_writes_the_usual(redis_url: str) -> None:
    import redis

    store = RedisStore(redis.Redis.from_url(redis_url), prefix="c-call")
    try:
        store.heartbeat(5)
        ids = [store.allocate_id(True) for _ in range(5)]
        split = SplitWrite(b"\x81\xa1a\x01", 0, (b"\x90",), True)  # the usual, in C
        assert store.save_many([(ids[0], split, 1.5), (ids[1], bytearray(b"\x80"), None)]) == []
        assert store.save_many([(ids[2], b"\x80", None)]) == []
        assert store.send_ahead([(ids[3], bytearray(b"\x80"), 2.5), (ids[4], b"\x80", None)])
        assert store.read_sent() == []
        assert store.stored(ids[0]) == b"\x81\xa1a\x01"
        for agent_id in ids[1:]:
            assert store.stored(agent_id) == b"\x80"
    finally:
        for key in store._client.scan_iter("c-call:*"):
            store._client.delete(key)
        store.close()
