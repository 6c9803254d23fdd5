"""The checks of a snapshot that go past its fields' types, for `restore.read_snapshot`
(docs/reference/durability.md#refused-snapshots): the bounds of its ids, counters and times, a
paused turn's pause and pending calls against the node that paused and the turn's messages, the
call ids in its dialog, and each node's state. Each refusal is the snapshot's 3007 (`refuse`),
the message naming the field.

Why bounds: a restored agent's numbers go on in the engine (turn ids are the engine's, agent
ids the store's keys, call ids have a fixed width), so a number past what the engine itself
could reach breaks later and elsewhere: another agent's snapshot, or the agent's own next one.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Mapping
from typing import Any

from ..graph.model_params import HistoryParams
from ..graph.params import (
    MAX_LINES,
    CannedResponseParams,
    NodeParams,
    ToolCallDisposition,
    ToolCallParams,
)
from ..support.guards import brief
from ..support.rejections import InvalidParamValue
from ..tools.arguments import arguments_as_strings, coerce_arguments
from ..turns.dialog.history import START_KEY
from ..turns.dialog.messages import ENGINE_CALL_ID, engine_call_number
from ..turns.results import PauseInfo, ToolCallEvent
from .snapshot import pack

NUMBER = (int, float)
#: The largest id or counter a snapshot may hold: far below msgpack's 2**64 - 1, so the ids
#: and counters the engine goes on with past a restored one stay storable.
LARGEST_COUNT = 1 << 62
#: How many call ids there are: "c" then 8 hex digits (`AgentCore.next_call_id`); the ids
#: are read back only in that form, so an agent's counter must stay below this.
CALL_IDS = 16**8
#: The most nodes one turn may walk (a loop in the graph ends 4003 past its own limit; this
#: bounds the limit itself, like every other number an agent takes): `create_agent` bounds
#: `max_steps_per_turn` by it, and a snapshot's by the same.
MAX_STEPS_PER_TURN = 1_000_000
#: What a snapshot's absolute times are measured in (`snapshot.clock_kind`).
CLOCKS = ("virtual", "wall")
#: How much later than `paused_at + timeout_ms` a deadline may say (seconds): the two are
#: sums of the same clock reading and offset, added in another order, so they may differ in
#: their last bits; a millisecond is the unit of `timeout_ms`.
_DEADLINE_SLACK = 0.001
_INTEGERS = (-(1 << 63), (1 << 64) - 1)  # what msgpack holds


def refuse(reason: str) -> InvalidParamValue:
    """The 3007 of a snapshot that cannot be restored."""
    return InvalidParamValue(f"snapshot: {reason}; nothing was restored")


class Doc:
    """Typed reads of one map of the document; a miss is the snapshot's 3007."""

    __slots__ = ("data", "where")

    def __init__(self, data: Any, where: str) -> None:
        if data.__class__ is not dict and not isinstance(data, Mapping):
            raise refuse(f"{where} must be a map, got {type(data).__name__}")
        self.data = data
        self.where = where

    def get(self, key: str, types: type | tuple[type, ...], *, nullable: bool = False) -> Any:
        value = self.data.get(key)
        # The common case first, and cheap: 100,000 agents restored read 3.7 million fields.
        if isinstance(value, types) and value.__class__ is not bool:
            return value
        if value is None and nullable:
            return None
        if isinstance(value, bool) and bool in _tuple(types):
            return value
        raise refuse(f"{self.where}.{key} must be {_names(types)}, got {brief(value)}")

    def count(self, key: str, minimum: int = 0, maximum: int = LARGEST_COUNT) -> int:
        value: int = self.get(key, int)
        if not minimum <= value <= maximum:
            raise refuse(f"{self.where}.{key} must be in {minimum} … {maximum}, got {value}")
        return value

    def moment(self, key: str) -> float:
        """An absolute time: a finite number of seconds (NaN would never compare, so a timer
        at it would never fire and would stop the timers after it on a `VirtualClock`)."""
        return self._finite(key, self.get(key, NUMBER))

    def duration(self, key: str) -> float:
        """A length of time: a finite number of seconds, not negative."""
        value = self._finite(key, self.get(key, NUMBER))
        if value < 0:
            raise refuse(f"{self.where}.{key} must be >= 0 seconds, got {value}")
        return value

    def _finite(self, key: str, value: float) -> float:
        try:
            number = float(value)
        except OverflowError:  # an int past every float
            number = math.inf
        if not math.isfinite(number):
            raise refuse(f"{self.where}.{key} must be a finite number of seconds, got {value}")
        return number

    def sub(self, key: str) -> Doc:
        return Doc(self.data.get(key), f"{self.where}.{key}")


def _tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


def _names(types: type | tuple[type, ...]) -> str:
    return " or ".join(t.__name__ for t in _tuple(types))


def storable(document: Mapping[str, Any]) -> None:
    """Refuse a document in the `to_dict` form that holds what msgpack cannot (an int past
    64 bits, an object): it has no bytes form, and the agent's next snapshot would fail."""
    try:
        pack(dict(document))
    except Exception:  # OverflowError, TypeError, ValueError (nested too deep): located below
        raise refuse(_unstorable(document, "snapshot") or "it cannot be packed") from None


def _unstorable(value: Any, where: str, depth: int = 0) -> str | None:
    """Where in `value` is what msgpack cannot pack (None: nothing found)."""
    if value.__class__ is int:
        if _INTEGERS[0] <= value <= _INTEGERS[1]:
            return None
        return f"{where} is {brief(value)}, past the integers a snapshot holds (64 bits)"
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return None
    if depth > 500:
        return f"{where} is nested too deep"
    if isinstance(value, dict):  # another mapping is no map to msgpack: named below
        items = [(f"{where}.{key}", item) for key, item in value.items()]
    elif isinstance(value, list | tuple):
        items = [(f"{where}[{index}]", item) for index, item in enumerate(value)]
    else:
        return f"{where} is a {type(value).__name__}, which a snapshot cannot hold"
    for path, item in items:
        if (found := _unstorable(item, path, depth + 1)) is not None:
            return found
    return None


def checked_node_state(raw: Any, nodes: Mapping[str, NodeParams]) -> dict[str, dict[str, Any]]:
    """The per-node state, each node's as its kind keeps it: a CannedResponse node the next
    line of its cycle ("next", `nodes.canned`), a node with a history budget where its kept
    history starts (`history.START_KEY`); other nodes keep nothing. A value the node cannot
    read would fail each of its later turns (4001)."""
    if not isinstance(raw, dict):
        raise refuse(f"node_state must be a map, got {type(raw).__name__}")
    for name, state in raw.items():
        node = nodes.get(name) if isinstance(name, str) else None
        if node is None:
            raise refuse(f"node_state names node {brief(name)}, which is not in the graph")
        if not isinstance(state, dict):
            raise refuse(f"node_state.{name} must be a map, got {brief(state)}")
        kept = _kept_state(node)
        for key, value in state.items():
            if key not in kept:
                holds = ", ".join(sorted(kept)) or "nothing"
                raise refuse(
                    f"node_state.{name} holds {brief(key)}, which a {node.node_type} node does "
                    f"not keep (it keeps {holds})"
                )
            if value.__class__ is not int or not 0 <= value <= kept[key]:
                raise refuse(
                    f"node_state.{name}.{key} must be an int in 0 … {kept[key]}, got {brief(value)}"
                )
    return raw


def _kept_state(node: NodeParams) -> dict[str, int]:
    """The keys a node of this kind keeps in its state, and the largest value of each."""
    if isinstance(node, CannedResponseParams):
        return {"next": MAX_LINES}  # the index after the line said; never past the lines
    if isinstance(getattr(node, "history", None), HistoryParams):
        return {START_KEY: LARGEST_COUNT}  # an exchange's index (past the dialog: clipped)
    return {}


def dialog_call_ids(messages: list[dict[str, Any]], call_seq: int) -> None:
    """Every engine call id in the dialog (checked messages) was handed out before the counter,
    so the agent's next call never gets an id its dialog holds
    (docs/reference/tools.md#call-ids). Ids of another form are a seeded dialog's: the engine
    never hands them out."""
    # Engine ids have one width and lowercase hex digits, so they compare as their numbers do:
    # one string comparison clears an id (as a rule) before any pattern is matched.
    limit = f"c{call_seq:08x}"
    for index, message in enumerate(messages):
        if "tool_calls" in message:  # only an assistant message has them
            ids = [call["id"] for call in message["tool_calls"]]
        elif "tool_call_id" in message:  # only a tool message
            ids = [message["tool_call_id"]]
        else:
            continue
        for call_id in ids:
            if (
                len(call_id) == len(limit)
                and call_id >= limit
                and ENGINE_CALL_ID.fullmatch(call_id)
            ):
                raise refuse(
                    f"dialog[{index}] holds call id {call_id}, at or past call_seq {call_seq}: "
                    "the agent's next calls would be given ids its dialog already has"
                )


def pause_info(doc: Doc, params: NodeParams, node: str, call_seq: int) -> PauseInfo:
    """The pause of `doc` (the turn's "pause"), at `node`, checked against its params."""
    exit_route = doc.get("pending_exit", str)
    routes = params.pausing_routes()
    if exit_route not in routes:
        raise refuse(
            f"turn.pause.pending_exit {brief(exit_route)} is not an exit node '{node}' pauses "
            f"after ({', '.join(routes) or f'a {params.node_type} node never pauses'})"
        )
    info = PauseInfo(
        node, exit_route, doc.get("pending_target", str), doc.count("timeout_ms"),
        _calls(doc, params, node, call_seq), doc.get("awaits_results", bool),
    )  # fmt: skip
    is_tool = isinstance(params, ToolCallParams)
    is_await = (
        isinstance(params, ToolCallParams) and params.disposition is ToolCallDisposition.AwaitResult
    )
    for field, value, expected in (
        ("pending_target", info.pending_target, params.exit_target(exit_route)),
        ("timeout_ms", info.timeout_ms, getattr(params, "pause_timeout_ms", 0)),
        ("awaits_results", info.awaits_results, is_await),
    ):
        if value != expected:
            raise refuse(
                f"turn.pause.{field} is {brief(value)}, and node '{node}' says {brief(expected)}: "
                "the pause does not fit the node's params"
            )
    if bool(info.pending_calls) != is_tool:
        held = "none" if is_tool else f"{len(info.pending_calls)}"
        raise refuse(
            f"turn.pause.pending_calls holds {held}: a pause at a {params.node_type} node "
            f"('{node}') holds {'its calls' if is_tool else 'none'}"
        )
    return info


def pause_times(doc: Doc, timeout_ms: int) -> tuple[float, float | None]:
    """A pause's `paused_at` and `deadline` (absolute times), checked: a deadline exactly when
    the pause has a timeout, and none later than `paused_at + timeout_ms` (it would wait past
    its node's timeout). An earlier one is a deadline that passed: it fires at once."""
    paused_at = doc.moment("paused_at")
    if (doc.data.get("deadline") is None) != (timeout_ms == 0):
        raise refuse("turn.pause.deadline must be set exactly when the pause has a timeout")
    if not timeout_ms:
        return paused_at, None
    deadline, latest = doc.moment("deadline"), paused_at + timeout_ms / 1000
    if deadline > latest + _DEADLINE_SLACK:
        raise refuse(
            f"turn.pause.deadline {deadline} is later than paused_at + timeout_ms ({paused_at} "
            f"+ {timeout_ms} ms = {latest}): the pause would wait past its node's timeout"
        )
    return paused_at, deadline


def _calls(doc: Doc, params: NodeParams, node: str, call_seq: int) -> tuple[ToolCallEvent, ...]:
    tools = {tool.name: tool for tool in params.tools} if isinstance(params, ToolCallParams) else {}
    disposition = params.disposition.value if isinstance(params, ToolCallParams) else "none"
    calls: list[ToolCallEvent] = []
    for index, item in enumerate(doc.get("pending_calls", list)):
        where = f"{doc.where}.pending_calls[{index}]"
        call = Doc(item, where)
        call_id = call.get("call_id", str)
        number = engine_call_number(call_id)
        if number is None or number >= call_seq:
            raise refuse(f"call id {brief(call_id)} was never handed out (call_seq {call_seq})")
        if any(earlier.call_id == call_id for earlier in calls):
            # Results are matched to calls by id: two calls with one id could not both be answered.
            raise refuse(f"{where}.call_id {call_id} is already the id of an earlier pending call")
        if call.get("node_name", str) != node:
            raise refuse(f"call {call_id} belongs to another node than the pause's")
        tool_name = call.get("tool_name", str)
        if tool_name not in tools:
            raise refuse(
                f"{where}.tool_name {brief(tool_name)} is not a tool node '{node}' declares "
                f"({', '.join(sorted(tools)) or 'none'})"
            )
        # The node's, as every call it makes carries it (a structural field: it never changes).
        if (kind := call.get("disposition", str)) != disposition:
            raise refuse(
                f"{where}.disposition {brief(kind)} is not the disposition of node '{node}', "
                f"{disposition!r}"
            )
        arguments, written = call.get("arguments", dict), call.get("arguments_json", str)
        types = {param.name: param.type for param in tools[tool_name].parameters}
        if (error := _arguments_error(arguments, written, types)) is not None:
            raise refuse(f"{where}.{error}")
        calls.append(
            ToolCallEvent(call_id, tool_name, written, node, kind, arguments, _unread(call))
        )
    return tuple(calls)


def _unread(call: Doc) -> tuple[str, ...]:
    if call.data.get("unread_arguments") is None:
        return ()
    names = call.get("unread_arguments", list)
    if not all(isinstance(name, str) for name in names):
        raise refuse(f"{call.where}.unread_arguments must be argument names")
    return tuple(names)


def _arguments_error(arguments: dict[str, Any], written: str, types: dict[str, str]) -> str | None:
    """Why a call's `arguments` are not what its `arguments_json` says, or None.

    Both come from the model's values (`nodes.toolcall`): every one as a string in
    `arguments_json`, and coerced to the declared type in `arguments`. A value was a string
    (its text) or JSON (its text parsed); one of the two must give both again."""
    try:
        texts = json.loads(written)
    except (ValueError, RecursionError):
        texts = None
    if not isinstance(texts, dict) or not all(isinstance(text, str) for text in texts.values()):
        return f"arguments_json must be a JSON object of strings, got {brief(written)}"
    if texts.keys() != arguments.keys():
        return f"arguments names {sorted(arguments)}, and arguments_json {sorted(texts)}"
    if coerce_arguments(texts, types) == arguments:
        return None  # the values were strings (as a rule): their texts give them again
    for name, text in texts.items():
        candidates: list[Any] = [text]
        with contextlib.suppress(ValueError, RecursionError):  # a string that is not JSON
            candidates.append(json.loads(text))
        declared = {name: types[name]} if name in types else {}
        if not any(
            arguments_as_strings({name: value})[name] == text
            and pack(coerce_arguments({name: value}, declared)[name]) == pack(arguments[name])
            for value in candidates
        ):
            return (
                f"arguments[{name!r}] is {brief(arguments[name])}, which arguments_json's "
                f"{brief(text)} does not give (declared {types.get(name, 'nothing')})"
            )
    return None


def turn_messages(messages: list[dict[str, Any]], info: PauseInfo, call_seq: int) -> None:
    """A paused turn's messages (checked chat messages) are its replies and tool exchanges:
    no user message (the turn's own is `user_message`), engine call ids handed out before the
    counter, and every call followed by its result, but for an AwaitResult pause's pending
    calls, which the last message makes (their results come with the resume). A prompt made
    from them is then well-formed (docs/reference/tools.md#every-call-gets-its-result)."""
    calls: dict[str, tuple[int, str]] = {}  # the calls not answered yet: index, tool
    made: set[str] = set()
    for index, message in enumerate(messages):
        where = f"turn.messages[{index}]"
        role = message["role"]
        if role == "user":
            raise refuse(
                f"{where} is a user message: a turn has one, its user_message, and its "
                "messages are the replies and tool exchanges after it"
            )
        if role == "tool":
            call_id = message.get("tool_call_id", "")
            if calls.pop(call_id, None) is None:
                raise refuse(f"{where} answers call {brief(call_id)}, which nothing before made")
            continue
        for call in message.get("tool_calls", ()):
            call_id = call["id"]
            number = engine_call_number(call_id)
            if number is None or number >= call_seq:
                raise refuse(
                    f"{where} makes call {brief(call_id)}, never handed out (call_seq {call_seq})"
                )
            if call_id in made:
                raise refuse(f"{where} makes call {call_id} a second time")
            made.add(call_id)
            calls[call_id] = (index, call["function"]["name"])
    last = len(messages) - 1
    awaited = {c.call_id: (last, c.tool_name) for c in info.pending_calls if info.awaits_results}
    if calls == awaited:
        return
    if awaited:
        said = ", ".join(f"{call_id} ({tool})" for call_id, (_, tool) in awaited.items())
        unanswered = ", ".join(calls) or "none"
        raise refuse(
            f"turn.messages must end with the call of {said}, the pending calls the pause "
            f"awaits, and answer every earlier call; unanswered in them: {unanswered}"
        )
    raise refuse(
        f"turn.messages leave call(s) {', '.join(calls)} unanswered: every call the model is "
        "shown is followed by its result"
    )
