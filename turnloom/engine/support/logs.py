"""turnloom's loggers: structured events that stay silent until the host app configures logging.

Every module logs through `get_logger(name)`, with an event name and key=value context
(`agent_id`, `turn_id`, `node`). Where an event goes is decided per call, by the host:

* If the app has configured structlog (`structlog.configure`, i.e. `structlog.is_configured()`),
  the event follows that configuration like any structlog logger's: the app chose structlog,
  so its processors, level filter and output apply (and `structlog.testing.capture_logs` sees
  it).
* Otherwise the event goes to the stdlib `logging` logger `name` (always under `turnloom`), so
  the app's `logging` configuration decides. The record's `msg` is a dict of the event (a
  handler can read its keys); its text is `event key=value ...`.

turnloom never configures structlog or the root logger. The `turnloom` logger gets only a
`NullHandler`, as the logging HOWTO asks of libraries: without it an app that configured no
logging at all would get turnloom's warnings on stderr from stdlib's last-resort handler.
"""

from __future__ import annotations

import logging
from typing import Any

import structlog

__all__ = ["ROOT_LOGGER", "Logger", "get_logger"]

#: The stdlib logger every turnloom logger sits under (set its level to tune them all).
ROOT_LOGGER = "turnloom"

logging.getLogger(ROOT_LOGGER).addHandler(logging.NullHandler())

# Bound once: these run on every log call of every turn.
_is_configured = structlog.is_configured
_DEBUG, _INFO, _WARNING, _ERROR = logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR
_AMBIGUOUS = frozenset(" ='\"")


def _text(value: Any) -> str:
    # Plain words stay bare; a string that could be misread (empty, spaces, quotes, '=') and
    # any other value are shown as their repr.
    if isinstance(value, str) and value.isprintable() and value and not _AMBIGUOUS & set(value):
        return value
    return repr(value)


class _Event(dict[str, Any]):
    """A log record's `msg`: the event as a dict, shown as `event key=value ...`."""

    __slots__ = ()

    def __str__(self) -> str:
        parts = [str(self.get("event", ""))]
        parts.extend(f"{key}={_text(value)}" for key, value in self.items() if key != "event")
        return " ".join(parts)


class Logger:
    """A module's logger: `log.debug("turn.started", agent_id=1, turn_id=3)`."""

    __slots__ = ("_std", "_structlog", "name")

    def __init__(self, name: str) -> None:
        if name != ROOT_LOGGER and not name.startswith(ROOT_LOGGER + "."):
            raise ValueError(f"turnloom's loggers live under '{ROOT_LOGGER}', got '{name}'")
        self.name = name
        self._std = logging.getLogger(name)
        self._structlog = structlog.get_logger(name)

    def _emit(self, level: int, event: str, context: dict[str, Any], exc_info: Any) -> None:
        record = _Event(event=event)
        record.update(context)
        # stacklevel 3: the record names the module that logged, not this file.
        self._std.log(level, record, exc_info=exc_info, stacklevel=3)

    def debug_on(self) -> bool:
        """Whether `debug` would log anything: a hot path asks first, so that it builds the
        event's fields only then (four routine events a turn)."""
        return _is_configured() or self._std.isEnabledFor(_DEBUG)

    def debug(self, event: str, **context: Any) -> None:
        """Log a routine event (every turn logs a few): hidden unless the host asks."""
        if _is_configured():
            self._structlog.debug(event, **context)
        elif self._std.isEnabledFor(_DEBUG):
            self._emit(_DEBUG, event, context, context.pop("exc_info", None))

    def info(self, event: str, **context: Any) -> None:
        """Log an event worth knowing about in normal operation."""
        if _is_configured():
            self._structlog.info(event, **context)
        elif self._std.isEnabledFor(_INFO):
            self._emit(_INFO, event, context, context.pop("exc_info", None))

    def warning(self, event: str, **context: Any) -> None:
        """Log something the host probably wants to fix (a pause nobody attends, ...)."""
        if _is_configured():
            self._structlog.warning(event, **context)
        elif self._std.isEnabledFor(_WARNING):
            self._emit(_WARNING, event, context, context.pop("exc_info", None))

    def error(self, event: str, **context: Any) -> None:
        """Log a failure turnloom could not handle itself."""
        if _is_configured():
            self._structlog.error(event, **context)
        elif self._std.isEnabledFor(_ERROR):
            self._emit(_ERROR, event, context, context.pop("exc_info", None))

    def exception(self, event: str, **context: Any) -> None:
        """Log an error with the exception being handled (call it from an `except` block)."""
        if _is_configured():
            self._structlog.exception(event, **context)
        elif self._std.isEnabledFor(_ERROR):
            self._emit(_ERROR, event, context, context.pop("exc_info", True))


def get_logger(name: str) -> Logger:
    """The logger a turnloom module logs through (`name` under `turnloom`, e.g.
    `turnloom.turn`); see the module docstring for where its events go."""
    return Logger(name)
