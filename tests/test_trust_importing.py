"""
Tests for L{gophergem.trust.importing}: pins from gopher-mcp's C{tofu.json}.

The sample files are in the format gopher-mcp writes (C{TOFUManager}:
C{json.dump({"host:port": TOFUEntry.model_dump()}, indent=2)}).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from gophergem.errors import InvalidRequest
from gophergem.state.files import FilePinStore
from gophergem.state.memory import MemoryPinStore
from gophergem.testing import DeferringStore
from gophergem.trust import Pin
from gophergem.trust.importing import ImportReport, SkippedPin
from gophergem.trust.importing import import_gopher_mcp_pins as importing

NOW = 1_750_000_000.0
HEX_A = "a1" * 32
HEX_B = "b2" * 32


def import_gopher_mcp_pins(path: Any, store: Any, now: float) -> ImportReport:
    """The report of an import into a store that answers at once."""
    reports: list[ImportReport] = []
    importing(path, store, now).addCallback(reports.append)
    (report,) = reports
    return report


def gopher_mcp_file(tmp_path: Path, entries: dict[str, Any]) -> Path:
    path = tmp_path / "tofu.json"
    path.write_text(json.dumps(entries, indent=2))
    return path


def entry(host: str, port: int = 1965, fingerprint: str = HEX_A, **more: Any) -> dict[str, Any]:
    return {
        "host": host,
        "port": port,
        "fingerprint": fingerprint,
        "first_seen": 1_700_000_000.5,
        "last_seen": 1_700_000_900.0,
        "expires": None,
        **more,
    }


def test_imports_gopher_mcp_pins(tmp_path: Path) -> None:
    """
    Each entry becomes a pin with the fingerprint as sha256:<hex>, its times,
    and an unknown (empty) SPKI; a null expiry and the absent not_before are 0.
    """
    path = gopher_mcp_file(
        tmp_path,
        {
            "gem.example:1965": entry("gem.example"),
            "other.example:1966": entry("other.example", 1966, HEX_B, expires=1_800_000_000.0),
        },
    )
    store = MemoryPinStore()
    report = import_gopher_mcp_pins(path, store, NOW)
    first = Pin(
        host="gem.example",
        port=1965,
        fingerprint="sha256:" + HEX_A,
        spki="",
        first_seen=1_700_000_000.5,
        last_seen=1_700_000_900.0,
        not_before=0.0,
        expires=0.0,
    )
    assert report == ImportReport(
        imported=(
            first,
            Pin(
                host="other.example",
                port=1966,
                fingerprint="sha256:" + HEX_B,
                spki="",
                first_seen=1_700_000_000.5,
                last_seen=1_700_000_900.0,
                not_before=0.0,
                expires=1_800_000_000.0,
            ),
        )
    )
    assert store.get("gem.example", 1965) == first
    assert len(store.all()) == 2


@pytest.mark.parametrize(
    "spelling",
    [
        HEX_A.upper(),
        "sha256:" + HEX_A,
        "SHA256:" + ":".join(HEX_A[i : i + 2] for i in range(0, 64, 2)),
    ],
    ids=["upper", "prefixed", "colons"],
)
def test_fingerprint_spellings(tmp_path: Path, spelling: str) -> None:
    """Old and hand-edited spellings of the fingerprint all import as sha256:<hex>."""
    path = gopher_mcp_file(
        tmp_path, {"gem.example:1965": entry("gem.example", fingerprint=spelling)}
    )
    report = import_gopher_mcp_pins(path, MemoryPinStore(), NOW)
    assert [p.fingerprint for p in report.imported] == ["sha256:" + HEX_A]


def test_hosts_normalised(tmp_path: Path) -> None:
    """Hosts are normalised like URLs (lower case, IDNA, IPv6 without brackets)."""
    path = gopher_mcp_file(
        tmp_path,
        {
            "Gem.Example:1965": entry("Gem.Example"),
            "bücher.example:1965": entry("bücher.example"),
            "2001:db8::1:1965": entry("2001:db8::1"),
        },
    )
    report = import_gopher_mcp_pins(path, MemoryPinStore(), NOW)
    assert sorted(p.host for p in report.imported) == [
        "2001:db8::1",
        "gem.example",
        "xn--bcher-kva.example",
    ]


def test_missing_fields_from_key(tmp_path: Path) -> None:
    """An entry without host, port or times takes them from its key and from now."""
    path = gopher_mcp_file(tmp_path, {"gem.example:1970": {"fingerprint": HEX_A}})
    (pin,) = import_gopher_mcp_pins(path, MemoryPinStore(), NOW).imported
    assert (pin.host, pin.port, pin.first_seen, pin.last_seen) == ("gem.example", 1970, NOW, NOW)


def test_existing_pins_kept(tmp_path: Path) -> None:
    """
    A host:port already pinned is skipped with a reason, whether the file agrees
    or not, and the existing pin is never replaced.
    """
    store = MemoryPinStore()
    mine = Pin(
        host="gem.example",
        port=1965,
        fingerprint="sha256:" + HEX_B,
        spki="sha256:" + "c3" * 32,
        first_seen=1.0,
        last_seen=2.0,
        not_before=0.5,
        expires=3.0,
    )
    same = attrs.evolve(mine, host="same.example", fingerprint="sha256:" + HEX_A)
    store.put(mine)
    store.put(same)
    path = gopher_mcp_file(
        tmp_path,
        {
            "gem.example:1965": entry("gem.example"),
            "same.example:1965": entry("same.example"),
            "new.example:1965": entry("new.example"),
        },
    )
    report = import_gopher_mcp_pins(path, store, NOW)
    assert [p.host for p in report.imported] == ["new.example"]
    different, agreeing = report.skipped
    assert isinstance(different, SkippedPin)
    assert (different.host, different.port) == ("gem.example", 1965)
    assert "another certificate" in different.reason and HEX_B in different.reason
    assert agreeing.reason == "already pinned to the same certificate"
    assert store.get("gem.example", 1965) == mine
    assert store.get("same.example", 1965) == same


def test_duplicates_in_file(tmp_path: Path) -> None:
    """Two spellings of one host in the file: the first is imported, the second skipped."""
    path = gopher_mcp_file(
        tmp_path,
        {
            "gem.example:1965": entry("gem.example"),
            "GEM.example:1965": entry("GEM.example", fingerprint=HEX_B),
        },
    )
    report = import_gopher_mcp_pins(path, MemoryPinStore(), NOW)
    assert [p.fingerprint for p in report.imported] == ["sha256:" + HEX_A]
    assert len(report.skipped) == 1


def test_bad_entries_reported(tmp_path: Path) -> None:
    """Entries that cannot be understood are listed as problems; the rest are imported."""
    path = gopher_mcp_file(
        tmp_path,
        {
            "gem.example:1965": entry("gem.example"),
            "short.example:1965": entry("short.example", fingerprint="abcd"),
            "port.example:99999": entry("port.example", 99999),
            "time.example:1965": entry("time.example", first_seen="yesterday"),
            "list.example:1965": [1, 2],
            "bad host:1965": entry("bad host"),
        },
    )
    store = MemoryPinStore()
    report = import_gopher_mcp_pins(path, store, NOW)
    assert [p.host for p in report.imported] == ["gem.example"]
    assert len(report.problems) == 5
    assert any("'short.example:1965'" in p and "SHA-256" in p for p in report.problems)
    assert [p.host for p in store.all()] == ["gem.example"]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"{not json", "not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8"),
        (b"[1, 2]", "not a gopher-mcp pin file"),
        (b'{"a:1965": {"fingerprint": "zz"}, "b:1965": 7}', "None of the 2 entries"),
        (
            b'{"format": "gophergem-pins", "version": 1, "entries": {}}',
            "gophergem store",
        ),
    ],
    ids=["not-json", "binary", "list", "no-usable-entry", "our-own-store"],
)
def test_bad_file(tmp_path: Path, content: bytes, message: str) -> None:
    """A file that is not gopher-mcp's raises InvalidRequest and imports nothing."""
    path = tmp_path / "tofu.json"
    path.write_bytes(content)
    store = MemoryPinStore()
    with pytest.raises(InvalidRequest, match=message):
        importing(path, store, NOW)
    assert store.all() == []


def test_missing_file(tmp_path: Path) -> None:
    """A missing file is a clear error."""
    with pytest.raises(InvalidRequest, match="could not be read"):
        importing(tmp_path / "absent.json", MemoryPinStore(), NOW)


def test_empty_file_imports_nothing(tmp_path: Path) -> None:
    """gopher-mcp's empty store ({}) imports nothing, without error."""
    path = gopher_mcp_file(tmp_path, {})
    assert import_gopher_mcp_pins(path, MemoryPinStore(), NOW) == ImportReport()


def test_into_file_store(tmp_path: Path) -> None:
    """Imported pins are durable in a file store, and a second import skips them all."""
    path = gopher_mcp_file(tmp_path, {"gem.example:1965": entry("gem.example")})
    store = FilePinStore(tmp_path / "gophergem" / "tofu.json")
    assert len(import_gopher_mcp_pins(path, store, NOW).imported) == 1
    again = import_gopher_mcp_pins(path, FilePinStore(tmp_path / "gophergem" / "tofu.json"), NOW)
    assert again.imported == () and len(again.skipped) == 1
    (pin,) = FilePinStore(tmp_path / "gophergem" / "tofu.json").all()
    assert pin.spki == ""


def test_into_a_store_that_answers_later(tmp_path: Path) -> None:
    """A networked store (PostgreSQL) answers later: the report waits for every pin."""
    from twisted.internet.task import Clock

    path = gopher_mcp_file(
        tmp_path, {"a.example:1965": entry("a.example"), "b.example:1965": entry("b.example")}
    )
    clock = Clock()
    store = MemoryPinStore()
    reports: list[ImportReport] = []
    importing(path, DeferringStore(store, clock), NOW).addCallback(reports.append)
    assert reports == []
    clock.advance(0)
    clock.advance(0)
    (report,) = reports
    assert sorted(p.host for p in report.imported) == ["a.example", "b.example"]
    assert len(store.all()) == 2
