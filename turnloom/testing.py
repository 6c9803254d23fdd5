"""For tests and offline demos: clocks (`VirtualClock` runs pause deadlines on virtual time) and
the scripted, deterministic `MockModel`. `VirtualClock` and `MockModel` are also top-level."""

from .engine.inference.mock import MockModel
from .engine.support.clock import Clock, LoopClock, VirtualClock

__all__ = ["Clock", "LoopClock", "MockModel", "VirtualClock"]
