"""Keeping the cyclic garbage collector off while a large structure is being built.

A structure of a million small containers (a big frame, the largest graph) built over many
steps would live through a few collections and be promoted until it set off a full pass over
the whole heap: 30-50 ms with nothing else able to run (the collector holds the GIL).
"""

from __future__ import annotations

import gc
import threading


class CollectorPause:
    """The cyclic collector stays off while any `CollectorPause` is held (released, or freed).

    A large frame's containers would otherwise live through a few collections while it is
    decoded, answered and freed over many loop iterations, and so be promoted until they set
    off a full pass over the whole heap (30-50 ms measured, longer as the heap grows). Held
    from the first slice until the frame is freed, no pass ever sees them: what they add to the
    collector's count, their freeing takes back off.
    """

    _lock = threading.Lock()
    _held = 0
    _resume = False

    def __init__(self) -> None:
        with self._lock:
            if CollectorPause._held == 0:
                CollectorPause._resume = gc.isenabled()
                gc.disable()
            CollectorPause._held += 1
        self._holding = True

    def release(self) -> None:
        """Let the collector run again, once no other pause holds it."""
        with self._lock:
            if not self._holding:
                return
            self._holding = False
            CollectorPause._held -= 1
            if CollectorPause._held == 0 and CollectorPause._resume:
                gc.enable()

    def __del__(self) -> None:
        # A pause dropped unreleased (its loop closed mid-frame) must not leave the collector
        # off for good.
        self.release()
