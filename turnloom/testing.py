"""For tests and offline demos: clocks (`VirtualClock` runs pause deadlines on virtual time) and
the scripted, deterministic `MockModel`. `VirtualClock` and `MockModel` are also top-level."""

from .engine.backends.mock import MockModel
from .engine.clock import Clock, LoopClock, VirtualClock

__all__ = ["Clock", "LoopClock", "MockModel", "VirtualClock"]
