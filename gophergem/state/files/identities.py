# -*- test-case-name: tests.test_state_identities -*-
"""
L{FileIdentityStore}: client identities (L{IIdentityStore}) in a private
directory shared safely by several processes.

It mints, scopes and chooses identities by the rules of
L{gophergem.trust.identities}, like every other identity store, so one
contract test (C{tests/test_state_identities.py}) runs against them all.
Private keys leave the store only through C{credentials}.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import attrs
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from zope.interface import implementer

from gophergem.errors import CertificateStoreUnavailable
from gophergem.interfaces import IIdentityStore
from gophergem.state.documents import LOCK_TIMEOUT, DocumentFile, log
from gophergem.trust import Identity
from gophergem.trust.fingerprints import sha256_fingerprint
from gophergem.trust.identities import (
    as_identity,
    best_identity,
    check_scope,
    describe_scope,
    exists_error,
    mint_identity,
    normalise_scope,
    sorted_identities,
)

__all__ = ["FileIdentityStore"]

_KIND = "gophergem-identities"
_NOUN = "client identity store"
_INDEX = "identities.json"
_FILE_NAME = re.compile(r"[0-9a-f]{64}\.(key|cert)\.pem")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _key(host: str, port: int, scope: str) -> str:
    return f"{host}:{port}{scope}"


def _check_entries(entries: dict[str, Any]) -> None:
    for key, entry in entries.items():
        if not isinstance(entry, dict):
            raise TypeError("an identity is not an object")
        check_scope(entry["host"], entry["port"])
        path, fingerprint = entry["path"], entry["fingerprint"]
        if not isinstance(path, str) or normalise_scope(path) != path:
            raise ValueError("bad scope path")
        if key != _key(entry["host"], entry["port"], path):
            raise ValueError(f"key {key!r} does not match its identity")
        if (
            not isinstance(fingerprint, str)
            or not fingerprint.startswith("sha256:")
            or not _HEX64.fullmatch(fingerprint[7:])
        ):
            raise ValueError("bad fingerprint")
        for name in ("not_before", "not_after"):
            if type(entry[name]) not in (int, float):
                raise TypeError(f"{name} is not a number")
        for name in ("key_file", "cert_file"):
            # Plain names in the store's own directory, nothing else.
            if not isinstance(entry[name], str) or not _FILE_NAME.fullmatch(entry[name]):
                raise ValueError(f"bad {name}")


def _decode(entry: dict[str, Any]) -> Identity:
    return Identity(
        host=entry["host"],
        port=entry["port"],
        path=entry["path"],
        fingerprint=entry["fingerprint"],
        not_before=float(entry["not_before"]),
        not_after=float(entry["not_after"]),
    )


@implementer(IIdentityStore)
@attrs.define
class FileIdentityStore:
    """
    Identities in a private directory (mode 0700), safe for several processes
    and for crashes::

        identities.json        the index: scope -> fingerprint, validity, file names
        identities.json.lock   its lock
        <sha256>.key.pem       a private key (PKCS#8, unencrypted, mode 0600)
        <sha256>.cert.pem      its certificate (mode 0600)

    L{create} checks, mints and writes the key and certificate files durably
    and only then adds the index entry, all under the index's exclusive
    lock: a crash can leave unindexed files (swept by the next L{create}),
    never an entry without its key.  L{remove} drops the entry under the
    lock, then deletes the files.  Reads take no lock and create nothing; a
    reader that finds an identity's file gone looks at the index again.  Every method raises
    L{CertificateStoreUnavailable} when the store cannot be locked, read or
    written.

    @ivar directory: The store's directory, created (or tightened) to 0700.
    @ivar lock_timeout: Seconds to wait for another process's lock.
    @ivar prepare: Called before the first change creates the store's
        directory (see L{DocumentFile.prepare}).
    """

    directory: str | os.PathLike[str]
    lock_timeout: float = LOCK_TIMEOUT
    prepare: Callable[[], None] | None = attrs.field(default=None, kw_only=True)
    _index: DocumentFile = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._index = DocumentFile(
            os.path.join(self.directory, _INDEX),
            kind=_KIND,
            noun=_NOUN,
            check=_check_entries,
            private_directory=True,
            lock_timeout=self.lock_timeout,
            prepare=self.prepare,
        )

    def find(self, host: str, port: int, path: str) -> Identity | None:
        """The identity with the longest scope covering the request, or C{None}."""
        return best_identity(self._identities(host), host, port, path)

    def create(self, host: str, port: int, path: str, now: float) -> Identity:
        """
        Mint and store an identity for the scope C{host}, C{port}, C{path}
        (normalised to end in C{/}).

        @raise CertificateExists: When that exact scope already has one; the
            message names the scope and its fingerprint.
        """
        check_scope(host, port)
        scope = normalise_scope(path)
        key = _key(host, port, scope)

        def change(entries: dict[str, Any]) -> Identity:
            if key in entries:
                raise exists_error(_decode(entries[key]))
            self._sweep_orphans(entries)
            identity, cert_pem, key_pem = mint_identity(host, port, scope, now)
            stem = identity.fingerprint.removeprefix("sha256:")
            key_file, cert_file = f"{stem}.key.pem", f"{stem}.cert.pem"
            self._index.write_beside(key_file, key_pem)
            self._index.write_beside(cert_file, cert_pem)
            entries[key] = {
                **attrs.asdict(identity),
                "key_file": key_file,
                "cert_file": cert_file,
                "created": now,
            }
            return identity

        return self._index.update(change)

    def remove(self, host: str, port: int, path: str) -> bool:
        """Delete the identity of exactly that scope; return whether there was one."""
        key = _key(host, port, normalise_scope(path))
        removed = self._index.update(lambda entries: entries.pop(key, None))
        if removed is None:
            return False
        for name in (removed["key_file"], removed["cert_file"]):
            target = os.path.join(self.directory, name)
            try:
                os.unlink(target)
            except FileNotFoundError:
                pass
            except OSError as e:  # the next create sweeps it
                log.warn("Could not delete {file}: {error}", file=target, error=str(e))
        return True

    def all(self, host: str | None = None) -> list[Identity]:
        """Every identity (for C{host} only, when given), by host, port and path."""
        return sorted_identities(self._identities(host))

    def credentials(self, identity: Identity) -> tuple[bytes, bytes]:
        """
        Return C{(certificate_pem, private_key_pem)} for C{identity}.

        @raise CertificateStoreUnavailable: When the identity is no longer in
            the store, or its files are missing or do not match it.
        """
        identity = as_identity(identity)
        key = _key(identity.host, identity.port, identity.path)

        def entry_of(entries: dict[str, Any]) -> dict[str, Any]:
            entry = entries.get(key)
            if entry is None or entry["fingerprint"] != identity.fingerprint:
                raise CertificateStoreUnavailable(
                    message="That identity is no longer in the client identity store.",
                    next_step="List the identities again; it may have been removed or "
                    "replaced by another process.",
                )
            return dict(entry)

        def read(entries: dict[str, Any]) -> tuple[bytes, bytes]:
            entry = entry_of(entries)
            cert_pem = self._index.read_beside(entry["cert_file"])
            key_pem = self._index.read_beside(entry["key_file"])
            return cert_pem, key_pem

        try:
            cert_pem, key_pem = self._index.view(read)
        except FileNotFoundError as e:
            # Reads take no lock: another process may have removed the
            # identity (entry first, then its files) since the index was read.
            self._index.view(entry_of)
            log.error(
                "A file of {scope} in {path} is missing: {error}",
                scope=describe_scope(identity.host, identity.port, identity.path),
                path=os.fspath(self.directory),
                error=str(e),
            )
            raise CertificateStoreUnavailable(
                message="The client identity store has lost a file of that identity.",
                next_step="Remove the identity and create a new one.",
                path=e.filename if isinstance(e.filename, str) else None,
            ) from e
        try:
            der = x509.load_pem_x509_certificate(cert_pem).public_bytes(serialization.Encoding.DER)
        except ValueError:
            der = b""
        if sha256_fingerprint(der) != identity.fingerprint:
            log.error(
                "The certificate file of {scope} in {path} does not match its index entry",
                scope=describe_scope(identity.host, identity.port, identity.path),
                path=os.fspath(self.directory),
            )
            raise CertificateStoreUnavailable(
                message="The client identity store holds a damaged certificate for that identity.",
                next_step="Remove the identity and create a new one.",
            )
        return cert_pem, key_pem

    def _identities(self, host: str | None) -> list[Identity]:
        return self._index.view(
            lambda entries: [
                _decode(entry)
                for entry in entries.values()
                if host is None or entry["host"] == host
            ]
        )

    def _sweep_orphans(self, entries: dict[str, Any]) -> None:
        # Called under the exclusive lock, where nobody else is creating: a key
        # or certificate file no entry names is left from a crash or a failed
        # removal.
        named = {entry[field] for entry in entries.values() for field in ("key_file", "cert_file")}
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            stale = _FILE_NAME.fullmatch(name) and name not in named
            leftover = name.startswith(".") and name.endswith(".tmp") and ".pem." in name
            if stale or leftover:
                try:
                    os.unlink(os.path.join(self.directory, name))
                except OSError as e:
                    log.warn("Could not delete {file}: {error}", file=name, error=str(e))
