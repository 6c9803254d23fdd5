"""Agent tags: a few short strings a host attaches to an agent when it creates it, kept in its
snapshots and in the store, so that after a restart the host can tell its agents apart
(`{"npc": "mira", "save": "slot-2"}`). The engine never reads them."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from ..support.guards import brief
from ..support.rejections import InvalidParamValue

#: Most tags an agent may have, and the longest key and value (characters).
MAX_TAGS = 64
MAX_TAG_KEY = 256
MAX_TAG_VALUE = 4096
#: The tags of an agent created without any (shared: agents are many).
NO_TAGS: Mapping[str, str] = MappingProxyType({})


def checked_tags(tags: Any, where: str) -> Mapping[str, str]:
    """`tags` as the agent keeps them (a private copy), or 3007 naming what is wrong."""
    if tags is None:
        return NO_TAGS
    if not isinstance(tags, Mapping):
        raise InvalidParamValue(f"{where}: tags must be a map of strings to strings")
    if len(tags) > MAX_TAGS:
        raise InvalidParamValue(f"{where}: {len(tags)} tags, over the limit of {MAX_TAGS}")
    for key, value in tags.items():
        if not isinstance(key, str) or not 0 < len(key) <= MAX_TAG_KEY:
            raise InvalidParamValue(
                f"{where}: tag key {brief(key)} must be a string of 1 … {MAX_TAG_KEY} characters"
            )
        if not isinstance(value, str) or len(value) > MAX_TAG_VALUE:
            raise InvalidParamValue(
                f"{where}: tag {key!r}: the value must be a string of at most {MAX_TAG_VALUE} "
                f"characters, got {brief(value)}"
            )
    return MappingProxyType(dict(tags)) if tags else NO_TAGS
