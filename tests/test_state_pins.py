"""
Tests for the pin stores (L{gophergem.state.files.pins},
L{gophergem.state.memory}, L{gophergem.state.postgres}) and their rules
(L{gophergem.trust.pins}), with the file machinery under them
(L{gophergem.state.documents}).

One contract class runs against every provider; the file store's own
guarantees (modes, damaged files, locks, failed writes) follow it.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gophergem.errors import CertificateStoreUnavailable
from gophergem.interfaces import IPinStore
from gophergem.state import documents
from gophergem.state.files import FilePinStore
from gophergem.state.memory import MemoryPinStore
from gophergem.trust import Pin
from tests.helpers.trust import SHORT_WAIT, LogEvents, hold_lock
from tests.servers.postgres import wait


def make_pin(host: str = "gem.example", port: int = 1965, **changes: Any) -> Pin:
    values: dict[str, Any] = {
        "host": host,
        "port": port,
        "fingerprint": "sha256:" + "ab" * 32,
        "spki": "sha256:" + "cd" * 32,
        "first_seen": 1_700_000_000.0,
        "last_seen": 1_700_000_500.5,
        "not_before": 1_690_000_000.0,
        "expires": 1_800_000_000.0,
    }
    values.update(changes)
    return Pin(**values)


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> LogEvents:
    """Every event the trust stores log."""
    found = LogEvents()
    monkeypatch.setattr(documents.log, "observer", found.append)
    return found


@pytest.fixture(params=["file", "memory", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    """
    A factory of handles on one store: for the file provider each call opens
    a new L{FilePinStore} on the same file; the memory provider has one; the
    PostgreSQL provider gives a new handle on the shared pins of an emptied
    database (its methods return Deferreds: the contract wraps every call in
    L{wait}).
    """
    if request.param == "file":
        return lambda: FilePinStore(tmp_path / "data" / "tofu.json")
    if request.param == "postgres":
        harness = request.getfixturevalue("postgres_harness")
        harness.reset()
        return lambda: harness.state.pins()
    store = MemoryPinStore()
    return lambda: store


class TestPinStoreContract:
    """
    What every L{IPinStore} provider does, whether its methods answer at
    once or with a Deferred (each call is wrapped in L{wait}).
    """

    def test_interface(self, make_store: Callable[[], Any]) -> None:
        """The store provides IPinStore."""
        assert verifyObject(IPinStore, make_store())

    def test_empty(self, make_store: Callable[[], Any]) -> None:
        """A new store has no pins, and removing one reports there was none."""
        store = make_store()
        assert wait(store.get("gem.example", 1965)) is None
        assert wait(store.all()) == []
        assert wait(store.remove("gem.example", 1965)) is False

    def test_put_get(self, make_store: Callable[[], Any]) -> None:
        """A pin put is the pin got, field for field, from another handle too."""
        pin = make_pin()
        wait(make_store().put(pin))
        assert wait(make_store().get("gem.example", 1965)) == pin

    def test_key_is_host_and_port(self, make_store: Callable[[], Any]) -> None:
        """Another port or another host is another pin."""
        store = make_store()
        wait(store.put(make_pin(port=1965)))
        assert wait(store.get("gem.example", 1966)) is None
        assert wait(store.get("other.example", 1965)) is None

    def test_replace(self, make_store: Callable[[], Any]) -> None:
        """Putting a pin for a pinned host:port replaces it."""
        store = make_store()
        wait(store.put(make_pin()))
        newer = make_pin(fingerprint="sha256:" + "ef" * 32, last_seen=1_750_000_000.0)
        wait(store.put(newer))
        assert wait(store.get("gem.example", 1965)) == newer
        assert wait(store.all()) == [newer]

    def test_put_new(self, make_store: Callable[[], Any]) -> None:
        """
        put_new stores a pin for an unpinned host:port and returns None; for
        a pinned one it returns that pin and changes nothing.
        """
        first = make_pin()
        assert wait(make_store().put_new(first)) is None
        other = make_pin(fingerprint="sha256:" + "ef" * 32)
        assert wait(make_store().put_new(other)) == first
        assert wait(make_store().get("gem.example", 1965)) == first
        assert wait(make_store().put_new(make_pin(port=1966))) is None
        assert len(wait(make_store().all())) == 2

    def test_put_new_validates(self, make_store: Callable[[], Any]) -> None:
        """put_new refuses what put refuses, and stores nothing."""
        store = make_store()
        with pytest.raises((TypeError, ValueError)):
            wait(store.put_new(make_pin(port=0)))
        with pytest.raises(TypeError):
            wait(store.put_new("not a pin"))
        assert wait(store.all()) == []

    def test_remove(self, make_store: Callable[[], Any]) -> None:
        """Removing forgets only that pin and reports it once."""
        store = make_store()
        wait(store.put(make_pin(port=1965)))
        wait(store.put(make_pin(port=1966)))
        assert wait(store.remove("gem.example", 1965)) is True
        assert wait(store.remove("gem.example", 1965)) is False
        assert wait(store.get("gem.example", 1965)) is None
        assert wait(store.get("gem.example", 1966)) == make_pin(port=1966)

    def test_all_sorted_and_filtered(self, make_store: Callable[[], Any]) -> None:
        """All pins come sorted by host then port (numerically); a host filters them."""
        store = make_store()
        for host, port in [("b.example", 1965), ("a.example", 19650), ("a.example", 1966)]:
            wait(store.put(make_pin(host, port)))
        assert [(p.host, p.port) for p in wait(store.all())] == [
            ("a.example", 1966),
            ("a.example", 19650),
            ("b.example", 1965),
        ]
        assert [p.port for p in wait(store.all("a.example"))] == [1966, 19650]
        assert wait(store.all("c.example")) == []

    def test_ipv6_host(self, make_store: Callable[[], Any]) -> None:
        """An IPv6 literal is a host like any other."""
        store = make_store()
        wait(store.put(make_pin("2001:db8::1", 1965)))
        assert wait(store.get("2001:db8::1", 1965)) == make_pin("2001:db8::1", 1965)
        assert wait(store.get("2001:db8::1:1965", 1965)) is None

    def test_unknown_spki(self, make_store: Callable[[], Any]) -> None:
        """A pin with an unknown SPKI and validity (imported) is kept as it is."""
        pin = make_pin(spki="", not_before=0.0, expires=0.0)
        wait(make_store().put(pin))
        assert wait(make_store().get("gem.example", 1965)) == pin

    @pytest.mark.parametrize(
        "bad",
        [
            {"port": 0},
            {"port": 65536},
            {"host": ""},
            {"expires": float("nan")},
            {"expires": float("inf")},
            {"fingerprint": None},
        ],
        ids=repr,
    )
    def test_refuses_unstorable_pins(
        self, make_store: Callable[[], Any], bad: dict[str, Any]
    ) -> None:
        """A pin that could not be read back is refused, and the store is unchanged."""
        store = make_store()
        wait(store.put(make_pin("keep.example")))
        with pytest.raises((ValueError, TypeError)):
            wait(store.put(attrs.evolve(make_pin(), **bad)))
        assert wait(store.all()) == [make_pin("keep.example")]

    def test_refuses_non_pins(self, make_store: Callable[[], Any]) -> None:
        """Only Pin values can be put."""
        with pytest.raises(TypeError):
            wait(make_store().put({"host": "gem.example", "port": 1965}))


_hosts = st.sampled_from(["a.example", "b.example", "xn--bcher-kva.example", "2001:db8::1"])
_ports = st.sampled_from([1965, 1966, 70])
_times = st.floats(min_value=0, max_value=4e9, allow_nan=False)
_pins = st.builds(
    Pin,
    host=_hosts,
    port=_ports,
    fingerprint=st.sampled_from(["sha256:" + c * 64 for c in "0af"]),
    spki=st.sampled_from(["", "sha256:" + "1" * 64]),
    first_seen=_times,
    last_seen=_times,
    not_before=_times,
    expires=_times,
)
_operations = st.lists(
    st.one_of(
        st.tuples(st.just("put"), _pins),
        st.tuples(st.just("put_new"), _pins),
        st.tuples(st.just("remove"), st.tuples(_hosts, _ports)),
        st.tuples(st.just("get"), st.tuples(_hosts, _ports)),
        st.tuples(st.just("all"), st.one_of(st.none(), _hosts)),
    ),
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(_operations)
def test_file_and_memory_agree(operations: list[tuple[str, Any]]) -> None:
    """Any sequence of operations gives the same answers from both providers."""
    with tempfile.TemporaryDirectory() as directory:
        stores: list[IPinStore] = [FilePinStore(Path(directory) / "tofu.json"), MemoryPinStore()]
        for name, argument in operations:
            answers: list[Any]
            if name == "put":
                for store in stores:
                    store.put(argument)
                answers = [store.all() for store in stores]
            elif name == "put_new":
                answers = [(store.put_new(argument), store.all()) for store in stores]
            elif name == "all":
                answers = [store.all(argument) for store in stores]
            else:
                answers = [getattr(store, name)(*argument) for store in stores]
            assert answers[0] == answers[1], (name, argument)
        assert FilePinStore(Path(directory) / "tofu.json").all() == stores[1].all()


class TestFilePinStore:
    """What the file provider guarantees beyond the contract."""

    def test_document(self, tmp_path: Path) -> None:
        """The file is versioned JSON naming its format, mode 0600 in a new 0700 directory."""
        path = tmp_path / "new" / "tofu.json"
        FilePinStore(path).put(make_pin())
        document = json.loads(path.read_text())
        assert document["format"] == "gophergem-pins"
        assert document["version"] == 1
        assert document["entries"]["gem.example:1965"]["spki"] == "sha256:" + "cd" * 32
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(Path(str(path) + ".lock").stat().st_mode) == 0o600

    def test_existing_directory_left_alone(self, tmp_path: Path) -> None:
        """A directory that already existed (say, home) keeps its mode."""
        tmp_path.chmod(0o755)
        FilePinStore(tmp_path / "tofu.json").put(make_pin())
        assert stat.S_IMODE(tmp_path.stat().st_mode) == 0o755

    def test_reading_creates_nothing(self, tmp_path: Path) -> None:
        """Reading a store that does not exist yet creates no directory."""
        store = FilePinStore(tmp_path / "absent" / "tofu.json")
        assert store.all() == []
        assert store.get("gem.example", 1965) is None
        assert not (tmp_path / "absent").exists()

    def test_unchanged_store_not_rewritten(self, tmp_path: Path) -> None:
        """Removing a pin that is not there does not rewrite the file."""
        path = tmp_path / "tofu.json"
        store = FilePinStore(path)
        store.put(make_pin())
        before = path.stat().st_ino
        assert store.remove("other.example", 1965) is False
        store.put(make_pin())
        assert path.stat().st_ino == before

    @pytest.mark.parametrize(
        "content",
        [
            b'{"format": "gophergem-pins", "version": 1, "entries": {',
            b"",
            b"\xff\xfe",
            b'{"format": "gophergem-pins", "version": 1, "entries": []}',
            b'{"format": "gophergem-pins", "entries": {}}',
            b'{"format": "gophergem-pins", "version": 1, "entries": {"a:1": {"host": "a"}}}',
            b'{"format": "gophergem-pins", "version": 1, "entries": {"a:2": '
            + json.dumps(attrs.asdict(make_pin("a", 1))).encode()
            + b"}}",
        ],
        ids=["truncated", "empty", "binary", "list", "no-version", "short-entry", "wrong-key"],
    )
    def test_damaged_file_refused_untouched(
        self, tmp_path: Path, events: LogEvents, content: bytes
    ) -> None:
        """
        A damaged file is refused by reads and writes alike and left exactly
        as it was (bytes, time, the directory): nothing is moved aside, no
        lock file appears for a read.  The error says what is wrong and
        carries the path in C{path}, never in the result's fields.
        """
        path = tmp_path / "tofu.json"
        path.write_bytes(content)
        os.utime(path, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
        store = FilePinStore(path)
        calls: list[Callable[[], object]] = [
            lambda: store.get("gem.example", 1965),
            store.all,
            lambda: store.put(make_pin()),
            lambda: store.put_new(make_pin()),
            lambda: store.remove("gem.example", 1965),
        ]
        for call in calls:
            with pytest.raises(CertificateStoreUnavailable) as caught:
                call()
            assert caught.value.code == "CERTIFICATE_STORE_UNAVAILABLE"
            assert caught.value.path == str(path)
            assert str(tmp_path) not in str(caught.value.fields())
            assert "nothing was read or changed" in caught.value.message
            assert path.read_bytes() == content
            assert path.stat().st_mtime_ns == 1_600_000_000_000_000_000
        assert sorted(p.name for p in tmp_path.iterdir()) == ["tofu.json", "tofu.json.lock"]
        assert str(path) in events.text()

    def test_damaged_file_read_leaves_directory_alone(self, tmp_path: Path) -> None:
        """A read of a damaged file creates nothing beside it: no lock, no copy."""
        path = tmp_path / "tofu.json"
        path.write_text("# README\n\nNot a pin store.\n")
        with pytest.raises(CertificateStoreUnavailable) as caught:
            FilePinStore(path).all()
        assert "is not JSON" in caught.value.message
        assert [p.name for p in tmp_path.iterdir()] == ["tofu.json"]

    def test_repaired_after_moving_away(self, tmp_path: Path) -> None:
        """Once the person moves the damaged file away, the store starts empty."""
        path = tmp_path / "tofu.json"
        path.write_text("broken")
        store = FilePinStore(path)
        with pytest.raises(CertificateStoreUnavailable):
            store.put(make_pin())
        path.rename(tmp_path / "kept")
        store.put(make_pin())
        assert store.all() == [make_pin()]
        assert (tmp_path / "kept").read_text() == "broken"

    @pytest.mark.parametrize(
        "document",
        [
            {"gem.example:1965": {"host": "gem.example", "port": 1965, "fingerprint": "ab"}},
            {},
            {"format": "gophergem-identities", "version": 1, "entries": {}},
        ],
        ids=["gopher-mcp", "empty-object", "identity-index"],
    )
    def test_foreign_file_left_alone(
        self, tmp_path: Path, events: LogEvents, document: dict[str, Any]
    ) -> None:
        """A JSON file gophergem did not write is refused, never moved or overwritten."""
        path = tmp_path / "tofu.json"
        path.write_text(json.dumps(document))
        store = FilePinStore(path)
        calls: list[Callable[[], object]] = [
            lambda: store.get("gem.example", 1965),
            lambda: store.put(make_pin()),
        ]
        for call in calls:
            with pytest.raises(CertificateStoreUnavailable) as caught:
                call()
            assert "trust import" in (caught.value.next_step or "")
        assert json.loads(path.read_text()) == document
        assert list(tmp_path.glob("*.corrupt-*")) == []
        assert str(path) in events.text()

    def test_newer_format_left_alone(self, tmp_path: Path) -> None:
        """A store written by a newer format version is refused and left as it is."""
        path = tmp_path / "tofu.json"
        text = json.dumps({"format": "gophergem-pins", "version": 2, "entries": {"x": 1}})
        path.write_text(text)
        with pytest.raises(CertificateStoreUnavailable) as caught:
            FilePinStore(path).put(make_pin())
        assert "newer" in caught.value.message
        assert path.read_text() == text

    def test_lock_timeout(self, tmp_path: Path, events: LogEvents) -> None:
        """
        While another process holds the lock, a write gives up after the
        timeout with a temporary CertificateStoreUnavailable; then it works.
        Reads take no lock: they go on reading the last complete document.
        """
        path = tmp_path / "tofu.json"
        store = FilePinStore(path, lock_timeout=SHORT_WAIT)
        store.put(make_pin())
        with hold_lock(Path(str(path) + ".lock")):
            assert store.get("gem.example", 1965) == make_pin()
            assert store.all() == [make_pin()]
            with pytest.raises(CertificateStoreUnavailable) as caught:
                store.put(make_pin("other.example"))
            assert caught.value.temporary is True
            assert str(tmp_path) not in str(caught.value.fields())
        assert str(path) in events.text()
        store.put(make_pin("other.example"))
        assert store.get("other.example", 1965) == make_pin("other.example")

    def test_readers_take_no_lock(self, tmp_path: Path) -> None:
        """A reader never holds the lock, so it never holds up a writer."""
        path = tmp_path / "tofu.json"
        store = FilePinStore(path, lock_timeout=SHORT_WAIT)
        store.put(make_pin())
        with hold_lock(Path(str(path) + ".lock"), "shared"):
            assert store.get("gem.example", 1965) == make_pin()
            with pytest.raises(CertificateStoreUnavailable):
                store.put(make_pin("other.example"))

    def test_zero_timeout(self, tmp_path: Path) -> None:
        """A zero timeout tries the lock exactly once."""
        path = tmp_path / "tofu.json"
        store = FilePinStore(path, lock_timeout=0)
        store.put(make_pin())
        with hold_lock(Path(str(path) + ".lock")), pytest.raises(CertificateStoreUnavailable):
            store.put(make_pin("other.example"))

    def test_failed_write_keeps_old_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, events: LogEvents
    ) -> None:
        """A write that fails (disk full) leaves the old file whole and no temporary file."""
        path = tmp_path / "tofu.json"
        store = FilePinStore(path)
        store.put(make_pin())
        before = path.read_bytes()

        def full(source: Any, target: Any) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "replace", full)
        with pytest.raises(CertificateStoreUnavailable) as caught:
            store.put(make_pin("other.example"))
        assert str(tmp_path) not in str(caught.value.fields())
        assert "No space left on device" in events.text()
        monkeypatch.undo()
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["tofu.json", "tofu.json.lock"]

    def test_crash_leftovers_swept(self, tmp_path: Path) -> None:
        """Temporary files left by a crashed writer are removed by the next write."""
        path = tmp_path / "tofu.json"
        leftover = tmp_path / ".tofu.json.abc123.tmp"
        leftover.write_text("half a docu")
        unrelated = tmp_path / ".other.tmp"
        unrelated.write_text("not ours")
        FilePinStore(path).put(make_pin())
        assert not leftover.exists()
        assert unrelated.exists()
