"""Keeping the cyclic garbage collector off while a large structure is being built.

A structure of a million small containers (a big frame, the largest graph) built over many
steps would live through a few collections and be promoted until it set off a full pass over
the whole heap: 30-50 ms with nothing else able to run (the collector holds the GIL).

What such a build leaves behind to live on (an agent of 256 ToolCall nodes is 70,000-80,000
containers) would still be walked twice on its way to the oldest generation, by the first
young collection (5 ms) and the next middle one (7 ms), both on the engine loop. It is moved
there at once instead (`promote_young`).
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
            if CollectorPause._held == 0:
                promote_young()
                if CollectorPause._resume:
                    gc.enable()

    def __del__(self) -> None:
        # A pause dropped unreleased (its loop closed mid-frame) must not leave the collector
        # off for good.
        self.release()


def promote_young() -> None:
    """Move every object in the collector's young generations to the oldest one, unwalked.

    `gc.freeze()` moves the tracked objects to the permanent generation and `gc.unfreeze()`
    moves them back into the oldest; each is a splice of lists, not a pass over the objects.
    Nothing is exempt from collection afterwards: the oldest generation is walked by every
    full pass. Skipped if the host has frozen objects itself (`gc.freeze()` before a fork, say):
    unfreezing would give its objects back to the collector.
    """
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()
