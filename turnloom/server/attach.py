"""Agents that outlive a connection: the secret that lets a later session attach (see
docs/reference/durability.md#attach-with-a-token).

A durable agent created over the wire gets a resume token (`secrets.token_urlsafe(32)`), sent
once, in its `CreateAgentResponse`. The server keeps only the token's SHA-256 digest, in one of
the agent's tags, so the digest is in every snapshot the store holds and survives a restart;
the token itself is never kept, logged or echoed. `AttachAgent` compares digests with
`hmac.compare_digest`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

from ..engine.durable.agent import DurableAgentCore
from ..engine.turns.agent import AgentCore
from ..engine.turns.results import AgentListener

#: The tag that holds the digest of a durable agent's resume token.
DIGEST_TAG = "turnloom.resume_token_sha256"
#: Longer candidates are not even hashed: no token is this long.
MAX_TOKEN_CHARS = 256
#: The listener of a durable agent no session holds: its events go nowhere until an attach.
DETACHED = AgentListener()


def digest(token: str) -> str:
    """The hex SHA-256 of a token."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token() -> tuple[str, str]:
    """A fresh resume token and its digest."""
    token = secrets.token_urlsafe(32)
    return token, digest(token)


def attachable(core: AgentCore | None) -> bool:
    """Whether `core` is a live durable agent made over the wire (it has a token digest)."""
    return (
        isinstance(core, DurableAgentCore)
        and not core.destroyed
        and bool(core.tags.get(DIGEST_TAG))
    )


def token_opens(core: AgentCore | None, candidate: object) -> bool:
    """Whether `candidate` is the resume token of `core` (False for anything not attachable)."""
    if core is None or not attachable(core):
        return tags_open(None, candidate)  # the same work either way: ids cannot be timed
    return tags_open(core.tags, candidate)


def tags_open(tags: Mapping[str, str] | None, candidate: object) -> bool:
    """Whether `candidate` is the resume token whose digest `tags` hold (a stored agent's
    tags, before it is restored; None: nothing opens)."""
    if not isinstance(candidate, str) or len(candidate) > MAX_TOKEN_CHARS:
        return False
    offered = digest(candidate)
    if not tags or not tags.get(DIGEST_TAG):
        return False
    return hmac.compare_digest(offered, tags[DIGEST_TAG])
