"""The package's C extensions; everything else is in pyproject.toml.

A durable agent's snapshot head is packed at every rest from a dozen pieces, in one C call
(turnloom/engine/durable/pieces.py), and a Redis store's write group goes out as one call packed
in C (turnloom/engine/durable/store/redis_writes.py). Both are optional: where they cannot be
built (no C compiler), the install goes on and the same bytes are made in Python.
"""

from setuptools import Extension, setup

#: What both extensions include: msgpack written into a growing buffer.
SHARED = "turnloom/engine/durable/_msgpack_write.h"

setup(
    ext_modules=[
        Extension(name, [f"{name.replace('.', '/')}.c"], depends=[SHARED], optional=True)
        for name in (
            "turnloom.engine.durable._packed_pieces",
            "turnloom.engine.durable.store._save_call",
        )
    ]
)
