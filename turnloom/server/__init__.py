"""The asyncio TCP server (`Server`, one session per connection) and a server on a thread of
its own (`BackgroundServer`), serving an engine's agents over the wire protocol. May import
`host`, `protocol`, `engine` and `states`."""

from .auth import AuthKey
from .background import BackgroundServer
from .limits import ServerLimits, is_loopback
from .tcp import Server
from .tls import TLSFileError, server_context

__all__ = [
    "AuthKey",
    "BackgroundServer",
    "Server",
    "ServerLimits",
    "TLSFileError",
    "is_loopback",
    "server_context",
]
