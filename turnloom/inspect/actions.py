"""What the page can do to a turn: resume (plainly or by a jump), change a mutable param,
cancel. Each is the agent's own operation, so the turn machine decides whether it is legal and
a refusal carries the same code and message as through the API (the engine's observers hear of
it as of any other refusal)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..engine.support.rejections import InvalidParamValue
from ..protocol.codes import rejected, too_deep
from ..protocol.errors import ErrorCode
from ..states import Rejection


def _refusal(code: int, message: str) -> dict[str, Any]:
    return {"ok": False, "code": code, "name": ErrorCode(code).name, "message": message}


def act(engine: Any, agent_id: Any, action: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """Do `action` ('resume', 'params' or 'cancel') on the agent, on the engine loop; the reply
    says whether it was done, or the refusal's code and message."""
    operation = {"resume": "resume", "params": "change_params", "cancel": "cancel"}[action]
    try:
        agent = engine.agent(agent_id)
        if action == "resume":
            results = body.get("tool_results") or ()
            agent.resume(str(body.get("resume_node") or ""), list(results))
            return {"ok": True}
        if action == "cancel":
            return {"ok": True, "cancelled": agent.cancel()}
        node = body.get("node")
        values = body.get("values")
        if not isinstance(values, Mapping):
            raise InvalidParamValue(f"agent {agent_id}: change_params: values must be a mapping")
        agent.change_params(node, _nested(values))
        return {"ok": True}
    except Rejection as rejection:
        error = rejected(operation, agent_id, rejection, engine.observers)
        return _refusal(int(error.code), error.message)
    except RecursionError:
        error = too_deep(operation)
        return _refusal(int(error.code), error.message)


def _nested(values: Mapping[str, Any]) -> dict[str, Any]:
    """The form's flat names ('sampling.temperature') as the nested mapping params take."""
    nested: dict[str, Any] = {}
    for name, value in values.items():
        head, dot, rest = str(name).partition(".")
        if dot:
            inner = nested.setdefault(head, {})
            if isinstance(inner, dict):
                inner[rest] = value
        else:
            nested[head] = value
    return nested
