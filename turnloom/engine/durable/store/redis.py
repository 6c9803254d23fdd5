"""The shared store: Redis, for several processes (workers) over one set of agents (needs the
`redis` client, the `redis` extra).

Every step is one Lua script (`redis_scripts`), atomic in Redis: a save writes the snapshot's head,
its dialog's changed parts (`parts`) and its deadline index only if this worker holds the agent, so
every agent is always at its last complete write by its holder. The saves of agents that came to
rest together are one script call (`save_many`; a very large group, several calls in one pipelined
round trip), sent ahead of its answer (`send_ahead`): the loop does the rest of its pass while
Redis writes, and reads the answer after (`read_sent`). Loading walks the agents with `HSCAN` in
batches and claims each batch in one script; a claim reads the head, its constant entries and the
parts together and puts them back into the whole snapshot.

Opening the store checks, in one read-only round trip, that the prefix's keys are of the types
the store writes (`_check_keys`): a prefix holding another program's keys is refused before
anything is written. An agent field that is no id, or an agent whose dialog key is no list, is
logged (`store.restore_failed`) and left in the store; the other agents load.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import msgpack
import redis

from ...support.logs import get_logger
from ...support.rejections import InvalidParamValue
from . import redis_scripts as lua
from .base import LEASE_S, SWEEP_S, Claim, LeaseLost, SharedStore, Write
from .parts import assemble
from .redis_writes import WriteConnection, save_arguments
from .slots import RedisSlots
from .worker_name import is_dead_local, new_worker_name

_SCAN_BATCH = 2000
_SOCKET_TIMEOUT_S = 2.0
#: The most agents one SAVE_MANY call writes (its `unpack`s stay far below Lua's limit).
_SAVE_BATCH = 512

log = get_logger("turnloom.store")


class RedisStore(RedisSlots, SharedStore):
    """Snapshots in Redis hashes (`{prefix}:agents`, their heads; `{prefix}:tails`, their
    dialogs' tails; `{prefix}:constant`, the entries their heads leave out) and lists
    (`{prefix}:dialog:ID`, their dialogs' sealed parts), leased to workers (see
    `base.SharedStore` and `redis_scripts` for the keys)."""

    keeps_dialog_apart: ClassVar[bool] = True
    #: A write group is a round trip: written by a thread of its own while the loop goes on
    #: when most round trips wait (a distant Redis), on the loop otherwise.
    writes_off_loop: ClassVar[bool] = True
    #: And sent ahead of its answer, which is read on the loop's next pass (`send_ahead`).
    sends_ahead: ClassVar[bool] = True

    def __init__(
        self,
        client: Any,
        *,
        prefix: str = "turnloom",
        lease_s: float = LEASE_S,
        sweep_s: float = SWEEP_S,
    ) -> None:
        """`client`: a `redis.Redis`; `prefix` starts every key; `lease_s`: how long this
        worker's leases outlive its last renewal (a dead worker's agents wait that long);
        `sweep_s`: how often it looks for due deadlines nobody holds. A prefix whose keys are
        of other types than the store writes is refused (`InvalidParamValue`, 3007)."""
        for name, value in (("lease_s", lease_s), ("sweep_s", sweep_s)):
            if not isinstance(value, int | float) or not 0.01 <= value <= 3600:
                raise ValueError(f"RedisStore: {name} must be 0.01 … 3600 seconds, got {value!r}")
        self.lease_s = float(lease_s)
        self.sweep_s = float(sweep_s)
        self._client = client
        self.prefix = prefix
        self.key = f"{prefix}:agents"
        self._owners = f"{prefix}:owners"
        self._deadlines = f"{prefix}:deadlines"
        self._workers = f"{prefix}:worker:"
        self._dialogs = f"{prefix}:dialog:"
        self._tails = f"{prefix}:tails"
        self._constant = f"{prefix}:constant"
        self._next_id = f"{prefix}:next_id"
        self.worker = new_worker_name()
        #: The foreign fields and broken agents already logged (a sweep meets them again).
        self._reported: set[bytes] = set()
        #: SAVE_MANY's keys.
        self._save_keys = [self.key, self._owners, self._deadlines, self._tails, self._constant]
        #: The keys a claim (CLAIM, CLAIM_MANY) reads and takes.
        self._claim_keys = [self.key, self._owners, self._tails, self._constant]
        self._scripts = {
            name: client.register_script(getattr(lua, name))
            for name in (
                "CLAIM",
                "SAVE_MANY",
                "DELETE",
                "RELEASE",
                "HELD",
                "ALLOCATE",
                "CLAIM_MANY",
                "DUE",
                "READ",
            )
        }
        #: The connection the write groups go over, SAVE_MANY's keys and first arguments
        #: encoded once (it runs for every write group).
        self._writes = WriteConnection(
            client,
            self._scripts["SAVE_MANY"],
            [name.encode() for name in (*self._save_keys, self.worker, self._dialogs)],
            len(self._save_keys),
        )
        self._check_keys()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "turnloom",
        lease_s: float = LEASE_S,
        sweep_s: float = SWEEP_S,
    ) -> RedisStore:
        """A store on the Redis server at `url` (`redis://host:port/db`). Its calls give up
        after a few seconds (the URL's `socket_timeout=` / `socket_connect_timeout=` override
        them): a Redis that stops answering fails writes, logged, instead of hanging the
        engine loop."""
        client = redis.Redis.from_url(
            url,
            socket_timeout=_SOCKET_TIMEOUT_S,
            socket_connect_timeout=_SOCKET_TIMEOUT_S,
        )
        try:
            return cls(client, prefix=prefix, lease_s=lease_s, sweep_s=sweep_s)
        except BaseException:  # refused (or Redis unreachable): the client is ours to close
            client.close()
            raise

    def _check_keys(self) -> None:
        """Refuse a prefix whose keys are not of the types this store writes there (another
        program's keys, say): every script would fail on them, some half-way through a write.
        One read-only script call (`CHECK`); the dialog keys, one per agent, are checked as
        each agent is read instead."""
        slots, slot_info = self._keys()
        expected = {
            self._next_id: "string",
            self.key: "hash",
            self._owners: "hash",
            self._tails: "hash",
            self._constant: "hash",
            self._deadlines: "zset",
            slots: "hash",
            slot_info: "hash",
            self._order_key(): "zset",
        }
        keys = list(expected)
        wrong, *counter = self._client.eval(lua.CHECK, len(keys), *keys, *expected.values())
        found = [
            f"{keys[int(i) - 1]!r} is a {_kind(kind)}, where this store keeps a "
            f"{_kind(expected[keys[int(i) - 1]])}"
            for i, kind in zip(wrong[::2], wrong[1::2], strict=True)
        ]
        if counter:
            found.append(
                f"{self._next_id!r} holds {_text(counter[0])!r}, where this store keeps its "
                "agent id counter, an integer"
            )
        if found:
            raise InvalidParamValue(
                f"Redis store: the keys under prefix {self.prefix!r} are not a turnloom "
                f"store's: {'; '.join(found)}. Nothing was written: give this store a prefix "
                "of its own (RedisStore(prefix=...)), or delete those keys"
            )

    def _run(self, name: str, keys: list[str], args: list[Any]) -> Any:
        return self._scripts[name](keys=keys, args=args)

    def save(self, agent_id: int, document: bytes, deadline: float | None = None) -> None:
        """Write the snapshot and its deadline index, if this worker holds the agent."""
        if self.save_many([(agent_id, document, deadline)]):
            raise LeaseLost(f"agent {agent_id} is held by another worker now")

    def save_many(self, writes: Sequence[Write]) -> list[int]:
        """One SAVE_MANY call per `_SAVE_BATCH` agents, all in one round trip: each agent this
        worker holds is written (its head, and its parts from the write's base on); the
        others' ids are returned."""
        if len(writes) <= _SAVE_BATCH:
            replies = [self._writes.call(writes)]
        else:
            self._writes.settle()
            keys = self._save_keys
            script = self._scripts["SAVE_MANY"]
            pipe = self._client.pipeline(transaction=False)
            for start in range(0, len(writes), _SAVE_BATCH):
                table, blobs = save_arguments(writes[start : start + _SAVE_BATCH])
                packed = msgpack.packb(table, use_bin_type=False)
                script(keys=keys, args=[self.worker, self._dialogs, packed, *blobs], client=pipe)
            replies = pipe.execute()
        return [int(agent_id) for reply in replies for agent_id in reply]

    def send_ahead(self, writes: Sequence[Write]) -> bool:
        """Send the one SAVE_MANY call of `writes` without reading Redis's answer (`read_sent`
        reads it: `WriteConnection.send`); False, nothing sent, for more than one call's worth
        of writes or a send that failed: `save_many` them."""
        return len(writes) <= _SAVE_BATCH and self._writes.send(writes)

    def read_sent(self) -> list[int]:
        """The ids `send_ahead`'s writes refused, once Redis has answered."""
        return self._writes.read()

    def delete(self, agent_id: int) -> None:
        """Remove the agent, unless another worker holds it."""
        if not self._run("DELETE", self._save_keys, [agent_id, self.worker, self._dialogs]):
            raise LeaseLost(f"agent {agent_id} is held by another worker now")

    def load_all(self) -> Iterator[tuple[int, bytes]]:
        """Every agent no live worker holds, each claimed by this one on the way."""
        batch: list[bytes] = []
        # The documents are read again by the claim (one may change in between); HSCAN's
        # NOVALUES would spare this first copy, but needs Redis 7.4.
        for field, _ in self._client.hscan_iter(self.key, count=_SCAN_BATCH):
            if self._names_agent(field, self.key):
                batch.append(field)
            if len(batch) >= _SCAN_BATCH:
                yield from self._claim_many(batch)
                batch = []
        if batch:
            yield from self._claim_many(batch)

    def _claim_many(self, ids: list[bytes]) -> Iterator[tuple[int, bytes]]:
        args = [self.worker, self._workers, self._dialogs, *ids]
        claimed, busy, broken = self._run("CLAIM_MANY", self._claim_keys, args)
        if self._reap(busy):  # some were held by a dead process of this machine: try again
            claimed += self._run("CLAIM_MANY", self._claim_keys, args)[0]
        for i in range(0, len(broken), 2):
            self._broken(broken[i], broken[i + 1])
        for i in range(0, len(claimed), 5):
            parts = _parts(claimed[i + 2], claimed[i + 3])
            yield int(claimed[i]), assemble(claimed[i + 1], parts, claimed[i + 4])

    def stored(self, agent_id: int) -> bytes | None:
        """The agent's snapshot as stored (head, constant entries and parts put together), or
        None; read without claiming it. `InvalidParamValue` if its dialog key is no list."""
        keys = [self.key, self._tails, self._constant]
        found = self._run("READ", keys, [agent_id, self._dialogs])
        if found is not None and len(found) == 1:  # READ's answer for a dialog key of no list
            raise InvalidParamValue(
                f"Redis store: agent {agent_id} cannot be read: its dialog key "
                f"{self._dialogs + str(agent_id)!r} is a {_kind(found[0])}, not a list "
                "(another program's key under this store's prefix)"
            )
        return None if found is None else assemble(found[0], _parts(found[1], found[2]), found[3])

    def _names_agent(self, field: bytes, key: str) -> bool:
        """Whether a field (or member) of `key` is an agent id as this store writes them (the
        integer's digits); another program's is logged once and left in the store."""
        try:
            if b"%d" % int(field) == field:
                return True
        except ValueError:
            pass
        text = _text(field)
        self._report(
            field,
            text,
            f"{key!r} holds {text!r}, which is not an agent id (an integer): "
            "another program's data under this store's prefix",
        )
        return False

    def _broken(self, agent_id: bytes, kind: bytes) -> None:
        """Log a stored agent whose dialog key is of another type than a list (not claimed)."""
        self._report(
            agent_id,
            int(agent_id),
            f"its dialog key {self._dialogs + agent_id.decode()!r} is a {_kind(kind)}, not a "
            "list (another program's key under this store's prefix)",
        )

    def _report(self, field: bytes, agent_id: int | str, reason: str) -> None:
        # Once per store: the sweep meets the same agents again at each pass.
        if field not in self._reported:
            self._reported.add(field)
            log.error(
                "store.restore_failed", agent_id=agent_id, reason=f"{reason}; left in the store"
            )

    def _reap(self, owners: Sequence[bytes]) -> bool:
        """End the leases of owners that are dead processes of this machine (see
        `worker_name`); whether there was any."""
        dead = {name for name in {o.decode() for o in owners} if is_dead_local(name)}
        if dead:
            self._client.delete(*(self._workers + name for name in dead))
        return bool(dead)

    def allocate_id(self, durable: bool) -> int:
        """INCR of `{prefix}:next_id` (started past every stored id); `InvalidParamValue` if
        the counter holds no integer (nothing is written then)."""
        keys = [self._next_id, self._owners, self.key]
        given = self._run("ALLOCATE", keys, [self.worker, int(durable)])
        if isinstance(given, list):  # INCR refused the counter: {error, type, first bytes}
            error, kind, head = (_text(value) for value in given)
            holds = f"holds {head!r}" if kind == "string" else f"is a {_kind(kind)}"
            raise InvalidParamValue(
                f"Redis store: no id for a new agent: the id counter {self._next_id!r} {holds} "
                f"({error}). Set it to an integer past every stored agent's id, or delete it "
                "(the store then starts it past them)"
            )
        return int(given)

    def claim(self, agent_id: int, *, adopt: bool = False) -> Claim:
        """Take the agent unless a live worker holds it (see `SharedStore.claim`)."""
        found = self._claim_once(agent_id, adopt)
        if found.status == "busy" and found.owner and self._reap([found.owner.encode()]):
            found = self._claim_once(agent_id, adopt)
        return found

    def _claim_once(self, agent_id: int, adopt: bool) -> Claim:
        reply = self._run(
            "CLAIM",
            self._claim_keys,
            [agent_id, self.worker, self._workers, int(adopt), self._dialogs],
        )
        status = reply[0].decode()
        if status == "broken":  # its dialog key is no list: it cannot be restored (logged)
            self._broken(str(agent_id).encode(), reply[1])
            return Claim("missing")
        if status == "missing":
            return Claim("missing")
        document = assemble(reply[1], _parts(reply[3], reply[4]), reply[5]) if reply[1] else None
        owner = reply[2].decode() if status == "busy" else None
        return Claim(status, document, owner)

    def release(self, agent_ids: Sequence[int]) -> None:
        """Remove the owner fields that name this worker."""
        if agent_ids:
            self._run("RELEASE", [self._owners], [self.worker, *agent_ids])

    def claim_due(self, now: float, limit: int) -> list[tuple[int, bytes]]:
        """The due ids (`ZRANGEBYSCORE`), then those no live worker holds, claimed."""
        due = self._run("DUE", [self._deadlines], [repr(now), limit])
        due = [member for member in due if self._names_agent(member, self._deadlines)]
        return list(self._claim_many(due)) if due else []

    def held(self, agent_ids: Sequence[int]) -> set[int]:
        """Which of these this worker holds, by their owner fields."""
        if not agent_ids:
            return set()
        return {int(i) for i in self._run("HELD", [self._owners], [self.worker, *agent_ids])}

    def heartbeat(self, lease_s: float) -> bool:
        """`SET {prefix}:worker:NAME 1 PX lease GET`: False if the key had expired."""
        previous = self._client.set(
            self._workers + self.worker, 1, px=max(1, int(lease_s * 1000)), get=True
        )
        return previous is not None

    def leave(self, agent_ids: Sequence[int]) -> None:
        """Write what is queued, then release the agents and delete this worker's key."""
        self.flush_queued()
        self.release(agent_ids)
        self._client.delete(self._workers + self.worker)

    def close(self) -> None:
        """Write what is queued, then close the client's connections."""
        self.flush_queued()
        self._writes.close()
        self._client.close()


def _text(value: bytes | str) -> str:
    """A reply's text (the client may have been made with `decode_responses`)."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _kind(redis_type: bytes | str) -> str:
    """A Redis type as a message names it (`TYPE` says "zset" for a sorted set)."""
    name = _text(redis_type)
    return "sorted set" if name == "zset" else name


def _parts(sealed: list[bytes], tail: bytes) -> list[bytes]:
    """An agent's parts as read: its sealed ones, then its tail ('' when it has none)."""
    return [*sealed, tail] if tail else sealed
