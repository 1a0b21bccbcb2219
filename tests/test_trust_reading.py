"""
Reading a file store never moves, renames or creates anything (issue 21,
item 8): every read path of every JSON document store, on a file that is
not a valid store, a missing file, a directory and an unreadable file.

A store read either answers or raises the store's "unavailable" error
(C{CERTIFICATE_STORE_UNAVAILABLE} for pins and identities, the codes the
specification fixes for them; C{STATE_UNAVAILABLE} for feeds and tokens),
which says what is wrong and carries the file's path in C{path}.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.auth import tokens
from gophergem.errors import CertificateStoreUnavailable, GophergemError, StateUnavailable
from gophergem.state.files import FileFeedStore, FileIdentityStore, FilePinStore, FileState
from gophergem.trust import Identity

README = b"# gophergem\n\nReads Gopherspace and Geminispace for AI assistants.\n"
GARBAGE = bytes(range(256)) * 3
OLD = 1_600_000_000_000_000_000  # an mtime, in nanoseconds, that no write would give

_IDENTITY = Identity(
    host="gem.example",
    port=1965,
    path="/",
    fingerprint="sha256:" + "ab" * 32,
    not_before=0.0,
    not_after=1e10,
)


def _pin_reads(path: Path) -> list[Callable[[], object]]:
    store = FilePinStore(path)
    return [store.all, lambda: store.all("gem.example"), lambda: store.get("gem.example", 1965)]


def _identity_reads(path: Path) -> list[Callable[[], object]]:
    store = FileIdentityStore(path.parent)
    return [
        store.all,
        lambda: store.find("gem.example", 1965, "/"),
        lambda: store.credentials(_IDENTITY),
    ]


def _feed_reads(path: Path) -> list[Callable[[], object]]:
    store = FileFeedStore(path)
    return [
        store.subscriptions,
        lambda: store.get("gemini://gem.example/"),
        store.unread,
        lambda: store.unread(since="2000-01-01"),
    ]


def _token_reads(path: Path) -> list[Callable[[], object]]:
    return [lambda: tokens.list_tokens(path)]


#: Each store: the name of its file, its reads and the error they raise.
STORES: dict[str, tuple[str, Callable[[Path], list[Callable[[], object]]], type[Exception]]] = {
    "pins": ("tofu.json", _pin_reads, CertificateStoreUnavailable),
    "identities": ("identities.json", _identity_reads, CertificateStoreUnavailable),
    "feeds": ("feeds.json", _feed_reads, StateUnavailable),
    "tokens": ("tokens.json", _token_reads, StateUnavailable),
}


def _snapshot(directory: Path) -> dict[str, tuple[bytes | None, int, int]]:
    """Every entry of C{directory}: its bytes (files), mode and mtime."""
    out = {}
    for entry in sorted(directory.iterdir()):
        info = entry.lstat()
        content = None
        if entry.is_file():
            with open(entry, "rb") as stream:  # not Path.read_bytes, which a test replaces
                content = stream.read()
        out[entry.name] = (content, info.st_mode, info.st_mtime_ns)
    return out


def _plant(directory: Path, name: str, content: bytes) -> Path:
    path = directory / name
    path.write_bytes(content)
    os.utime(path, ns=(OLD, OLD))
    return path


@pytest.mark.parametrize("store", sorted(STORES))
@pytest.mark.parametrize(
    "content",
    [
        README,
        GARBAGE,
        b"",
        b"[]",
        b'{"format": "someone-else", "version": 1, "entries": {}}',
        b'{"format": "gophergem-pins", "version": 1, "entries": {"x": 1}}',
    ],
    ids=["readme", "garbage", "empty", "json-list", "foreign", "pins-bad-entry"],
)
def test_read_of_invalid_file_changes_nothing(store: str, content: bytes) -> None:
    """
    Every read of a file that is not a valid store raises the store's error
    naming the path and what is wrong, and leaves the directory as it was:
    the file's bytes, mode and mtime, and no lock file, copy or directory.
    """
    name, reads, error = STORES[store]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        path = _plant(root, name, content)
        before = _snapshot(root)
        for read in reads(path):
            with pytest.raises(error) as caught:
                read()
            assert isinstance(caught.value, GophergemError)
            assert caught.value.path == str(path)
            assert directory not in str(caught.value.fields())
            assert "nothing was read or changed" in caught.value.message
            assert _snapshot(root) == before


@pytest.mark.parametrize("store", sorted(STORES))
def test_read_of_missing_file_is_empty(store: str, tmp_path: Path) -> None:
    """A store with no file reads as empty and creates nothing, not even its directory."""
    name, reads, _ = STORES[store]
    path = tmp_path / "absent" / name
    for read in reads(path):
        try:
            answer: Any = read()
        except CertificateStoreUnavailable as e:  # credentials of an identity not there
            assert "no longer" in e.message
        else:
            assert not answer
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("store", sorted(STORES))
def test_read_of_a_directory(store: str, tmp_path: Path) -> None:
    """A directory where the store's file should be is refused, and left alone."""
    name, reads, error = STORES[store]
    (tmp_path / name).mkdir()
    before = _snapshot(tmp_path)
    for read in reads(tmp_path / name):
        with pytest.raises(error) as caught:
            read()
        assert "is a directory" in caught.value.message  # type: ignore[attr-defined]
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("store", sorted(STORES))
def test_read_of_unreadable_file(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """
    A file that cannot be read (no permission) is refused with the system's
    reason, and nothing is created beside it.  (The refusal is simulated:
    these tests may run as root, whom modes do not stop.)
    """
    name, reads, error = STORES[store]
    path = _plant(tmp_path, name, b"{}")
    real = Path.read_bytes

    def denied(self: Path) -> bytes:
        if self == path:
            raise PermissionError(13, os.strerror(13), str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", denied)
    before = _snapshot(tmp_path)
    for read in reads(path):
        with pytest.raises(error) as caught:
            read()
        assert "Permission denied" in caught.value.message  # type: ignore[attr-defined]
    assert _snapshot(tmp_path) == before


def test_file_state_reads_create_nothing(tmp_path: Path) -> None:
    """The owner's stores, read through L{FileState}, create no file or directory."""
    state = FileState(tmp_path / "tofu.json", tmp_path / "client_certs", tmp_path / "feeds.json")
    pins, identities = state.pins(None), state.identities(None)
    assert pins is not None and identities is not None
    assert pins.all() == [] and identities.all() == []
    assert state.feeds(None).subscriptions() == []
    assert list(tmp_path.iterdir()) == []


def test_daemon_token_load_changes_nothing(tmp_path: Path) -> None:
    """The daemon's token file (load and reload) refuses a README and leaves it alone."""
    path = _plant(tmp_path, "tokens.json", README)
    before = _snapshot(tmp_path)
    reader = tokens.TokenFile(path)
    assert reader.principal_for("anything") is None
    reader.reload()
    assert reader.usable is False
    assert _snapshot(tmp_path) == before


_DOCUMENTS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=20), inner, max_size=4)
    ),
    max_leaves=10,
)


def _envelope(kind: str) -> st.SearchStrategy[bytes]:
    import json

    return st.builds(
        lambda version, entries: json.dumps(
            {"format": kind, "version": version, "entries": entries}
        ).encode(),
        st.one_of(st.just(1), st.integers(-2, 3)),
        st.dictionaries(st.text(max_size=30), _DOCUMENTS, max_size=3),
    )


_KINDS = {
    "pins": "gophergem-pins",
    "identities": "gophergem-identities",
    "feeds": "gophergem-feeds",
    "tokens": "gophergem-auth-tokens",
}


@settings(max_examples=150, deadline=None)
@given(
    store=st.sampled_from(sorted(STORES)),
    data=st.data(),
)
def test_any_bytes_read_or_refused(store: str, data: st.DataObject) -> None:
    """
    For arbitrary bytes as the store's file, every read either returns a
    value or raises the store's error (naming the path), and never changes
    the directory.
    """
    content = data.draw(
        st.one_of(
            st.binary(max_size=300), st.text(max_size=100).map(str.encode), _envelope(_KINDS[store])
        ),
        label="content",
    )
    name, reads, error = STORES[store]
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        path = _plant(root, name, content)
        before = _snapshot(root)
        for read in reads(path):
            try:
                read()
            except error as e:
                assert isinstance(e, GophergemError)
                # credentials of an identity the (valid) index lacks
                assert e.path == str(path) or "no longer" in e.message
            assert _snapshot(root) == before


@pytest.mark.parametrize("store", sorted(STORES))
def test_read_under_a_file_is_empty(store: str, tmp_path: Path) -> None:
    """
    A store whose directory is a file holds nothing: a read is empty (as it
    was before reads stopped locking) and leaves the file alone.
    """
    name, reads, _ = STORES[store]
    blocker = _plant(tmp_path, "README.md", README)
    before = _snapshot(tmp_path)
    for read in reads(blocker / name):
        try:
            answer: Any = read()
        except CertificateStoreUnavailable as e:  # credentials of an identity not there
            assert "no longer" in e.message
        else:
            assert not answer
    assert _snapshot(tmp_path) == before
