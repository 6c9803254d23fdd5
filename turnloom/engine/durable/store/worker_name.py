"""Names of the workers that share a store, and telling a dead local worker from a live one.

A worker's name is `HOST:PID:RANDOM`. HOST is a digest of the machine's hostname, boot id and
pid namespace, so two names with the same HOST are processes whose pids mean the same thing.
A worker that was `kill -9`'d keeps its lease in the store until the lease expires; a worker on
the same HOST can see at once that the pid is gone and end that lease early, so a restart on
the same machine takes its agents back without waiting out the lease.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
from pathlib import Path


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


#: This process's HOST part (see the module's docstring).
HOST = hashlib.sha256(
    "\0".join(
        (socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), _pid_namespace())
    ).encode()
).hexdigest()[:16]


def new_worker_name() -> str:
    """A fresh name for one worker of this process."""
    return f"{HOST}:{os.getpid()}:{secrets.token_hex(4)}"


def is_dead_local(name: str) -> bool:
    """Whether `name` is a worker of a process on this machine that no longer runs (a zombie
    counts as gone). False whenever that cannot be known for sure."""
    host, _, rest = name.partition(":")
    pid_text = rest.partition(":")[0]
    if host != HOST or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # exists, but not ours to signal
        return False
    # A killed child its parent has not waited for yet is a zombie: gone, but still listed.
    stat = _read(f"/proc/{pid}/stat")
    return stat.rpartition(")")[2].split()[:1] == ["Z"]
