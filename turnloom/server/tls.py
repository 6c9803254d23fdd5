"""The server's TLS context, from PEM files, with the stdlib's secure defaults.

`ssl.create_default_context(Purpose.CLIENT_AUTH)` picks the protocol versions and ciphers
Python considers safe (TLS 1.2 and later); this module only adds the server's certificate
and, for mutual TLS, the CA that client certificates must chain to. A file that cannot serve
is refused with a `TLSFileError` naming it and what is wrong with it (OpenSSL alone says
"PEM lib" and names no file).
"""

from __future__ import annotations

import os
import ssl
from typing import NoReturn

#: A path to a PEM file.
PemPath = str | os.PathLike[str]

#: What each of the three files is, as the messages name it.
ROLES = {"cert": "certificate", "key": "private key", "client_ca": "client CA"}

#: Bigger than any certificate chain or key: a file over this is not one (and is not read).
MAX_PEM_BYTES = 1024 * 1024

_CERT_BLOCK = b"-----BEGIN CERTIFICATE-----"
_KEY_BLOCK = b"PRIVATE KEY-----"
#: OpenSSL's reasons for refusing a certificate (not its key) at its security level.
_WEAK_CERT = frozenset({"EE_KEY_TOO_SMALL", "CA_KEY_TOO_SMALL", "CA_MD_TOO_WEAK"})


class TLSFileError(ValueError):
    """A TLS file that cannot be used: `role` ('cert', 'key' or 'client_ca'), its `path`, and
    `reason`, what is wrong with it ("no such file", "does not match the certificate ...")."""

    def __init__(self, role: str, path: PemPath, reason: str) -> None:
        self.role = role
        self.path = os.fspath(path)
        self.reason = reason
        super().__init__(f"TLS {ROLES[role]} {self.path!r}: {reason}")


def server_context(cert: PemPath, key: PemPath, client_ca: PemPath | None = None) -> ssl.SSLContext:
    """A server-side context for the certificate chain `cert` and its private `key`.

    With `client_ca`, every client must present a certificate signed by that CA (mutual TLS);
    a client without one, or with another, fails the handshake and never gets a session.
    Raises `TLSFileError` naming the file that is missing, unreadable, not a PEM certificate
    (or key), an encrypted key, or a key that does not match the certificate.
    """
    _check_certificates("cert", cert)
    key_text = _read("key", key)
    if _KEY_BLOCK not in key_text:
        swapped = _CERT_BLOCK in key_text
        hint = " (it holds a certificate: are the certificate and key swapped?)" if swapped else ""
        raise TLSFileError(
            "key", key, f"not a PEM private key: no '-----BEGIN ... PRIVATE KEY-----' line{hint}"
        )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2

    def no_passphrase() -> NoReturn:
        # Without a callback OpenSSL would prompt on the terminal, and a server has none.
        raise TLSFileError("key", key, "encrypted with a passphrase; give an unencrypted key")

    try:
        context.load_cert_chain(cert, key, password=no_passphrase)
    except ssl.SSLError as error:
        if error.reason == "KEY_VALUES_MISMATCH":
            raise TLSFileError(
                "key", key, f"does not match the certificate {os.fspath(cert)!r}"
            ) from None
        if error.reason in _WEAK_CERT:
            raise TLSFileError("cert", cert, f"too weak to serve ({_said(error)})") from None
        raise TLSFileError("key", key, f"not a valid PEM private key ({_said(error)})") from None
    except OSError as error:  # the file changed since it was read
        raise TLSFileError("key", key, _os_reason(error)) from None
    if client_ca is not None:
        _check_certificates("client_ca", client_ca)
        context.load_verify_locations(cafile=client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context


def _read(role: str, path: PemPath) -> bytes:
    """The file's bytes, or the `TLSFileError` of why they cannot be read."""
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_PEM_BYTES + 1)
    except OSError as error:
        raise TLSFileError(role, path, _os_reason(error)) from None
    if len(data) > MAX_PEM_BYTES:
        raise TLSFileError(role, path, f"over {MAX_PEM_BYTES} bytes: not a PEM file")
    return data


def _check_certificates(role: str, path: PemPath) -> None:
    """Refuse a file that holds no PEM certificate OpenSSL can read."""
    text = _read(role, path)
    if _CERT_BLOCK not in text:
        swapped = role == "cert" and _KEY_BLOCK in text
        hint = " (it holds a private key: are the certificate and key swapped?)" if swapped else ""
        raise TLSFileError(
            role, path, f"not a PEM certificate: no '-----BEGIN CERTIFICATE-----' line{hint}"
        )
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cafile=path)
    except ssl.SSLError as error:
        raise TLSFileError(
            role, path, f"a certificate in it does not parse ({_said(error)})"
        ) from None
    except OSError as error:
        raise TLSFileError(role, path, _os_reason(error)) from None


def _os_reason(error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, IsADirectoryError):
        return "a directory, not a file"
    if isinstance(error, PermissionError):
        return "not readable (permission denied)"
    return f"cannot be read ({error.strerror or error})"


def _said(error: ssl.SSLError) -> str:
    """OpenSSL's own words, without CPython's source location."""
    text = error.reason or (str(error.args[-1]) if error.args else str(error))
    return "OpenSSL: " + text.split(" (_ssl.c:")[0]
