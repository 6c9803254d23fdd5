"""Error codes and the rejection → code mapping; later: msgpack frames, server and client."""

from .errors import CODES, ErrorCode, TurnloomError, code_for, to_error

__all__ = ["CODES", "ErrorCode", "TurnloomError", "code_for", "to_error"]
