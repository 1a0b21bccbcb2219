"""
Tests for the identity stores (L{gophergem.state.files.identities},
L{gophergem.state.memory}, L{gophergem.state.postgres}) and their rules
(L{gophergem.trust.identities}): one contract class for every provider, then
what the file store guarantees about its files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from hypothesis import given
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gophergem.errors import CertificateExists, CertificateStoreUnavailable
from gophergem.interfaces import IIdentityStore
from gophergem.state import documents
from gophergem.state.documents import DocumentFile
from gophergem.state.files import FileIdentityStore
from gophergem.state.memory import MemoryIdentityStore
from gophergem.trust import Identity
from gophergem.trust.identities import mint_identity, normalise_scope
from tests.helpers.trust import SHORT_WAIT, hold_lock
from tests.servers.postgres import wait

NOW = 1_700_000_000.25
HOST = "gem.example"


@pytest.fixture(params=["file", "memory", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    """
    A factory of handles on one store: a new L{FileIdentityStore} on the same
    directory per call, the one L{MemoryIdentityStore}, or a new handle on
    one principal's identities in an emptied PostgreSQL database (whose
    methods return Deferreds: the contract wraps every call in L{wait}).
    """
    if request.param == "file":
        return lambda: FileIdentityStore(tmp_path / "client_certs")
    if request.param == "postgres":
        harness = request.getfixturevalue("postgres_harness")
        harness.reset()
        return lambda: harness.state.identities("https://idp.example#alice")
    store = MemoryIdentityStore()
    return lambda: store


class TestIdentityStoreContract:
    """
    What every L{IIdentityStore} provider does, whether its methods answer
    at once or with a Deferred (each call is wrapped in L{wait}).
    """

    def test_interface(self, make_store: Callable[[], Any]) -> None:
        """The store provides IIdentityStore."""
        assert verifyObject(IIdentityStore, make_store())

    def test_empty(self, make_store: Callable[[], Any]) -> None:
        """A new store has no identity to find, list or remove."""
        store = make_store()
        assert wait(store.find(HOST, 1965, "/")) is None
        assert wait(store.all()) == []
        assert wait(store.remove(HOST, 1965, "/")) is False

    def test_create(self, make_store: Callable[[], Any]) -> None:
        """
        create returns the identity: the scope path ends in /, the fingerprint
        is sha256:<hex>, valid from 5 minutes before now for 365 days.
        """
        identity = wait(make_store().create(HOST, 1965, "/app", NOW))
        assert (identity.host, identity.port, identity.path) == (HOST, 1965, "/app/")
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", identity.fingerprint)
        assert identity.not_before == int(NOW) - 300
        assert identity.not_after == int(NOW) + 365 * 86400

    def test_credentials(self, make_store: Callable[[], Any]) -> None:
        """
        The credentials are a self-signed client certificate, named opaquely,
        whose DER hashes to the fingerprint, and its P-256 key (PKCS#8, unencrypted).
        """
        store = make_store()
        identity = wait(store.create(HOST, 1965, "/", NOW))
        cert_pem, key_pem = wait(make_store().credentials(identity))
        certificate = x509.load_pem_x509_certificate(cert_pem)
        der = certificate.public_bytes(serialization.Encoding.DER)
        assert identity.fingerprint == "sha256:" + hashlib.sha256(der).hexdigest()
        assert certificate.issuer == certificate.subject
        (name,) = certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        assert re.fullmatch(r"gophergem-[0-9a-f]{8}", str(name.value))
        assert HOST not in certificate.subject.rfc4514_string()
        assert certificate.not_valid_before_utc.timestamp() == identity.not_before
        assert certificate.not_valid_after_utc.timestamp() == identity.not_after
        usage = certificate.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert ExtendedKeyUsageOID.CLIENT_AUTH in usage
        assert key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")
        key = serialization.load_pem_private_key(key_pem, password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        assert isinstance(key.curve, ec.SECP256R1)
        assert key.public_key() == certificate.public_key()

    def test_identities_are_distinct(self, make_store: Callable[[], Any]) -> None:
        """Two identities share neither key, serial nor name."""
        store = make_store()
        one = wait(store.credentials(wait(store.create(HOST, 1965, "/a/", NOW))))
        two = wait(store.credentials(wait(store.create(HOST, 1965, "/b/", NOW))))
        first, second = (x509.load_pem_x509_certificate(pem) for pem, _ in (one, two))
        assert one[1] != two[1]
        assert first.serial_number != second.serial_number
        assert first.subject != second.subject

    @pytest.mark.parametrize("path", ["/app/", "/app/x/y", "/app", "/app/x/"])
    def test_scope_covers(self, make_store: Callable[[], Any], path: str) -> None:
        """An identity for /app/ is used for /app/, everything below it and /app itself."""
        store = make_store()
        identity = wait(store.create(HOST, 1965, "/app/", NOW))
        assert wait(store.find(HOST, 1965, path)) == identity

    @pytest.mark.parametrize(
        "host, port, path",
        [
            (HOST, 1965, "/apple"),
            (HOST, 1965, "/apple/"),
            (HOST, 1965, "/"),
            (HOST, 1965, ""),
            (HOST, 1965, "/ap"),
            (HOST, 1966, "/app/"),
            ("other.example", 1965, "/app/"),
            ("sub.gem.example", 1965, "/app/"),
        ],
    )
    def test_scope_excludes(
        self, make_store: Callable[[], Any], host: str, port: int, path: str
    ) -> None:
        """
        An identity for /app/ is not used for /apple, for paths above it, on
        another port or on another host.
        """
        store = make_store()
        wait(store.create(HOST, 1965, "/app/", NOW))
        assert wait(store.find(host, port, path)) is None

    def test_longest_scope_wins(self, make_store: Callable[[], Any]) -> None:
        """When several scopes cover a request, the longest path prefix wins."""
        store = make_store()
        root = wait(store.create(HOST, 1965, "/", NOW))
        app = wait(store.create(HOST, 1965, "/app/", NOW))
        deep = wait(store.create(HOST, 1965, "/app/x/", NOW))
        assert wait(store.find(HOST, 1965, "/app/x/y")) == deep
        assert wait(store.find(HOST, 1965, "/app/x")) == deep
        assert wait(store.find(HOST, 1965, "/app/z")) == app
        assert wait(store.find(HOST, 1965, "/apple")) == root
        assert wait(store.find(HOST, 1965, "")) == root

    @pytest.mark.parametrize("again", ["/app/", "/app", "app"])
    def test_exists(self, make_store: Callable[[], Any], again: str) -> None:
        """
        Creating an identity for a scope that has one raises CertificateExists
        naming the scope and its fingerprint, and keeps the existing identity.
        """
        store = make_store()
        identity = wait(store.create(HOST, 1965, "/app/", NOW))
        with pytest.raises(CertificateExists) as caught:
            wait(store.create(HOST, 1965, again, NOW + 10))
        assert caught.value.code == "CERTIFICATE_EXISTS"
        assert "gemini://gem.example/app/" in caught.value.message
        assert identity.fingerprint in caught.value.message
        assert wait(store.all()) == [identity]

    def test_nested_scope_is_not_the_same(self, make_store: Callable[[], Any]) -> None:
        """A scope inside a covered one, or another port, is a new scope."""
        store = make_store()
        wait(store.create(HOST, 1965, "/", NOW))
        wait(store.create(HOST, 1965, "/app/", NOW))
        wait(store.create(HOST, 1966, "/", NOW))
        assert len(wait(store.all())) == 3

    def test_remove(self, make_store: Callable[[], Any]) -> None:
        """remove deletes exactly that scope (however spelt) and reports it once."""
        store = make_store()
        root = wait(store.create(HOST, 1965, "/", NOW))
        wait(store.create(HOST, 1965, "/app/", NOW))
        assert wait(store.remove(HOST, 1965, "/app")) is True
        assert wait(store.remove(HOST, 1965, "/app/")) is False
        assert wait(store.remove(HOST, 1965, "/other/")) is False
        assert wait(store.all()) == [root]
        assert wait(store.find(HOST, 1965, "/app/x")) == root

    def test_credentials_after_remove(self, make_store: Callable[[], Any]) -> None:
        """A removed (or replaced) identity has no credentials any more."""
        store = make_store()
        identity = wait(store.create(HOST, 1965, "/", NOW))
        wait(store.remove(HOST, 1965, "/"))
        with pytest.raises(CertificateStoreUnavailable):
            wait(store.credentials(identity))
        wait(store.create(HOST, 1965, "/", NOW))
        with pytest.raises(CertificateStoreUnavailable):
            wait(store.credentials(identity))

    def test_all_sorted_and_filtered(self, make_store: Callable[[], Any]) -> None:
        """all lists by host, port and path; a host filters it."""
        store = make_store()
        for host, port, path in [("b.example", 1965, "/"), (HOST, 1966, "/"), (HOST, 1965, "/z/")]:
            wait(store.create(host, port, path, NOW))
        wait(store.create(HOST, 1965, "/a/", NOW))
        assert [(i.host, i.port, i.path) for i in wait(store.all())] == [
            ("b.example", 1965, "/"),
            (HOST, 1965, "/a/"),
            (HOST, 1965, "/z/"),
            (HOST, 1966, "/"),
        ]
        assert [i.host for i in wait(make_store().all("b.example"))] == ["b.example"]

    def test_no_secrets_listed(self, make_store: Callable[[], Any]) -> None:
        """Identities carry no key material and no file names."""
        store = make_store()
        wait(store.create(HOST, 1965, "/", NOW))
        names = {field.name for field in attrs.fields(Identity)}
        assert names == {"host", "port", "path", "fingerprint", "not_before", "not_after"}
        assert "PRIVATE" not in repr(wait(store.all())) and ".pem" not in repr(wait(store.all()))

    @pytest.mark.parametrize("host, port", [("", 1965), (HOST, 0), (HOST, 70000)])
    def test_refuses_bad_scope(self, make_store: Callable[[], Any], host: str, port: int) -> None:
        """An identity needs a host and a port in 1-65535."""
        with pytest.raises(ValueError):
            wait(make_store().create(host, port, "/", NOW))


_segments = st.lists(st.sampled_from(["a", "app", "apple", "x", "y"]), max_size=3)


def _reference_covers(scope: list[str], request: list[str]) -> bool:
    return request[: len(scope)] == scope


@given(scope=_segments, request=_segments, trailing=st.booleans())
def test_scope_is_a_segment_prefix(scope: list[str], request: list[str], trailing: bool) -> None:
    """An identity covers a request exactly when its path segments are a prefix of it."""
    identity = Identity(
        host=HOST,
        port=1965,
        path=normalise_scope("/".join(["", *scope])),
        fingerprint="sha256:" + "0" * 64,
        not_before=0,
        not_after=1,
    )
    path = "/" + "/".join(request) + ("/" if trailing and request else "")
    assert identity.covers(HOST, 1965, path) == _reference_covers(scope, request)


def test_mint_is_pure() -> None:
    """Minting depends only on its arguments and randomness, not on the clock."""
    identity, _, _ = mint_identity(HOST, 1965, "/x", 86400.0 * 365 * 60)
    assert identity.not_before == 86400 * 365 * 60 - 300
    assert identity.path == "/x/"


class TestFileIdentityStore:
    """What the file provider guarantees about its files."""

    def test_modes(self, tmp_path: Path) -> None:
        """Keys, certificates and the index are 0600 inside a 0700 directory."""
        directory = tmp_path / "client_certs"
        FileIdentityStore(directory).create(HOST, 1965, "/", NOW)
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
        files = list(directory.iterdir())
        assert {f.name.split(".", 1)[1] for f in files} == {
            "key.pem",
            "cert.pem",
            "json",
            "json.lock",
        }
        for file in files:
            assert stat.S_IMODE(file.stat().st_mode) == 0o600, file.name

    def test_directory_tightened(self, tmp_path: Path) -> None:
        """An existing directory that others could read is tightened to 0700."""
        directory = tmp_path / "certs"
        directory.mkdir(mode=0o755)
        directory.chmod(0o755)
        FileIdentityStore(directory).create(HOST, 1965, "/", NOW)
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700

    def test_index(self, tmp_path: Path) -> None:
        """The index is versioned JSON: scope, fingerprint, validity and file names."""
        directory = tmp_path / "client_certs"
        identity = FileIdentityStore(directory).create(HOST, 1965, "/app", NOW)
        document = json.loads((directory / "identities.json").read_text())
        assert (document["format"], document["version"]) == ("gophergem-identities", 1)
        entry = document["entries"]["gem.example:1965/app/"]
        assert entry["fingerprint"] == identity.fingerprint
        assert entry["not_after"] == identity.not_after
        assert (directory / entry["key_file"]).read_bytes().startswith(b"-----BEGIN PRIVATE")
        assert (directory / entry["cert_file"]).read_bytes().startswith(b"-----BEGIN CERT")

    def test_remove_deletes_files(self, tmp_path: Path) -> None:
        """Removing an identity deletes its key and certificate."""
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory)
        store.create(HOST, 1965, "/", NOW)
        store.remove(HOST, 1965, "/")
        assert list(directory.glob("*.pem")) == []

    def test_failed_key_write_adds_no_entry(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """If the key cannot be written, create fails and the index gets no entry."""
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory)
        store.create(HOST, 1965, "/", NOW)
        real = documents.write_atomically

        def failing(path: Path, data: bytes) -> None:
            if path.name.endswith(".key.pem"):
                raise OSError(28, "No space left on device")
            real(path, data)

        monkeypatch.setattr(documents, "write_atomically", failing)
        with pytest.raises(CertificateStoreUnavailable):
            store.create(HOST, 1965, "/app/", NOW)
        monkeypatch.undo()
        assert [i.path for i in store.all()] == ["/"]

    def test_crash_before_index_leaves_no_entry(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """
        A crash after the key is written but before the index is leaves files
        and no entry; the next create sweeps the unindexed files.
        """
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory)
        kept = store.create(HOST, 1965, "/", NOW)
        real = documents.write_atomically

        def crash(path: Path, data: bytes) -> None:
            if path.name == "identities.json":
                raise OSError(5, "Input/output error")
            real(path, data)

        monkeypatch.setattr(documents, "write_atomically", crash)
        with pytest.raises(CertificateStoreUnavailable):
            store.create(HOST, 1965, "/app/", NOW)
        monkeypatch.undo()
        assert store.all() == [kept]
        assert len(list(directory.glob("*.key.pem"))) == 2
        (directory / ".deadbeef.key.pem.x1.tmp").write_text("half a key")
        store.create(HOST, 1965, "/other/", NOW)
        assert len(list(directory.glob("*.key.pem"))) == 2
        assert not (directory / ".deadbeef.key.pem.x1.tmp").exists()
        assert store.credentials(kept)[0].startswith(b"-----BEGIN CERT")

    def test_damaged_index(self, tmp_path: Path) -> None:
        """
        A damaged index is refused by reads and writes and left as it is (no
        lock file for a read, nothing set aside); the error carries its path.
        """
        directory = tmp_path / "client_certs"
        directory.mkdir()
        index = directory / "identities.json"
        index.write_text('{"format": "gophergem-identities", ')
        store = FileIdentityStore(directory)
        with pytest.raises(CertificateStoreUnavailable) as caught:
            store.find(HOST, 1965, "/")
        assert caught.value.path == str(index)
        with pytest.raises(CertificateStoreUnavailable):
            store.all()
        assert [p.name for p in directory.iterdir()] == ["identities.json"]
        with pytest.raises(CertificateStoreUnavailable):
            store.create(HOST, 1965, "/", NOW)
        assert index.read_text() == '{"format": "gophergem-identities", '
        assert list(directory.glob("*.corrupt-*")) == []
        assert list(directory.glob("*.pem")) == []

    @pytest.mark.parametrize("field", ["key_file", "cert_file"])
    def test_index_cannot_point_elsewhere(self, tmp_path: Path, field: str) -> None:
        """An index entry naming a file outside the store is damage, never followed."""
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory)
        store.create(HOST, 1965, "/", NOW)
        index = directory / "identities.json"
        document = json.loads(index.read_text())
        document["entries"]["gem.example:1965/"][field] = "../../etc/passwd"
        index.write_text(json.dumps(document))
        with pytest.raises(CertificateStoreUnavailable):
            store.all()

    def test_tampered_certificate(self, tmp_path: Path) -> None:
        """A certificate file that no longer matches its fingerprint is refused."""
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory)
        identity = store.create(HOST, 1965, "/", NOW)
        _, other_cert, _ = mint_identity(HOST, 1965, "/", NOW)
        (cert_file,) = directory.glob("*.cert.pem")
        cert_file.write_bytes(other_cert)
        with pytest.raises(CertificateStoreUnavailable):
            store.credentials(identity)
        cert_file.write_bytes(b"garbage")
        with pytest.raises(CertificateStoreUnavailable):
            store.credentials(identity)

    def test_missing_key(self, tmp_path: Path) -> None:
        """A key file deleted behind the store's back fails cleanly, naming no path."""
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory)
        identity = store.create(HOST, 1965, "/", NOW)
        (key_file,) = directory.glob("*.key.pem")
        key_file.unlink()
        with pytest.raises(CertificateStoreUnavailable) as caught:
            store.credentials(identity)
        assert str(tmp_path) not in str(caught.value.fields())

    def test_lock_timeout(self, tmp_path: Path) -> None:
        """
        While another process holds the index lock, create gives up; find
        and credentials take no lock and go on.
        """
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory, lock_timeout=SHORT_WAIT)
        created = store.create(HOST, 1965, "/", NOW)
        with hold_lock(directory / "identities.json.lock"):
            assert store.find(HOST, 1965, "/") == created
            assert store.credentials(created)[0].startswith(b"-----BEGIN CERTIFICATE")
            with pytest.raises(CertificateStoreUnavailable):
                store.create(HOST, 1965, "/app/", NOW)
        assert len(list(directory.glob("*.pem"))) == 2
        assert store.find(HOST, 1965, "/x") is not None

    def test_files_gone_under_a_reader(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """
        Reads take no lock: when another process removes an identity between
        the reader's look at the index and its read of the files, the reader
        says the identity is gone (not that the store is damaged).
        """
        directory = tmp_path / "client_certs"
        store = FileIdentityStore(directory)
        created = store.create(HOST, 1965, "/", NOW)
        other = FileIdentityStore(directory)
        read_beside = DocumentFile.read_beside

        def removed_meanwhile(self: DocumentFile, name: str) -> bytes:
            other.remove(HOST, 1965, "/")
            return read_beside(self, name)

        monkeypatch.setattr(DocumentFile, "read_beside", removed_meanwhile)
        with pytest.raises(CertificateStoreUnavailable) as caught:
            store.credentials(created)
        assert "no longer in the client identity store" in caught.value.message

    def test_nothing_read_for_a_missing_store(self, tmp_path: Path) -> None:
        """Looking up identities in a store never written creates nothing."""
        store = FileIdentityStore(tmp_path / "absent")
        assert store.find(HOST, 1965, "/") is None
        assert not os.path.exists(tmp_path / "absent")
