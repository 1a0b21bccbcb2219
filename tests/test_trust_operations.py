"""
Tests for L{gophergem.trust.operations}: the interlocks of the trust and
identity tools, run directly on the stores (memory, and the file stores in a
temporary directory, which must behave the same), each answering plainly,
with Deferreds, and with Deferreds that wait for the clock.
"""

from __future__ import annotations

from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from gophergem.errors import (
    CertificateExists,
    ClientCertsDisabled,
    FingerprintMismatch,
    GophergemError,
    InvalidRequest,
    PinExists,
    TofuDisabled,
)
from gophergem.state.files import FileIdentityStore, FilePinStore
from gophergem.state.memory import MemoryIdentityStore, MemoryPinStore
from gophergem.testing import EPOCH
from gophergem.trust import Identity, Pin
from gophergem.trust import operations as ops
from gophergem.url import GeminiURL
from tests.helpers import deferring
from tests.helpers.deferring import answers
from tests.helpers.trust import FP, a_pin

#: Every test runs with the stores answering plainly, with Deferreds, and
#: with Deferreds that wait for the clock (L{tests.helpers.deferring}).
pytestmark = pytest.mark.usefixtures("answers")
__all__ = ["answers"]

CLOCK = Clock()


def later(store: Any) -> Any:
    """C{store} as the operations see it: answering as the running mode says."""
    return deferring.wrap(store, deferring.CURRENT, CLOCK)


def run(operation: Coroutine[Any, Any, Any]) -> Any:
    """Run a store operation to its end, moving the clock as a reactor would."""
    box: list[Any] = []
    Deferred.fromCoroutine(operation).addBoth(box.append)
    for _ in range(10):
        if box:
            break
        CLOCK.advance(0)
    assert box, "the operation never ended"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


OTHER = "sha256:" + "cd" * 32


@pytest.fixture(params=["memory", "file"])
def pins(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return MemoryPinStore()
    return FilePinStore(tmp_path / "tofu.json")


@pytest.fixture(params=["memory", "file"])
def identities(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "memory":
        return MemoryIdentityStore()
    return FileIdentityStore(tmp_path / "identities")


# --- hosts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "port", "expected"),
    [
        ("capsule.example", 1965, ("capsule.example", 1965)),
        ("  CAPSULE.Example ", 1966, ("capsule.example", 1966)),
        ("B\u00fccher.example", 1965, ("xn--bcher-kva.example", 1965)),
        ("[2001:db8::1]", 1965, ("2001:db8::1", 1965)),
    ],
)
def test_check_host_normalises(host: str, port: int, expected: tuple[str, int]) -> None:
    """Host names are lower-cased, IDNA-encoded and unbracketed, as URLs spell them."""
    assert ops.check_host(host, port) == expected


@pytest.mark.parametrize(
    ("host", "port"),
    [
        ("*.capsule.example", 1965),
        ("*", 1965),
        ("", 1965),
        ("   ", 1965),
        ("two words", 1965),
        (None, 1965),
        ("capsule.example", 0),
        ("capsule.example", 65536),
        ("capsule.example", True),
        ("capsule.example", "1965"),
    ],
)
def test_check_host_refuses(host: Any, port: Any) -> None:
    """Wildcards, empty or malformed hosts and ports outside 1-65535 are INVALID_REQUEST."""
    with pytest.raises(InvalidRequest):
        ops.check_host(host, port)


def test_check_host_ipv6_matches_url_spelling() -> None:
    """A bracketed IPv6 host is spelled the way a fetch of the same address keys its pin."""
    assert ops.check_host("[0:0::1]")[0] == GeminiURL.from_text("gemini://[0:0::1]/").host


def test_check_host_with_port_not_silently_redirected() -> None:
    """A host argument carrying its own port is refused rather than acted on at another port."""
    with pytest.raises(InvalidRequest):
        ops.check_host("localhost:1966", 1965)


# --- pins --------------------------------------------------------------------------------


def test_list_pins_all_and_by_host(pins: Any) -> None:
    """list_pins returns every pin, or those of one host however it is spelled."""
    pins.put(a_pin())
    pins.put(a_pin(port=1966))
    pins.put(a_pin(host="other.example"))
    assert len(run(ops.list_pins(later(pins)))) == 3
    assert [p.port for p in run(ops.list_pins(later(pins), "CAPSULE.example"))] == [1965, 1966]
    with pytest.raises(InvalidRequest):
        run(ops.list_pins(later(pins), "*.example"))


def test_pin_operations_need_a_store() -> None:
    """Without a pin store (TOFU off) every pin operation is TOFU_DISABLED."""
    with pytest.raises(TofuDisabled):
        run(ops.list_pins(later(None)))
    with pytest.raises(TofuDisabled):
        run(ops.remove_pin(later(None), "capsule.example", 1965, FP))
    with pytest.raises(TofuDisabled):
        run(ops.pin_fingerprint(later(None), "capsule.example", 1965, FP, EPOCH))


def test_remove_pin_with_no_pin_is_mismatch(pins: Any) -> None:
    """Removing a pin that does not exist is FINGERPRINT_MISMATCH."""
    with pytest.raises(FingerprintMismatch):
        run(ops.remove_pin(later(pins), "capsule.example", 1965, FP))


def test_remove_pin_wrong_fingerprint_changes_nothing(pins: Any) -> None:
    """Another fingerprint than the pinned one is FINGERPRINT_MISMATCH naming the pin."""
    pins.put(a_pin())
    with pytest.raises(FingerprintMismatch) as caught:
        run(ops.remove_pin(later(pins), "capsule.example", 1965, OTHER))
    assert FP in caught.value.message and caught.value.next_step
    assert pins.all() == [a_pin()]


def test_remove_pin_on_other_port_changes_nothing(pins: Any) -> None:
    """The right fingerprint on the wrong port is FINGERPRINT_MISMATCH; nothing changes."""
    pins.put(a_pin())
    with pytest.raises(FingerprintMismatch):
        run(ops.remove_pin(later(pins), "capsule.example", 1966, FP))
    assert pins.all() == [a_pin()]


@pytest.mark.parametrize(
    "spelling",
    [FP, FP.upper(), FP.removeprefix("sha256:"), ":".join(["AB"] * 32)],
)
def test_remove_pin_by_any_spelling(pins: Any, spelling: str) -> None:
    """The pinned fingerprint in any accepted spelling removes the pin and returns it."""
    pins.put(a_pin())
    pins.put(a_pin(host="other.example"))
    assert run(ops.remove_pin(later(pins), "Capsule.Example", 1965, spelling)) == a_pin()
    assert pins.all() == [a_pin(host="other.example")]


@pytest.mark.parametrize("junk", ["", "abc", "sha1:" + "ab" * 32, None, 42])
def test_remove_pin_junk_fingerprint_refused(pins: Any, junk: Any) -> None:
    """A malformed fingerprint is INVALID_REQUEST and nothing changes."""
    pins.put(a_pin())
    with pytest.raises(InvalidRequest):
        run(ops.remove_pin(later(pins), "capsule.example", 1965, junk))
    assert pins.all() == [a_pin()]


# Plain answers only: hypothesis and pytest-twisted do not mix with the
# Deferred modes' fixture (the tests above cover those modes).
@pytest.mark.parametrize("answers", ["plain"])
@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.text(max_size=80))
def test_remove_pin_only_by_the_pinned_fingerprint(text: str) -> None:
    """Whatever text is given, the pin goes only when it spells the pinned fingerprint."""
    store = MemoryPinStore()
    store.put(a_pin())
    try:
        run(ops.remove_pin(later(store), "capsule.example", 1965, text))
    except GophergemError as error:
        assert error.code in ("INVALID_REQUEST", "FINGERPRINT_MISMATCH")
        assert store.all() == [a_pin()]
    else:
        assert store.all() == []


def test_pin_fingerprint_on_unpinned_host(pins: Any) -> None:
    """pin on a host with no pin stores the fingerprint, its key and dates left to learn."""
    pin = run(ops.pin_fingerprint(later(pins), "CAPSULE.example", 1965, OTHER.upper(), EPOCH))
    assert pin == Pin(
        host="capsule.example",
        port=1965,
        fingerprint=OTHER,
        spki="",
        first_seen=EPOCH,
        last_seen=EPOCH,
        not_before=0.0,
        expires=0.0,
    )
    assert pins.all() == [pin]


def test_pin_fingerprint_over_another_pin_is_pin_exists(pins: Any) -> None:
    """pin over another host's pin is PIN_EXISTS naming the current one; nothing changes."""
    pins.put(a_pin())
    with pytest.raises(PinExists) as caught:
        run(ops.pin_fingerprint(later(pins), "capsule.example", 1965, OTHER, EPOCH))
    error = caught.value
    assert error.code == "PIN_EXISTS" and error.pinned_fingerprint == FP
    assert FP in error.message and FP in (error.next_step or "")
    assert "remove" in (error.next_step or "")
    assert error.fields()["pinned_fingerprint"] == FP
    assert pins.all() == [a_pin()]


@pytest.mark.parametrize("replacing", [None, OTHER, "junk", 7, "sha256:" + "00" * 32])
def test_pin_fingerprint_replaces_only_the_agreed_pin(pins: Any, replacing: Any) -> None:
    """Naming anything but the current pin as the one to replace changes nothing."""
    pins.put(a_pin())
    with pytest.raises(PinExists):
        run(
            ops.pin_fingerprint(
                later(pins), "capsule.example", 1965, OTHER, EPOCH, replacing=replacing
            )
        )
    assert pins.all() == [a_pin()]


def test_pin_fingerprint_replaces_with_consent(pins: Any) -> None:
    """Naming the current pin (any spelling) as agreed replaces it."""
    pins.put(a_pin())
    agreed = FP.removeprefix("sha256:").upper()
    pin = run(
        ops.pin_fingerprint(later(pins), "capsule.example", 1965, OTHER, EPOCH, replacing=agreed)
    )
    assert pin.fingerprint == OTHER and pins.all() == [pin]


def test_pin_fingerprint_same_again_is_idempotent(pins: Any) -> None:
    """Pinning the fingerprint already pinned succeeds and keeps the learnt pin as it is."""
    pins.put(a_pin())
    assert (
        run(ops.pin_fingerprint(later(pins), "capsule.example", 1965, FP.upper(), EPOCH)) == a_pin()
    )
    assert pins.all() == [a_pin()]


def test_pin_fingerprint_other_port_is_another_pin(pins: Any) -> None:
    """A pin on one port does not stand in the way of a pin on another."""
    pins.put(a_pin())
    pin = run(ops.pin_fingerprint(later(pins), "capsule.example", 1966, OTHER, EPOCH))
    assert pins.all() == [a_pin(), pin]


def test_pin_in_the_way(pins: Any) -> None:
    """pin_in_the_way names only a pin that pinning would replace."""
    assert run(ops.pin_in_the_way(later(pins), "capsule.example", 1965, OTHER)) is None
    pins.put(a_pin())
    assert run(ops.pin_in_the_way(later(pins), "capsule.example", 1965, FP)) is None
    assert run(ops.pin_in_the_way(later(pins), "CAPSULE.example", 1965, OTHER)) == a_pin()
    with pytest.raises(InvalidRequest):
        run(ops.pin_in_the_way(later(pins), "*.example", 1965, OTHER))


@pytest.mark.parametrize(
    ("host", "fingerprint"),
    [("*.capsule.example", FP), ("capsule.example", "not a fingerprint")],
)
def test_pin_fingerprint_refuses_wildcards_and_junk(pins: Any, host: str, fingerprint: str) -> None:
    """pin refuses wildcard hosts and malformed fingerprints; nothing changes."""
    pins.put(a_pin())
    with pytest.raises(InvalidRequest):
        run(ops.pin_fingerprint(later(pins), host, 1965, fingerprint, EPOCH))
    assert pins.all() == [a_pin()]


# --- identities ------------------------------------------------------------------------


def test_identity_operations_need_a_store() -> None:
    """Without an identity store every identity operation is CLIENT_CERTS_DISABLED."""
    with pytest.raises(ClientCertsDisabled):
        run(ops.list_identities(later(None)))
    with pytest.raises(ClientCertsDisabled):
        run(ops.create_identity(later(None), "gemini://capsule.example/", EPOCH))
    with pytest.raises(ClientCertsDisabled):
        run(ops.remove_identity(later(None), "gemini://capsule.example/", FP))


def test_create_identity_scope(identities: Any) -> None:
    """create scopes an identity to the URL's host, port and path prefix ending in a slash."""
    identity = run(
        ops.create_identity(later(identities), "gemini://Capsule.Example:1966/app", EPOCH)
    )
    assert (identity.host, identity.port, identity.path) == ("capsule.example", 1966, "/app/")
    assert identity.fingerprint.startswith("sha256:") and len(identity.fingerprint) == 71
    assert identity.not_before <= EPOCH < identity.not_after
    assert identities.find("capsule.example", 1966, "/app/page") == identity
    assert identities.find("capsule.example", 1966, "/apple") is None
    assert identities.find("capsule.example", 1965, "/app/page") is None


def test_create_identity_twice_is_certificate_exists(identities: Any) -> None:
    """A second create for the same scope is CERTIFICATE_EXISTS naming the first; it is kept."""
    first = run(ops.create_identity(later(identities), "gemini://capsule.example/app/", EPOCH))
    with pytest.raises(CertificateExists) as caught:
        run(ops.create_identity(later(identities), "gemini://capsule.example/app", EPOCH + 5))
    assert first.fingerprint in caught.value.message
    assert identities.all() == [first]


def test_narrower_scope_beside_wider(identities: Any) -> None:
    """An identity for /app/ may sit beside one for /; the longer scope is used inside it."""
    whole = run(ops.create_identity(later(identities), "gemini://capsule.example/", EPOCH))
    app = run(ops.create_identity(later(identities), "gemini://capsule.example/app/", EPOCH))
    assert identities.find("capsule.example", 1965, "/app/x") == app
    assert identities.find("capsule.example", 1965, "/other") == whole


@pytest.mark.parametrize(
    "url",
    ["gemini://capsule.example/app/?q", "gopher://capsule.example/", "", None, "gemini://"],
)
def test_create_identity_refuses_bad_scopes(identities: Any, url: Any) -> None:
    """A scope with a query, another scheme or no host is INVALID_REQUEST; nothing is made."""
    with pytest.raises(InvalidRequest):
        run(ops.create_identity(later(identities), url, EPOCH))
    assert identities.all() == []


def test_remove_identity_needs_its_fingerprint(identities: Any) -> None:
    """remove needs the identity's own fingerprint: none or a wrong one changes nothing."""
    identity = run(ops.create_identity(later(identities), "gemini://capsule.example/app/", EPOCH))
    with pytest.raises(InvalidRequest):
        run(ops.remove_identity(later(identities), "gemini://capsule.example/app/", None))
    with pytest.raises(FingerprintMismatch) as caught:
        run(ops.remove_identity(later(identities), "gemini://capsule.example/app/", OTHER))
    assert identity.fingerprint in caught.value.message
    with pytest.raises(FingerprintMismatch):
        run(
            ops.remove_identity(
                later(identities), "gemini://capsule.example/", identity.fingerprint
            )
        )
    assert identities.all() == [identity]
    spelled = identity.fingerprint.removeprefix("sha256:").upper()
    assert (
        run(ops.remove_identity(later(identities), "gemini://capsule.example/app", spelled))
        == identity
    )
    assert identities.all() == []


def test_list_identities_by_host_without_secrets(identities: Any) -> None:
    """list_identities filters by host and its values carry no key or file name."""
    mine = run(ops.create_identity(later(identities), "gemini://capsule.example/", EPOCH))
    run(ops.create_identity(later(identities), "gemini://other.example/", EPOCH))
    assert run(ops.list_identities(later(identities), "CAPSULE.example")) == [mine]
    assert len(run(ops.list_identities(later(identities)))) == 2
    assert {f.name for f in attrs.fields(Identity)} == {
        "host",
        "port",
        "path",
        "fingerprint",
        "not_before",
        "not_after",
    }
    with pytest.raises(InvalidRequest):
        run(ops.list_identities(later(identities), "*"))
