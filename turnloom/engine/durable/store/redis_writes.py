"""The connection a Redis store's write groups go over (`WriteConnection`): one SAVE_MANY call
at a time on a connection of the store's own, each answered before the next goes, one of them
possibly sent ahead of its answer (`send`, then `read`), so the loop does the rest of its pass
while Redis writes.

The client's command path (pool, retries, its telemetry) costs several times the round trip
itself, and a write group is made at almost every loop iteration of a busy worker: so the
calls are packed here and sent on the connection directly. The package's C extension packs a
group in one pass (`_save_call.c`); where it is not built, or for a write it leaves to Python,
the call is made of `save_arguments` and packed by the client's C packer: the same bytes.
Like the client, a call loads the script if Redis lacks it, and is made again on a dropped
connection (it may be made twice: SAVE_MANY's writes are idempotent, its parts
replaced from a given index).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import msgpack
import redis

from .base import Write
from .parts import SplitWrite, as_split

try:  # the client's own C packer (the `redis[hiredis]` extra the store asks for)
    from hiredis import pack_command as _pack_command
except ImportError:  # pragma: no cover - the client packs the command itself
    _pack_command = None  # type: ignore[assignment]
try:  # the package's C extension: the whole call packed in one go (`_save_call.c`)
    from ._save_call import packed_call as _packed_call
except ImportError:  # not built: the call's table and blobs made here, packed by hiredis
    _packed_call = None  # type: ignore[assignment]

#: One SAVE_MANY call's arguments after its keys: the writes' table, and the blobs it points to.
Call = tuple[list[Any], list[bytes]]


class WriteConnection:
    """SAVE_MANY calls on a connection of their own (taken from the client's pool when first
    needed, given back by `close`), one at a time: a lock keeps a call of the loop's off the
    writing thread's (they take turns anyway: `write_queue`), and a call sent ahead is read
    before anything else goes on the connection."""

    def __init__(self, client: Any, script: Any, head: list[bytes], keys: int) -> None:
        """`client`: the store's `redis.Redis`; `script`: SAVE_MANY, registered; `head`: its
        keys and first arguments, encoded; `keys`: how many of them are keys."""
        self._client = client
        self._script = script
        #: The call's arguments before its table, encoded.
        self._first = (b"EVALSHA", script.sha.encode(), str(keys).encode(), *head)
        self._connection: Any = None
        #: What packs the table as Redis's `cmsgpack` reads it (str types only).
        self._packer = msgpack.Packer(use_bin_type=False)
        self._lock = threading.Lock()
        #: The writes sent ahead whose answer is unread (`send`), to make the call again if
        #: Redis lacks the script or the connection drops.
        self._sent: Sequence[Write] | None = None
        #: Its answer once read (or what reading it failed with), until `read` takes it.
        self._answered: Any = None

    def call(self, writes: Sequence[Write]) -> Any:
        """Make the SAVE_MANY call of `writes` and wait for its answer (the ids refused)."""
        with self._lock:
            self._settle()
            return self._call(writes)

    def send(self, writes: Sequence[Write]) -> bool:
        """Send the SAVE_MANY call of `writes` without reading its answer (`read` reads it);
        False, nothing sent, if the connection dropped."""
        command = self._command(writes)
        with self._lock:
            self._settle()
            connection = self._connected()
            try:
                _put(connection, command)
            except redis.exceptions.ConnectionError:
                connection.disconnect()
                return False
            self._sent = writes
        return True

    def read(self) -> list[int]:
        """The ids the call `send` sent refused, once Redis has answered (the call made again
        if Redis answered that it lacks the script, or the connection dropped)."""
        with self._lock:
            self._settle()
            answer, self._answered = self._answered, None
        if answer is None:
            raise RuntimeError("no write was sent ahead")
        if isinstance(answer, BaseException):
            raise answer
        return [int(agent_id) for agent_id in answer]

    def settle(self) -> None:
        """Read the answer to the call sent ahead, if one is unread, and keep it for `read`
        (before a call goes on another connection: calls are answered in the order sent)."""
        with self._lock:
            self._settle()

    def close(self) -> None:
        """Read what is unread, and give the connection back to the client's pool."""
        with self._lock:
            self._settle()
            if self._connection is not None:
                self._client.connection_pool.release(self._connection)
                self._connection = None

    def _settle(self) -> None:
        """Read the answer to the call sent ahead, if one is unread, and keep it for `read`
        (with the lock held)."""
        if self._sent is None:
            return
        writes, self._sent = self._sent, None
        try:
            try:
                self._answered = self._connected().read_response()
            except redis.exceptions.ConnectionError:
                self._connected().disconnect()
                self._answered = self._call(writes)
            except redis.exceptions.NoScriptError:
                self._answered = self._call(writes)
        except Exception as exc:
            self._answered = exc

    def _connected(self) -> Any:
        if self._connection is None:
            self._connection = self._client.connection_pool.get_connection()
        return self._connection

    def _command(self, writes: Sequence[Write]) -> bytes | tuple[bytes, ...]:
        """The SAVE_MANY call of `writes`, packed as Redis reads it; or its arguments, for the
        client to pack."""
        if _packed_call is not None:
            # The table, the blobs and the packing in one C call (a group of 20 writes: 32 us
            # in Python and hiredis against 10).
            command: bytes | None = _packed_call(self._first, writes, SplitWrite)
            if command is not None:
                return command
        table, blobs = save_arguments(writes)
        args = (*self._first, self._packer.pack(table), *blobs)
        if _pack_command is None:
            return args
        # In one C call: the client's packer calls its encoder on each argument first (a group
        # of 64 writes, 96 heads and tails: 55 us against 20).
        try:
            return _pack_command(args)
        except TypeError:  # a value hiredis does not take (a bytearray): the client's
            return args

    def _call(self, writes: Sequence[Write]) -> Any:
        """Make the SAVE_MANY call of `writes` and read its answer: its script loaded if Redis
        lacks it, and made once more on a dropped connection."""
        command = self._command(writes)
        connection = self._connected()
        again = True
        while True:
            try:
                _put(connection, command)
                return connection.read_response()
            except redis.exceptions.NoScriptError:
                if not again:
                    raise
                connection.send_command("SCRIPT", "LOAD", self._script.script)
                connection.read_response()
            except redis.exceptions.ConnectionError:
                connection.disconnect()
                if not again:
                    raise
            again = False


def _put(connection: Any, command: bytes | tuple[bytes, ...]) -> None:
    """Send a call on `connection`: packed whole, else its arguments by the client's packer."""
    if command.__class__ is bytes:
        connection.send_packed_command([command])
    else:
        connection.send_command(*command)


def save_arguments(writes: Sequence[Write]) -> Call:
    """The SAVE_MANY call of `writes`: its table, eight values an agent, and the heads, tails,
    sealed parts and constant entries it points to (ARGV from index 4 on: blob k is ARGV k + 4)."""
    table: list[Any] = []
    blobs: list[bytes] = []
    for agent_id, document, deadline in writes:
        split = as_split(document)
        sealed, at_tail, first, at_constant = split.parts, 0, 0, 0
        blobs.append(split.head)
        at_head = len(blobs) + 3
        if split.tail:
            blobs.append(sealed[-1])
            sealed, at_tail = sealed[:-1], len(blobs) + 3
        if sealed:
            first = len(blobs) + 4
            blobs += sealed
        if split.constant is not None:
            blobs.append(split.constant)
            at_constant = len(blobs) + 3
        table += (
            str(agent_id),
            at_head,
            "" if deadline is None else repr(deadline),
            -1 if split.base is None else split.base,
            first,
            len(sealed),
            at_tail,
            at_constant,
        )
    return table, blobs
