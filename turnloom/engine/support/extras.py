"""What to run when an optional dependency is missing.

turnloom is installed from a checkout (it is on no package index), so the hint names the
checkout's command for the extra, not a package index install.
"""

from __future__ import annotations


def install_hint(extra: str) -> str:
    """The command that installs the packages of turnloom's extra `extra`."""
    return f"pip install -e '.[{extra}]' in a turnloom checkout (make test installs every extra)"
