"""What a server and each of its sessions may hold, and where it may listen (R-W4)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..protocol.frames import MAX_FRAME_BYTES


@dataclass(frozen=True, slots=True)
class ServerLimits:
    """What one server and each of its sessions may hold; going over it is refused (2003)."""

    #: Open sessions (connections); one more is told 2003 and closed.
    max_sessions: int = 256
    #: Live agents per session; CreateAgent beyond it is 2003.
    max_agents_per_session: int = 1024
    #: Bytes of frames written but not yet taken by a client; beyond it the session is closed.
    max_outbox_bytes: int = 16 * MAX_FRAME_BYTES
    #: Highest `max_steps_per_turn` a client may ask for: nodes that need no model (a
    #: CannedResponse loop) run without yielding to the loop, so this bounds one turn's stall.
    max_steps_per_turn: int = 4096
    #: Largest frame body in either direction (5003).
    max_frame_bytes: int = MAX_FRAME_BYTES
    #: Destroyed agent ids remembered per session (3002 instead of 3001 for them).
    destroyed_ids_remembered: int = 1024
    #: How long a closing connection may take to flush before it is aborted.
    close_timeout_s: float = 5.0


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
