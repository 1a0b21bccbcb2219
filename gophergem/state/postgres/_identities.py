# -*- test-case-name: tests.test_state_identities -*-
"""
L{PostgresIdentityStore}: client identities in PostgreSQL, one row per
(principal, host, port, path), with the semantics of the file store
(L{gophergem.state.files.identities}) and the rules of
L{gophergem.trust.identities}; every method returns a L{Deferred}.

The certificate is kept in clear (it is sent to servers anyway); the
private key is sealed with AES-256-GCM under the database key, a fresh
96-bit nonce per row, and the row's own identity as associated data, so a
sealed key copied into another row, principal or scope does not open.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

import attrs
from cryptography import x509
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from twisted.internet.defer import Deferred, fail
from twisted.logger import Logger
from zope.interface import implementer

from gophergem.errors import CertificateStoreUnavailable, StateUnavailable
from gophergem.interfaces import IIdentityStore
from gophergem.trust import Identity
from gophergem.trust.fingerprints import sha256_fingerprint
from gophergem.trust.identities import (
    as_identity,
    best_identity,
    check_scope,
    exists_error,
    mint_identity,
    normalise_scope,
    sorted_identities,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    from gophergem.state.postgres._runner import Runner

__all__ = ["PostgresIdentityStore", "seal", "unseal"]

log = Logger(namespace="gophergem.state.postgres")

_COLUMNS = "host, port, path, fingerprint, not_before, not_after"


def _associated(principal: str, host: str, port: int, path: str) -> bytes:
    """The associated data binding a sealed key to its row (unambiguous: JSON)."""
    return json.dumps([principal, host, port, path], separators=(",", ":")).encode()


def seal(
    key: bytes, principal: str, host: str, port: int, path: str, secret: bytes
) -> tuple[bytes, bytes]:
    """Encrypt C{secret} for its row; return C{(nonce, ciphertext)}."""
    nonce = os.urandom(12)
    return nonce, AESGCM(key).encrypt(nonce, secret, _associated(principal, host, port, path))


def unseal(
    key: bytes, principal: str, host: str, port: int, path: str, nonce: bytes, sealed: bytes
) -> bytes:
    """
    Decrypt a sealed key of its row.

    @raise StateUnavailable: When the database key does not open it (another
        key, or a row altered or moved).
    """
    try:
        return AESGCM(key).decrypt(nonce, sealed, _associated(principal, host, port, path))
    except InvalidTag:
        raise StateUnavailable(
            message="The database key does not decrypt the stored private keys.",
            next_step="Give every replica the same GOPHERGEM_DATABASE_KEY_FILE the keys were "
            "stored with.",
            temporary=False,
        ) from None


def _decode(row: tuple[Any, ...]) -> Identity:
    host, port, path, fingerprint, not_before, not_after = row
    return Identity(
        host=host,
        port=port,
        path=path,
        fingerprint=fingerprint,
        not_before=not_before,
        not_after=not_after,
    )


@implementer(IIdentityStore)
@attrs.frozen
class PostgresIdentityStore:
    """
    The identities of one principal (C{''}: the local owner) in PostgreSQL.

    L{create} mints the key, seals it and inserts the row in one statement
    that does nothing when the scope exists (then it reports the existing
    identity as L{CertificateExists}); nothing is ever half-written.
    """

    _runner: Runner
    _key: bytes = attrs.field(repr=False)
    principal: str = ""

    def find(self, host: str, port: int, path: str) -> Deferred[Identity | None]:
        """The identity with the longest scope covering the request, or C{None}."""

        async def work(connection: AsyncConnection[Any]) -> Identity | None:
            cursor = await connection.execute(
                f"SELECT {_COLUMNS} FROM gophergem_identities"
                " WHERE principal = %s AND host = %s AND port = %s",
                (self.principal, host, port),
            )
            return best_identity(
                [_decode(row) for row in await cursor.fetchall()], host, port, path
            )

        return self._runner.call(work)

    def create(self, host: str, port: int, path: str, now: float) -> Deferred[Identity]:
        """
        Mint and store an identity for the scope.  The Deferred fails with
        L{CertificateExists} when that exact scope has one already.
        """
        try:
            check_scope(host, port)
            scope = normalise_scope(path)
            identity, cert_pem, key_pem = mint_identity(host, port, scope, now)
        except (TypeError, ValueError) as e:
            return fail(e)
        nonce, sealed = seal(self._key, self.principal, host, port, scope, key_pem)

        async def work(connection: AsyncConnection[Any]) -> Identity:
            cursor = await connection.execute(
                f"INSERT INTO gophergem_identities (principal, {_COLUMNS},"
                " certificate_pem, key_nonce, key_sealed, created)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (principal, host, port, path) DO NOTHING RETURNING port",
                (
                    self.principal,
                    host,
                    port,
                    scope,
                    identity.fingerprint,
                    identity.not_before,
                    identity.not_after,
                    cert_pem.decode("ascii"),
                    nonce,
                    sealed,
                    float(now),
                ),
            )
            if await cursor.fetchone() is not None:
                return identity
            cursor = await connection.execute(
                f"SELECT {_COLUMNS} FROM gophergem_identities"
                " WHERE principal = %s AND host = %s AND port = %s AND path = %s",
                (self.principal, host, port, scope),
            )
            row = await cursor.fetchone()
            if row is None:  # removed in between: the caller may try again
                raise StateUnavailable(
                    message="Another process changed that identity meanwhile.", temporary=True
                )
            raise exists_error(_decode(row))

        return self._runner.call(work)

    def remove(self, host: str, port: int, path: str) -> Deferred[bool]:
        """Delete the identity of exactly that scope; fire with whether there was one."""
        scope = normalise_scope(path)

        async def work(connection: AsyncConnection[Any]) -> bool:
            cursor = await connection.execute(
                "DELETE FROM gophergem_identities"
                " WHERE principal = %s AND host = %s AND port = %s AND path = %s",
                (self.principal, host, port, scope),
            )
            return cursor.rowcount > 0

        return self._runner.call(work)

    def all(self, host: str | None = None) -> Deferred[list[Identity]]:
        """Every identity (for C{host} only, when given), by host, port and path."""

        async def work(connection: AsyncConnection[Any]) -> list[Identity]:
            if host is None:
                cursor = await connection.execute(
                    f"SELECT {_COLUMNS} FROM gophergem_identities WHERE principal = %s",
                    (self.principal,),
                )
            else:
                cursor = await connection.execute(
                    f"SELECT {_COLUMNS} FROM gophergem_identities"
                    " WHERE principal = %s AND host = %s",
                    (self.principal, host),
                )
            return sorted_identities([_decode(row) for row in await cursor.fetchall()])

        return self._runner.call(work)

    def credentials(self, identity: Identity) -> Deferred[tuple[bytes, bytes]]:
        """
        Fire with C{(certificate_pem, private_key_pem)} for C{identity}; fail
        with L{CertificateStoreUnavailable} when it is no longer stored (or
        was replaced), and L{StateUnavailable} when the database key does
        not open its private key.
        """
        try:
            identity = as_identity(identity)
        except TypeError as e:
            return fail(e)

        async def work(connection: AsyncConnection[Any]) -> tuple[bytes, bytes, bytes]:
            cursor = await connection.execute(
                "SELECT fingerprint, certificate_pem, key_nonce, key_sealed"
                " FROM gophergem_identities"
                " WHERE principal = %s AND host = %s AND port = %s AND path = %s",
                (self.principal, identity.host, identity.port, identity.path),
            )
            row = await cursor.fetchone()
            if row is None or row[0] != identity.fingerprint:
                raise CertificateStoreUnavailable(
                    message="That identity is no longer in the client identity store.",
                    next_step="List the identities again; it may have been removed or "
                    "replaced by another process.",
                )
            return row[1].encode("ascii"), bytes(row[2]), bytes(row[3])

        def opened(found: tuple[bytes, bytes, bytes]) -> tuple[bytes, bytes]:
            cert_pem, nonce, sealed = found
            try:
                der = x509.load_pem_x509_certificate(cert_pem).public_bytes(
                    serialization.Encoding.DER
                )
            except ValueError:
                der = b""
            if sha256_fingerprint(der) != identity.fingerprint:
                log.error("A stored certificate does not match its identity's fingerprint")
                raise CertificateStoreUnavailable(
                    message="The client identity store holds a damaged certificate for that "
                    "identity.",
                    next_step="Remove the identity and create a new one.",
                )
            key_pem = unseal(
                self._key,
                self.principal,
                identity.host,
                identity.port,
                identity.path,
                nonce,
                sealed,
            )
            return cert_pem, key_pem

        return self._runner.call(work).addCallback(opened)
