"""The wire side: error codes and the rejection → code table (`errors`), msgpack frames
(`frames`), the message catalog (`messages`, `records`, `graph_codec`), the asyncio server
(`server`, `session`, `background`) and the Python client (`connection`, `client`).

Only the error names are imported here, so the host layer can use them without pulling in
the server or the client.
"""

from .errors import CODES, ErrorCode, TurnloomError, code_for, to_error

__all__ = ["CODES", "ErrorCode", "TurnloomError", "code_for", "to_error"]
