"""The server's TLS context, from PEM files, with the stdlib's secure defaults.

`ssl.create_default_context(Purpose.CLIENT_AUTH)` picks the protocol versions and ciphers
Python considers safe (TLS 1.2 and later); this module only adds the server's certificate
and, for mutual TLS, the CA that client certificates must chain to.
"""

from __future__ import annotations

import os
import ssl

#: A path to a PEM file.
PemPath = str | os.PathLike[str]


def server_context(cert: PemPath, key: PemPath, client_ca: PemPath | None = None) -> ssl.SSLContext:
    """A server-side context for the certificate chain `cert` and its private `key`.

    With `client_ca`, every client must present a certificate signed by that CA (mutual TLS);
    a client without one, or with another, fails the handshake and never gets a session.
    Raises OSError / ssl.SSLError when a file is missing or is not what it should be.
    """
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    if client_ca is not None:
        context.load_verify_locations(cafile=client_ca)
        context.verify_mode = ssl.CERT_REQUIRED
    return context
