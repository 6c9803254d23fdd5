"""Throwaway certificates for the TLS tests, made at run time with `cryptography`.

A test CA signs a server certificate (for `localhost` and 127.0.0.1) and a client certificate;
a second, untrusted CA signs a rogue client certificate. EC P-256 keys: quick to make.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pem:
    """A certificate and its key, as PEM files."""

    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    """Everything the TLS tests need, as files in one folder."""

    ca: Path
    server: Pem
    client: Pem
    rogue_ca: Path
    rogue_client: Pem

    def client_context(self, identity: Pem | None = None) -> ssl.SSLContext:
        """A client context trusting the test CA, presenting `identity` if given."""
        context = ssl.create_default_context(cafile=str(self.ca))
        if identity is not None:
            context.load_cert_chain(str(identity.cert), str(identity.key))
        return context


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write(folder: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey) -> Pem:
    cert_path, key_path = folder / f"{stem}.crt", folder / f"{stem}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return Pem(cert_path, key_path)


def _builder(
    subject: str, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _ca(folder: Path, name: str) -> tuple[Pem, x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(name, _name(name), key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return _write(folder, name, cert, key), cert, key


def _leaf(
    folder: Path,
    stem: str,
    ca_cert: x509.Certificate,
    ca_key: ec.EllipticCurvePrivateKey,
    *,
    server: bool,
) -> Pem:
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (
        _builder(stem, ca_cert.subject, key.public_key())
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False
        )
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            critical=False,
        )
    return _write(folder, stem, builder.sign(ca_key, hashes.SHA256()), key)


def encrypted_copy(key: Path, out: Path, passphrase: bytes = b"secret") -> Path:
    """`key` written again to `out`, encrypted with `passphrase`."""
    loaded = serialization.load_pem_private_key(key.read_bytes(), password=None)
    out.write_bytes(
        loaded.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(passphrase),
        )
    )
    return out


def make_pki(folder: Path) -> Pki:
    """Make a test CA, its server and client certificates, and a rogue CA's client."""
    ca, ca_cert, ca_key = _ca(folder, "test-ca")
    rogue_ca, rogue_cert, rogue_key = _ca(folder, "rogue-ca")
    return Pki(
        ca=ca.cert,
        server=_leaf(folder, "server", ca_cert, ca_key, server=True),
        client=_leaf(folder, "client", ca_cert, ca_key, server=False),
        rogue_ca=rogue_ca.cert,
        rogue_client=_leaf(folder, "rogue-client", rogue_cert, rogue_key, server=False),
    )
