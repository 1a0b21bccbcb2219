# -*- test-case-name: tests.test_state_identities -*-
"""
Client identities, whoever keeps them: how one is minted and which one a
request uses, the rules every identity store
(L{IIdentityStore<gophergem.interfaces.IIdentityStore>}) applies alike.  The
stores live in L{gophergem.state}.

An identity is minted here (L{mint_identity}: an EC P-256 key and a
self-signed certificate valid for one year) for one scope: a host, a port
and a path prefix ending in C{/}.  A request uses the identity with the
longest scope that covers it (L{Identity.covers}).  Private keys leave a
store only through C{credentials}; L{Identity} values carry neither keys
nor file names.
"""

from __future__ import annotations

import datetime
import secrets

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from gophergem.errors import CertificateExists
from gophergem.trust import Identity
from gophergem.trust.fingerprints import sha256_fingerprint
from gophergem.url import format_host

__all__ = [
    "VALIDITY_DAYS",
    "as_identity",
    "best_identity",
    "check_scope",
    "describe_scope",
    "exists_error",
    "mint_identity",
    "normalise_scope",
    "sorted_identities",
]

#: How long a minted certificate is valid.
VALIDITY_DAYS = 365

#: How far before "now" a minted certificate starts, for servers whose clock
#: runs behind ours.
_BACKDATE_SECONDS = 5 * 60


def normalise_scope(path: str) -> str:
    """
    Return the scope for C{path}: it starts and ends with C{/}, so that
    C{/app} and C{/app/} name the same scope and neither covers C{/apple}.
    """
    if not path.startswith("/"):
        path = "/" + path
    return path if path.endswith("/") else path + "/"


def describe_scope(host: str, port: int, scope: str) -> str:
    """The scope as a URL, for messages: C{gemini://host[:port]/path/}."""
    return f"gemini://{format_host(host, port, 1965)}{scope}"


def mint_identity(host: str, port: int, path: str, now: float) -> tuple[Identity, bytes, bytes]:
    """
    Make a new identity for a scope: an EC P-256 key and a self-signed
    certificate with an opaque random name (C{CN=gophergem-<8 hex>}), valid
    from five minutes before C{now} for L{VALIDITY_DAYS}.

    @return: The identity, its certificate (PEM) and its private key
        (unencrypted PKCS#8 PEM).
    """
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"gophergem-{secrets.token_hex(4)}")])
    start = int(now) - _BACKDATE_SECONDS
    utc = datetime.UTC
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(datetime.datetime.fromtimestamp(start, utc))
        .not_valid_after(datetime.datetime.fromtimestamp(int(now) + VALIDITY_DAYS * 86400, utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    identity = Identity(
        host=host,
        port=port,
        path=normalise_scope(path),
        fingerprint=sha256_fingerprint(certificate.public_bytes(serialization.Encoding.DER)),
        not_before=certificate.not_valid_before_utc.timestamp(),
        not_after=certificate.not_valid_after_utc.timestamp(),
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return identity, certificate.public_bytes(serialization.Encoding.PEM), key_pem


def check_scope(host: str, port: int) -> None:
    """
    Refuse a scope without a host or with a port outside 1-65535.

    @raise ValueError: When the host is empty or not text, or the port is
        out of range.
    """
    if not isinstance(host, str) or not host:
        raise ValueError("an identity needs a host")
    if type(port) is not int or not 0 < port < 65536:
        raise ValueError("an identity's port must be 1-65535")


def exists_error(identity: Identity) -> CertificateExists:
    """The error for creating an identity where C{identity} already is."""
    return CertificateExists(
        message=f"An identity for {describe_scope(identity.host, identity.port, identity.path)} "
        f"already exists ({identity.fingerprint}).",
        next_step="Use it as it is, or remove it (giving that fingerprint) and create a new one.",
    )


def best_identity(candidates: list[Identity], host: str, port: int, path: str) -> Identity | None:
    """The identity with the longest scope covering the request, or C{None}."""
    covering = [i for i in candidates if i.covers(host, port, path)]
    return max(covering, key=lambda i: len(i.path), default=None)


def as_identity(value: object) -> Identity:
    """
    C{value}, checked to be an L{Identity}.

    @raise TypeError: When it is not.
    """
    if not isinstance(value, Identity):
        raise TypeError(f"expected an Identity, not {type(value).__name__}")
    return value


def sorted_identities(identities: list[Identity]) -> list[Identity]:
    """C{identities} in the order every store lists them: by host, port and path."""
    return sorted(identities, key=lambda i: (i.host, i.port, i.path))
