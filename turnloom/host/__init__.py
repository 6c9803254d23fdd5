"""The faces a host app holds: one agent API with a blocking face (`Engine`, `Agent`) and an
asyncio face (`AsyncEngine`, `AsyncAgent`) over the engine core in process, and the same faces
over the wire (`connect`, `connect_async`: the client, its connection and loop thread).
May import `protocol`, `engine` and `states`."""

from .aio import AsyncAgent, AsyncEngine
from .client import AsyncRemoteEngine
from .loop_thread import BlockingCallInCallback
from .remote import RemoteEngine, connect, connect_async
from .sync import Agent, Engine

__all__ = [
    "Agent",
    "AsyncAgent",
    "AsyncEngine",
    "AsyncRemoteEngine",
    "BlockingCallInCallback",
    "Engine",
    "RemoteEngine",
    "connect",
    "connect_async",
]
