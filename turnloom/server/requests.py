"""A session's request handlers: one method per request type of the catalog
(docs/protocol.md#3-requests).

Each takes the request's checked fields (`protocol.messages.parse_request`) and returns the
reply frame, or raises: a `Rejection` or `TurnloomError` that `Session.handle` turns into the
request's `ErrorResponse`. Handlers run inside `data_received`, so what a request causes at
once is written before its reply.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from ..engine.core import EngineCore
from ..engine.durable.agent import DurableAgentCore
from ..engine.durable.store.slots import checked_agent_id
from ..engine.graph.fields import params_to_mapping
from ..engine.inference.info import model_info
from ..engine.support.guards import brief
from ..engine.support.logs import get_logger
from ..engine.support.rejections import AgentDestroyed, InvalidParamValue, UnknownAgent
from ..engine.turns.agent import AgentCore
from ..protocol.errors import ErrorCode, TurnloomError
from ..protocol.frames import PROTOCOL_VERSION
from ..protocol.graph_codec import NODE_TYPES, graph_from_wire, params_from_wire
from ..protocol.records import model_info_to_wire, pause_to_wire, result_to_wire, slot_to_wire
from ..states import InputPolicy, TurnState
from .attach import DIGEST_TAG, new_token, tags_open, token_opens
from .auth import MAX_AUTH_FAILURES, AuthKey, refusal
from .events import SessionEvents
from .limits import ServerLimits
from .quotas import SessionQuota

log = get_logger("turnloom.server")


class SessionRequests(SessionEvents):
    """The request handlers of a `Session` (which provides the state declared here); the
    session is also the listener of the agents it creates."""

    limits: ServerLimits
    session_id: int
    configured: bool
    agents: dict[int, AgentCore]
    #: Recently destroyed agent ids, so a late request gets 3002 rather than 3001 (bounded).
    destroyed: OrderedDict[int, None]
    context: dict[str, Any]
    quota: SessionQuota
    #: ConfigureSessions refused for their auth key so far.
    auth_failures: int

    @property
    def engine_core(self) -> EngineCore:
        """The engine core whose agents the session creates."""
        raise NotImplementedError

    @property
    def auth(self) -> AuthKey | None:
        """The key this session must present, or None."""
        raise NotImplementedError

    def configured_in_time(self) -> None:
        """Disarm the deadline for configuring the session."""
        raise NotImplementedError

    def take_over(self, agent_id: int) -> None:
        """Take `agent_id` from whichever other session holds it (it is told so)."""
        raise NotImplementedError

    def authenticate(self, candidate: object) -> None:
        """Check the session's auth key, if the server has one (2004 when it is not the key).

        Neither the key nor the candidate is ever logged or put in a message: the reason says
        only which way it failed."""
        if self.auth is None:
            return
        reason = refusal(self.auth, candidate)
        if reason is None:
            return
        self.auth_failures += 1
        left = MAX_AUTH_FAILURES - self.auth_failures
        log.warning("session.auth_failed", failures=self.auth_failures, **self.context)
        then = (
            "the connection is closed"
            if left <= 0
            else f"{left} more failure(s) and the connection is closed"
        )
        raise TurnloomError(ErrorCode.Unauthorized, f"unauthorized: {reason}; {then}")

    def open_turn_refusal(self) -> None:
        """Refuse (2003) a request that would start inference when a session quota is spent."""
        # Counting walks the session's agents: only when there is a limit to count against.
        open_turns = (
            sum(1 for core in self.agents.values() if core.turn.state is not TurnState.IDLE)
            if self.limits.max_open_turns_per_session
            else 0
        )
        reason = self.quota.turn_refusal(open_turns)
        if reason is not None:
            raise TurnloomError(ErrorCode.SessionLimitExceeded, reason)

    def agent(self, fields: dict[str, Any]) -> AgentCore:
        """The session's agent the request names (3001 unknown, 3002 destroyed)."""
        agent_id = fields["agent_id"]
        core = self.agents.get(agent_id)
        if core is not None:
            return core
        if agent_id in self.destroyed:
            raise AgentDestroyed(f"agent {agent_id} was destroyed")
        # Other sessions' agents are unknown here: sessions never see into each other.
        raise UnknownAgent(f"no agent with id {brief(agent_id)} in this session")

    def configure(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ConfigureSession: check the auth key (2004), then the protocol version (5004)."""
        # The key first: a client that is not authorized learns nothing else.
        self.authenticate(fields["auth_key"])
        version = fields["protocol_version"]
        if version != PROTOCOL_VERSION:
            raise TurnloomError(
                ErrorCode.ProtocolVersionMismatch,
                f"client speaks protocol version {version}, this server speaks {PROTOCOL_VERSION}",
            )
        self.configured = True
        self.configured_in_time()
        name = fields["client_name"]
        # Logged with every event of the session: a bounded quote, whatever the client sent.
        self.context["client"] = name[:64] if isinstance(name, str) else brief(name)
        return {"type": "Ack", "session_id": self.session_id, "protocol_version": version}

    def agent_room(self) -> None:
        """Refuse (2003) one more agent in a session that has its limit."""
        if len(self.agents) >= self.limits.max_agents_per_session:
            raise TurnloomError(
                ErrorCode.SessionLimitExceeded,
                f"this session already has {len(self.agents)} agents, its limit; destroy one first",
            )

    def create_agent(self, fields: dict[str, Any]) -> dict[str, Any]:
        """CreateAgent: compile the graph into a new agent of this session; a durable one
        (a server with a store only: 3007 otherwise) also gets a resume token."""
        token, tags = self.creation_checks(fields)
        core = self.engine_core.create_agent(
            graph_from_wire(fields["graph"]),
            self,
            enable_diagnostics=fields["enable_diagnostics"],
            max_steps_per_turn=fields["max_steps_per_turn"],
            tags=tags,
            durable=fields["durable"],
            input_policy=fields["input_policy"],
        )
        return self.created(core, token)

    def creation_checks(self, fields: dict[str, Any]) -> tuple[str | None, dict[str, str] | None]:
        """CreateAgent's checks before its graph is read (2003, 3007): the resume token of a
        durable agent and the tags that keep its digest (None, None for another agent)."""
        self.agent_room()
        steps = fields["max_steps_per_turn"]
        if isinstance(steps, int) and steps > self.limits.max_steps_per_turn:
            raise TurnloomError(
                ErrorCode.SessionLimitExceeded,
                f"max_steps_per_turn {steps} is over this server's limit of "
                f"{self.limits.max_steps_per_turn}",
            )
        durable = fields["durable"]
        if durable and self.engine_core.store is None:
            raise InvalidParamValue(
                "CreateAgent: durable agents need a server with a store (serve --store PATH)"
            )
        if not durable:
            return None, None
        token, token_digest = new_token()
        return token, {DIGEST_TAG: token_digest}

    def created(self, core: AgentCore, token: str | None) -> dict[str, Any]:
        """Take a new agent into the session: the CreateAgentResponse."""
        self.agents[core.agent_id] = core
        reply: dict[str, Any] = {"type": "CreateAgentResponse", "agent_id": core.agent_id}
        if token is not None:
            reply["resume_token"] = token
        return reply

    def attach_agent(self, fields: dict[str, Any]) -> dict[str, Any]:
        """AttachAgent: take over a durable agent, given its resume token; the reply is its
        current step, as GetAgentState gives it. Unknown agent or wrong token: the same 3001."""
        agent_id, token = fields["agent_id"], fields["resume_token"]
        core = self.engine_core.agents.get(agent_id)
        if core is None and self.engine_core.leases is not None:
            # A shared store: the agent may be stored, held by no worker (or by another one,
            # 3004 once the token is right). Taken, it is held by this worker from now on.
            self.agent_room()
            core = self.engine_core.take(agent_id, self, lambda plan: tags_open(plan.tags, token))
        if core is None or not token_opens(core, token):
            # One message either way: ids cannot be probed. The token is never in it.
            raise UnknownAgent(f"no durable agent {brief(agent_id)} opens with this resume token")
        if agent_id not in self.agents:
            self.agent_room()
            self.take_over(agent_id)
            self.agents[agent_id] = core
            self.destroyed.pop(agent_id, None)
        core.listener = self
        if isinstance(core, DurableAgentCore):
            core.release_at_rest = False  # held by this session now
        log.info("agent.attached", agent_id=agent_id, **self.context)
        return self.state_of(core)

    def destroy_agent(self, fields: dict[str, Any]) -> dict[str, Any]:
        """DestroyAgent: cancel its open turn and forget it."""
        core = self.agent(fields)
        core.destroy()
        del self.agents[core.agent_id]
        self.destroyed[core.agent_id] = None
        if len(self.destroyed) > self.limits.destroyed_ids_remembered:
            self.destroyed.popitem(last=False)
        return {"type": "Ack", "agent_id": core.agent_id}

    def send_message(self, fields: dict[str, Any]) -> dict[str, Any]:
        """SendMessage: start a turn."""
        core = self.agent(fields)
        if core.turn.state is TurnState.IDLE:  # else the engine's own refusal (3004) answers
            self.open_turn_refusal()
        busy = core.turn.state is not TurnState.IDLE
        queued = busy and core.input_policy is InputPolicy.ENQUEUE
        turn = core.send_message(fields["text"])
        if busy and not queued and isinstance(core, DurableAgentCore):
            # An interrupt or a merge: the cancelled turn's TurnComplete waits for its write,
            # and must reach the client before this Ack (its step is the new turn's).
            core.write_queued()
        if queued:  # its turn starts later: a NodeEvent message (fate started) says which
            return {"type": "Ack", "agent_id": core.agent_id, "turn_id": None, "queued": True}
        return {"type": "Ack", "agent_id": core.agent_id, "turn_id": turn.turn_id}

    def set_input_policy(self, fields: dict[str, Any]) -> dict[str, Any]:
        """SetInputPolicy: what a message does while the agent's turn is open."""
        core = self.agent(fields)
        core.set_input_policy(fields["input_policy"])
        return {"type": "Ack", "agent_id": core.agent_id}

    def resume(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ResumeAgent: resume the paused turn, plainly, by jump, or with tool results."""
        core = self.agent(fields)
        if core.turn.state is TurnState.PAUSED:  # else the engine's own refusal answers
            reason = self.quota.rate_refusal()
            if reason is not None:
                raise TurnloomError(ErrorCode.SessionLimitExceeded, reason)
        turn = core.resume(fields["resume_node"], fields["tool_results"])
        return {"type": "Ack", "agent_id": core.agent_id, "turn_id": turn.turn_id}

    def change_params(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ChangeAgentParam: a whole params object (with node_type) or some fields (without)."""
        core = self.agent(fields)
        node, node_type, values = fields["node_name"], fields["node_type"], fields["params"]
        if node_type:
            known_node_type(node, node_type)
            core.change_params(node, params_from_wire(node, node_type, values))
        else:
            core.change_params(node, values)
        return {"type": "Ack", "agent_id": core.agent_id}

    def get_params(self, fields: dict[str, Any]) -> dict[str, Any]:
        """GetAgentParam: a node's current params."""
        core = self.agent(fields)
        params = core.get_params(fields["node_name"])
        return {
            "type": "AgentParamResponse",
            "agent_id": core.agent_id,
            "node_name": fields["node_name"],
            "node_type": params.node_type,
            "params": params_to_mapping(params),
        }

    def get_state(self, fields: dict[str, Any]) -> dict[str, Any]:
        """GetAgentState: where the agent's turn stands, and its last completion."""
        return self.state_of(self.agent(fields))

    @staticmethod
    def state_of(core: AgentCore) -> dict[str, Any]:
        """The AgentStateResponse of an agent (a durable agent's rest still waiting for its
        grouped write is written first: no answer tells of a rest the store does not hold)."""
        if isinstance(core, DurableAgentCore):
            core.write_queued()
        turn = core.turn
        pause = turn.pause if turn.state is TurnState.PAUSED else None
        return {
            "type": "AgentStateResponse",
            "agent_id": core.agent_id,
            "state": turn.state.value,
            "turn_id": turn.turn_id or None,
            "pause": pause_to_wire(pause.info) if pause is not None else None,
            "last_result": result_to_wire(core.last_result) if core.last_result else None,
            "input_policy": core.input_policy.value,
        }

    def cancel(self, fields: dict[str, Any]) -> dict[str, Any]:
        """Cancel: end the open turn; `cancelled` is False when there was none."""
        core = self.agent(fields)
        return {"type": "Ack", "agent_id": core.agent_id, "cancelled": core.cancel()}

    def save_slot(self, fields: dict[str, Any]) -> dict[str, Any]:
        """SaveSlot: the agent into the server store's slot."""
        info = self.engine_core.save_slot(self.agent(fields), fields["slot"])
        return {"type": "Ack", "agent_id": info.agent_id, **slot_to_wire(info)}

    def load_slot(self, fields: dict[str, Any]) -> dict[str, Any]:
        """LoadSlot: a new agent of this session from a slot, or in place of one of its own."""
        replace = fields["replace_agent_id"]
        if replace is not None:
            # Checked before the lookup: a list cannot be looked up, and True would find agent 1.
            replace = checked_agent_id(replace, "LoadSlot", "replace_agent_id")
            self.agent({"agent_id": replace})  # only this session's agents can be replaced
        else:
            self.agent_room()
        core = self.engine_core.load_slot(
            fields["slot"], self, replace=replace, durable=False, operation="LoadSlot"
        )
        return self.adopted(core, replace)

    def fork_agent(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ForkAgent: a new agent of this session from one of its agents, or from a slot."""
        agent_id, slot = fields["agent_id"], fields["slot"]
        if (agent_id is None) == (slot is None):
            raise InvalidParamValue("ForkAgent: give either agent_id or slot")
        self.agent_room()
        if slot is not None:
            core = self.engine_core.load_slot(slot, self, durable=False, operation="ForkAgent")
        else:
            checked_agent_id(agent_id, "ForkAgent", "agent_id")  # True would find agent 1
            core = self.engine_core.fork(self.agent(fields), self, durable=False)
        return self.adopted(core, None)

    def adopted(self, core: AgentCore, replaced: int | None) -> dict[str, Any]:
        """A loaded or forked agent, taken into the session; the token digest of the durable
        agent it may come from is not its own."""
        core.tags = {k: v for k, v in core.tags.items() if k != DIGEST_TAG}
        if replaced is not None:
            self.agents.pop(replaced, None)
        return {**self.created(core, None), "input_policy": core.input_policy.value}

    def list_slots(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ListSlots: the server store's slots, newest first."""
        slots = self.engine_core.list_slots(fields["agent_id"], "ListSlots")
        return {"type": "SlotListResponse", "slots": [slot_to_wire(info) for info in slots]}

    def delete_slot(self, fields: dict[str, Any]) -> dict[str, Any]:
        """DeleteSlot: remove a slot; `deleted` is False when there was none."""
        deleted = self.engine_core.delete_slot(fields["slot"], "DeleteSlot")
        return {"type": "Ack", "deleted": deleted}

    def list_models(self, fields: dict[str, Any]) -> dict[str, Any]:
        """ListModels: the models graphs may name, sorted by name."""
        backends = self.engine_core.models
        models = [model_info_to_wire(model_info(backends[name])) for name in sorted(backends)]
        return {"type": "ModelListResponse", "models": models}


def known_node_type(node: Any, node_type: Any) -> None:
    """Refuse (3007) a ChangeAgentParam naming a node type that does not exist."""
    if node_type not in NODE_TYPES:
        raise InvalidParamValue(
            f"node {brief(node)}: unknown node type {brief(node_type)} "
            f"(known: {sorted(NODE_TYPES)})"
        )


Handler = Callable[[SessionRequests, dict[str, Any]], dict[str, Any]]

#: The handler of each request type.
HANDLERS: dict[str, Handler] = {
    "ConfigureSession": SessionRequests.configure,
    "CreateAgent": SessionRequests.create_agent,
    "AttachAgent": SessionRequests.attach_agent,
    "DestroyAgent": SessionRequests.destroy_agent,
    "SendMessage": SessionRequests.send_message,
    "ResumeAgent": SessionRequests.resume,
    "ChangeAgentParam": SessionRequests.change_params,
    "GetAgentParam": SessionRequests.get_params,
    "GetAgentState": SessionRequests.get_state,
    "Cancel": SessionRequests.cancel,
    "SetInputPolicy": SessionRequests.set_input_policy,
    "SaveSlot": SessionRequests.save_slot,
    "LoadSlot": SessionRequests.load_slot,
    "ForkAgent": SessionRequests.fork_agent,
    "ListSlots": SessionRequests.list_slots,
    "DeleteSlot": SessionRequests.delete_slot,
    "ListModels": SessionRequests.list_models,
}
