"""The served backend's error, importable without its HTTP dependencies."""

from __future__ import annotations

from ...support.extras import install_hint


class ServedModelError(RuntimeError):
    """A serving engine was unreachable, refused a request or broke its stream (→ 4001)."""


def require_http() -> None:
    """ModuleNotFoundError naming the extra to install when the HTTP libraries are missing."""
    for module in ("httpx", "httpx_sse"):
        try:
            __import__(module)
        except ImportError:
            raise ModuleNotFoundError(
                f"ServedModel needs {module}: {install_hint('served')}", name=module
            ) from None
