"""Bounded quoting of host-supplied values in messages, shared by every layer's rejections.

A rejection names the value that was wrong, but that value comes from a host or a frame: it may
be a megabyte string, a list of 40,000 ids, or a list nested thousands deep. `repr()` of it can
take seconds, overflow the frame that carries the error back, or raise `RecursionError` out of
the call that was only meant to refuse it. Messages therefore quote values with `brief` and
list ids with `some`, which are bounded in time and length and never raise.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from typing import Any

#: How many ids `some` lists before "… and N more".
LISTED_IDS = 16

_REPR = reprlib.Repr()
_REPR.maxlevel = 3
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlong = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 6


def brief(value: Any) -> str:
    """A short `repr` of `value`: at most ~100 characters, nesting shown to 3 levels."""
    try:
        return _REPR.repr(value)
    except Exception:  # a repr that raises: a broken __repr__, an int too long to print
        return f"<{type(value).__name__} object>"


def some(items: Iterable[Any], limit: int = LISTED_IDS) -> str:
    """`[a, b, …]` with at most `limit` items quoted by `brief`, then "and N more"."""
    shown: list[str] = []
    more = 0
    for item in items:
        if len(shown) < limit:
            shown.append(brief(item))
        else:
            more += 1
    listed = f"[{', '.join(shown)}]"
    return f"{listed} and {more} more" if more else listed
