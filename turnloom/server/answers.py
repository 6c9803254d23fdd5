"""How a session answers a request frame: exactly one reply, carrying its request_id.

`handle` answers at once, inside `data_received`. `handle_staged` answers a frame the `intake`
took (a large body, or a request about a heavy node) as a generator, so a request with costly
checks can run them on the intake's worker thread between its loop-side halves; both refuse
alike (`refusal`).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from ..engine.core import AgentPlan
from ..engine.graph.fields import params_to_mapping
from ..engine.support.guards import brief
from ..engine.support.logs import get_logger
from ..engine.turns.observers import tell
from ..engine.turns.param_change import (
    HEAVY,
    commit_params,
    current_params,
    node_params,
    params_weight,
    proposed_params,
)
from ..protocol.codes import rejected, too_deep
from ..protocol.errors import ErrorCode, TurnloomError
from ..protocol.frames import FrameError
from ..protocol.graph_codec import graph_from_wire, params_from_wire
from ..protocol.messages import OPERATIONS, error_response, parse_request
from ..states import Rejection
from .auth import MAX_AUTH_FAILURES
from .intake import Job, Steps
from .requests import HANDLERS, SessionRequests, known_node_type

log = get_logger("turnloom.server")

#: A staged handler: yields jobs for the worker thread, is sent their results, returns the
#: reply. Same checks in the same order and the same refusals as the handler it stands for;
#: what may change while a job runs (the server shutting down, the session's room) is checked
#: again when it commits.
Staged = Generator[Job, Any, dict[str, Any]]
#: Requests about one node's params: a small frame of these is answered in stages all the same
#: when the node's params are heavier than `HEAVY` (copying and checking the largest
#: ToolCall node, 128 tools of 64 parameters, takes 50-150 ms).
BY_NODE = frozenset({"GetAgentParam", "ChangeAgentParam"})


class SessionAnswers(SessionRequests):
    """The request side of a `Session` (which provides the state declared here)."""

    @property
    def shutting_down(self) -> bool:
        """Whether the session's server is shutting down."""
        raise NotImplementedError

    def close(self) -> None:
        """End the session."""
        raise NotImplementedError

    def handle(self, frame: dict[str, Any]) -> None:
        """Answer one request frame with exactly one reply carrying its request_id."""
        request_id = frame.get("request_id")
        kind = frame["type"]
        fields: dict[str, Any] = {}
        try:
            kind, fields = self.admit_request(frame)
            reply = HANDLERS[kind](self, fields)
        except Exception as error:
            reply = self.refusal(kind, fields, request_id, error)
        self.reply(request_id, reply)

    def handle_staged(self, frame: dict[str, Any]) -> Steps:
        """`handle` for a frame the intake took: a request with costly checks (`_STAGED`)
        yields them as jobs for the intake's worker thread, and is sent each job's result or
        thrown its exception; the reply goes out at the end, as `handle` sends it (a bulky one,
        `_PACKED_OFF_LOOP`, packed on the worker thread first)."""
        request_id = frame.get("request_id")
        kind = frame["type"]
        fields: dict[str, Any] = {}
        try:
            kind, fields = self.admit_request(frame)
            staged = _STAGED.get(kind)
            reply = (yield from staged(self, fields)) if staged else HANDLERS[kind](self, fields)
        except Exception as error:
            reply = self.refusal(kind, fields, request_id, error)
        encoded = None
        if reply["type"] in _PACKED_OFF_LOOP:
            reply["request_id"] = request_id
            encoded = yield lambda: self.encoded(reply, in_pieces=True)
        self.reply(request_id, reply, encoded)

    def admit_request(self, frame: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """A request's type and fields, if this session may make it now (else raises)."""
        kind, fields = parse_request(frame)
        if self.shutting_down:
            raise TurnloomError(ErrorCode.ServerShuttingDown, "the server is shutting down")
        if not self.configured and kind != "ConfigureSession":
            raise TurnloomError(
                ErrorCode.SessionNotReady,
                f"{kind} before ConfigureSession; configure the session first",
            )
        return kind, fields

    def refusal(
        self, kind: str, fields: dict[str, Any], request_id: Any, error: Exception
    ) -> dict[str, Any]:
        """The ErrorResponse of a request that raised `error` (called in its except block)."""
        observers = self.engine_core.observers
        if isinstance(error, (FrameError, TurnloomError)):
            if observers:
                agent_id = fields.get("agent_id")
                tell(observers, "rejected", agent_id, kind, int(error.code), error.message)
            return error_response(error.code, error.message, request_id)
        if isinstance(error, Rejection):
            refusal = rejected(OPERATIONS[kind], fields.get("agent_id"), error, observers)
            return error_response(refusal.code, refusal.message, request_id)
        if isinstance(error, RecursionError):  # a value nested too deep: refused as embedded
            refusal = too_deep(OPERATIONS[kind])
            return error_response(refusal.code, refusal.message, request_id)
        # Values no check anticipated; the server stays up and the client learns which.
        log.exception("request.failed", request_type=kind, **self.context)
        return error_response(
            ErrorCode.MalformedMessage, f"{kind} could not be processed: {brief(error)}", request_id
        )

    def reply(self, request_id: Any, reply: dict[str, Any], encoded: bytes | None = None) -> None:
        """Send a request's reply (with its request_id; `encoded`: its frame, if packed
        already); end a session out of auth tries."""
        reply["request_id"] = request_id
        if encoded is None:
            self.send(reply)
        else:
            self.send_encoded(encoded)
        if self.auth_failures >= MAX_AUTH_FAILURES:
            # The refusal above is the last frame: guessing keys costs a connection per try.
            log.warning("session.auth_locked_out", failures=self.auth_failures, **self.context)
            self.close()

    def needs_stages(self, frame: dict[str, Any]) -> bool:
        """Whether a small frame is answered in stages all the same: a request about a node
        whose params take long to copy or check (`BY_NODE`)."""
        if frame.get("type") not in BY_NODE:
            return False
        try:
            agent_id: Any = frame.get("agent_id")
            node_name: Any = frame.get("node_name")
            core = self.agents.get(agent_id)
            params = core.params.get(node_name) if core is not None else None
            return params is not None and params_weight(params) > HEAVY
        except Exception:  # a hostile id or name: the request's own checks refuse it inline
            return False

    def still_serving(self) -> None:
        """Refuse (2001) a staged request the server began shutting down under."""
        if self.shutting_down:
            raise TurnloomError(ErrorCode.ServerShuttingDown, "the server is shutting down")

    def create_agent_staged(self, fields: dict[str, Any]) -> Staged:
        """CreateAgent, its graph read and compiled on the worker thread."""
        token, tags = self.creation_checks(fields)
        engine = self.engine_core

        def prepare() -> AgentPlan:
            return engine.prepare_agent(
                graph_from_wire(fields["graph"]),
                max_steps_per_turn=fields["max_steps_per_turn"],
                tags=tags,
                durable=fields["durable"],
                input_policy=fields["input_policy"],
            )

        plan: AgentPlan = yield prepare
        self.still_serving()
        self.agent_room()
        core = engine.create_prepared(plan, self, enable_diagnostics=fields["enable_diagnostics"])
        return self.created(core, token)

    def change_params_staged(self, fields: dict[str, Any]) -> Staged:
        """ChangeAgentParam, its params read and checked on the worker thread."""
        core = self.agent(fields)
        node, node_type, values = fields["node_name"], fields["node_type"], fields["params"]
        if node_type:
            known_node_type(node, node_type)
            values = yield lambda: params_from_wire(node, node_type, values)
        current = current_params(core, node)
        proposed = yield lambda: proposed_params(core.agent_id, node, current, values)
        self.still_serving()
        # The agent may have been attached elsewhere meanwhile: 3001 then, as for a later
        # request.
        commit_params(self.agent(fields), node, current, proposed)
        return {"type": "Ack", "agent_id": core.agent_id}

    def get_params_staged(self, fields: dict[str, Any]) -> Staged:
        """GetAgentParam, the params turned into plain data on the worker thread."""
        core = self.agent(fields)
        params = node_params(core, fields["node_name"])
        # Read off the loop: params objects are replaced whole, never changed in place.
        plain = yield lambda: params_to_mapping(params)
        return {
            "type": "AgentParamResponse",
            "agent_id": core.agent_id,
            "node_name": fields["node_name"],
            "node_type": params.node_type,
            "params": plain,
        }


#: Replies packed on the worker thread, in pieces (a ToolCall node's params take 2-3 ms to
#: pack, all that time with the GIL held if packed whole). Only replies of requests that start
#: nothing: a reply that waited for a job could otherwise follow the events of the turn its
#: request started, and the client expects it first.
_PACKED_OFF_LOOP = frozenset({"AgentParamResponse"})

#: The requests answered in stages when the intake takes them; the others are answered at once.
_STAGED: dict[str, Callable[[SessionAnswers, dict[str, Any]], Staged]] = {
    "CreateAgent": SessionAnswers.create_agent_staged,
    "ChangeAgentParam": SessionAnswers.change_params_staged,
    "GetAgentParam": SessionAnswers.get_params_staged,
}
