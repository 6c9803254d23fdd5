"""The asyncio TCP server (`Server`, one session per connection) and a server on a thread of
its own (`BackgroundServer`), serving an engine's agents over the wire protocol."""

from .background import BackgroundServer
from .limits import ServerLimits, is_loopback
from .tcp import Server

__all__ = ["BackgroundServer", "Server", "ServerLimits", "is_loopback"]
