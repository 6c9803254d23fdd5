"""The host API: one agent API with a blocking face (`Engine`) and an asyncio face
(`AsyncEngine`) over the same engine core."""

from .aio import AsyncAgent, AsyncEngine
from .sync import Agent, BlockingCallInCallback, Engine

__all__ = ["Agent", "AsyncAgent", "AsyncEngine", "BlockingCallInCallback", "Engine"]
