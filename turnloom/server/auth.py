"""Client authentication: the server's API key, and how a session's key is checked against it.

A server started with a key requires it in `ConfigureSession.auth_key`; anything else is 2004
Unauthorized, and a connection is closed after `MAX_AUTH_FAILURES` refusals. The key comes from
a file or the `TURNLOOM_AUTH_KEY` environment variable, never from the command line (where
`ps` and shell histories show it to everyone).

Only a SHA-256 digest of the key is kept, and candidates are hashed the same way before
`hmac.compare_digest`: the comparison then takes the same time whatever the candidate's length
or content, and no object of the server holds the key itself, so no log line or repr can show
it.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ..engine.support.logs import get_logger

log = get_logger("turnloom.server")

#: The environment variable a server reads its key from when no key file is given.
ENV_VAR = "TURNLOOM_AUTH_KEY"
#: Shortest key accepted: anything shorter could be guessed (`secrets.token_urlsafe(32)` makes
#: a good one, 43 characters).
MIN_KEY_LENGTH = 16
#: Refused ConfigureSessions (wrong or missing key) after which the server closes the
#: connection: enough for a client to notice a typo, too few to make guessing worth a socket.
MAX_AUTH_FAILURES = 3


class AuthKey:
    """A server's API key, kept as a digest; `matches` compares a candidate in constant time."""

    __slots__ = ("_digest",)

    def __init__(self, key: str) -> None:
        if not isinstance(key, str):
            raise TypeError(f"an auth key is a str, got {type(key).__name__}")
        if len(key) < MIN_KEY_LENGTH:
            # The message says how long it must be, never what it is.
            raise ValueError(
                f"an auth key must be at least {MIN_KEY_LENGTH} characters "
                "(make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        self._digest = _digest(key)

    def matches(self, candidate: object) -> bool:
        """Whether `candidate` (any value a client sent) is the key."""
        if not isinstance(candidate, str):
            return False
        return hmac.compare_digest(_digest(candidate), self._digest)

    def __repr__(self) -> str:
        return "AuthKey(<hidden>)"


def _digest(text: str) -> bytes:
    # surrogatepass: any str a client could send hashes, none raises.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def refusal(key: AuthKey, candidate: object) -> str | None:
    """Why `candidate` does not authenticate a session (None when it does). The reason says
    which way it failed (missing, not a string, wrong), never what was sent."""
    if candidate is None:
        return "this server requires an auth_key in ConfigureSession"
    if not isinstance(candidate, str):
        return f"auth_key must be a string, got {type(candidate).__name__}"
    if not key.matches(candidate):
        return "auth_key is not this server's key"
    return None


def load_key_file(path: str | os.PathLike[str]) -> AuthKey:
    """The key in the file at `path` (surrounding whitespace, e.g. a final newline, ignored).

    OSError when it cannot be read, ValueError when it holds no usable key. A file other
    users may read is accepted with a warning.
    """
    file = Path(path)
    text = file.read_text(encoding="utf-8").strip()
    if os.name == "posix" and file.stat().st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "auth.key_file_readable",
            path=str(file),
            hint="other users can read the key file; chmod 600 it",
        )
    try:
        return AuthKey(text)
    except ValueError as error:
        raise ValueError(f"{file}: {error}") from None


def key_from_env(environ: Mapping[str, str] | None = None) -> AuthKey | None:
    """The key in `TURNLOOM_AUTH_KEY` (None when unset or empty); ValueError when too short."""
    text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if not text:
        return None
    try:
        return AuthKey(text)
    except ValueError as error:
        raise ValueError(f"{ENV_VAR}: {error}") from None
