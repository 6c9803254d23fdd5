"""What a server and each of its sessions may hold and spend, and where it may listen."""

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
    #: Turns open (running, paused or resuming) at once per session; SendMessage beyond it
    #: is 2003. 0 = no quota (each agent has at most one open turn anyway).
    max_open_turns_per_session: int = 0
    #: Generations (Generate and ToolCall inferences) per session in any 60 s; 0 = no quota.
    generations_per_minute: int = 0
    #: Tokens generated per session in any 60 s; 0 = no quota.
    tokens_per_minute: int = 0
    #: How long a TLS client may take to complete its handshake before it is dropped.
    tls_handshake_timeout_s: float = 10.0
    #: With an auth key, how long a session may stay unconfigured (unauthenticated) before it
    #: is closed: idle connections that never authenticate cannot hold the session slots.
    configure_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        for name, least in (
            ("max_open_turns_per_session", 0),
            ("generations_per_minute", 0),
            ("tokens_per_minute", 0),
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"ServerLimits.{name} must be an int >= {least}, got {value!r}")
        for name in ("tls_handshake_timeout_s", "configure_timeout_s"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"ServerLimits.{name} must be a number > 0, got {value!r}")


def is_loopback(host: str) -> bool:
    """Whether `host` names only this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
