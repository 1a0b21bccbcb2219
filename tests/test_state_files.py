"""
Tests for L{gophergem.state.files}: the file stores of each principal.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from gophergem.state.files import PRINCIPAL_FILE, principal_key
from gophergem.trust import Pin
from tests.helpers.state import file_state

ALICE = "https://idp.example#alice"
BOB = "https://idp.example#bob"


def _pin(host: str) -> Pin:
    return Pin(
        host=host,
        port=1965,
        fingerprint="sha256:" + "ab" * 32,
        spki="sha256:" + "cd" * 32,
        first_seen=1.0,
        last_seen=1.0,
        not_before=0.0,
        expires=0.0,
    )


def test_principal_key_is_a_stable_hex_name() -> None:
    """The directory name is 32 hex digits, the same every time, different per principal."""
    assert principal_key(ALICE) == principal_key(ALICE)
    assert principal_key(ALICE) != principal_key(BOB)
    assert len(principal_key(ALICE)) == 32
    int(principal_key(ALICE), 16)


def test_the_owner_keeps_the_usual_files(tmp_path: Path) -> None:
    """The principal None uses the configured paths themselves."""
    state = file_state(tmp_path)
    identities = state.identities(None)
    assert identities is not None
    assert Path(identities.directory) == tmp_path / "client_certs"  # type: ignore[attr-defined]
    assert Path(state.feeds(None).path) == tmp_path / "feeds.json"  # type: ignore[attr-defined]


def test_identities_are_kept_apart(tmp_path: Path) -> None:
    """An identity Alice creates is not seen by Bob, nor by the owner."""
    state = file_state(tmp_path)
    alice = state.identities(ALICE)
    assert alice is not None
    alice.create("capsule.example", 1965, "/", 1_700_000_000.0)
    assert [i.host for i in alice.all()] == ["capsule.example"]
    bob = state.identities(BOB)
    owner = state.identities(None)
    assert bob is not None and owner is not None
    assert bob.all() == []
    assert owner.all() == []
    assert state.identities(ALICE) is alice
    home = tmp_path / "client_certs.principals" / principal_key(ALICE)
    assert (home / PRINCIPAL_FILE).read_text() == ALICE
    assert (home / "client_certs").is_dir()


def test_subscriptions_are_kept_apart(tmp_path: Path) -> None:
    """Alice's subscriptions are hers alone."""
    state = file_state(tmp_path)
    state.feeds(ALICE).subscribe("gemini://a.example/", "A", "gemsub", [], 1.0)
    assert [s.url for s in state.feeds(ALICE).subscriptions()] == ["gemini://a.example/"]
    assert state.feeds(BOB).subscriptions() == []
    assert state.feeds(None).subscriptions() == []


def test_pins_are_shared_by_default(tmp_path: Path) -> None:
    """A pin made for one principal is the pin every principal sees."""
    state = file_state(tmp_path)
    alice = state.pins(ALICE)
    assert alice is not None
    alice.put(_pin("capsule.example"))
    bob = state.pins(BOB)
    assert bob is not None
    assert bob.get("capsule.example", 1965) is not None
    assert bob is alice


def test_pins_per_principal_when_asked(tmp_path: Path) -> None:
    """With pins_per_principal, each principal pins on their own."""
    state = file_state(tmp_path, pins_per_principal=True)
    alice = state.pins(ALICE)
    bob = state.pins(BOB)
    assert alice is not None and bob is not None
    alice.put(_pin("capsule.example"))
    assert bob.get("capsule.example", 1965) is None
    owner = state.pins(None)
    assert owner is not None and owner.get("capsule.example", 1965) is None


def test_switched_off_stores_are_none(tmp_path: Path) -> None:
    """No pins with TOFU off, no identities with identities off."""
    state = file_state(tmp_path, tofu_enabled=False, identities_enabled=False)
    assert state.pins(ALICE) is None
    assert state.identities(ALICE) is None


def test_feed_principals_lists_who_has_subscriptions(tmp_path: Path) -> None:
    """The owner first, then every principal whose store exists; junk is skipped."""
    state = file_state(tmp_path)
    state.feeds(ALICE).subscribe("gemini://a.example/", None, "page", [], 1.0)
    state.feeds(BOB)  # made, but never written: no file yet
    junk = tmp_path / "feeds.json.principals" / "not-a-hash"
    junk.mkdir(parents=True)
    (junk / PRINCIPAL_FILE).write_text("someone else")
    (junk / "feeds.json").write_text("{}")
    found: list[object] = []
    state.feed_principals().addCallback(found.extend)
    assert found == [None, ALICE]


@pytest.mark.parametrize("method", ["health", "close"])
def test_health_and_close_answer_at_once(tmp_path: Path, method: str) -> None:
    """Files need no connection: health is ok, close does nothing."""
    fired: list[object] = []
    getattr(file_state(tmp_path), method)().addCallback(fired.append)
    assert len(fired) == 1


def test_a_principals_reads_create_nothing(tmp_path: Path) -> None:
    """
    Reading a principal's stores (pins kept per principal, identities,
    subscriptions) creates no directory and no PRINCIPAL file; the first
    change claims the home.
    """
    state = attrs.evolve(file_state(tmp_path), pins_per_principal=True)
    pins, identities = state.pins(ALICE), state.identities(ALICE)
    assert pins is not None and identities is not None
    assert pins.all() == [] and identities.all() == []
    assert state.feeds(ALICE).subscriptions() == []
    assert list(tmp_path.iterdir()) == []
    state.feeds(ALICE).subscribe("gemini://a.example/", "A", "gemsub", [], 1.0)
    home = tmp_path / "feeds.json.principals" / principal_key(ALICE)
    assert (home / PRINCIPAL_FILE).read_text() == ALICE
    assert state.feed_principals().result == [None, ALICE]
