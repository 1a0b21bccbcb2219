"""
Tests for L{gophergem.trust.tofu}: trust on first use in one object, on a
memory pin store and a fake clock; each test runs with the store answering
at once, with Deferreds, and with Deferreds that fire only when the clock
moves (L{gophergem.testing.DeferringStore}).
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from gophergem.errors import CertificateChanged, CertificateStoreUnavailable, TofuDisabled
from gophergem.state.memory import MemoryPinStore
from gophergem.testing import EPOCH, DeferringStore
from gophergem.trust import Pin
from gophergem.trust.decision import PresentedCertificate, TrustDecision, Verdict
from gophergem.trust.tofu import TLS_1_2_CLIENT_CERT_WARNING, TrustOnFirstUse

HOST, PORT = "capsule.example", 1965
DAY = 86400.0
FP_A, FP_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
KEY_1, KEY_2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64


def presented(fingerprint: str = FP_A, spki: str = KEY_1) -> PresentedCertificate:
    return PresentedCertificate(
        fingerprint=fingerprint,
        spki=spki,
        not_before=EPOCH - DAY,
        not_after=EPOCH + 365 * DAY,
        names_host=True,
    )


@attrs.define
class Trust:
    """A L{TrustOnFirstUse} on C{pins} (seen through the answering mode) and its clock."""

    tofu: TrustOnFirstUse
    clock: Clock

    def wait(self, d: Deferred[Any] | None) -> Any:
        """The result of C{d}, moving the clock as a reactor would; raise what it failed with."""
        if d is None:
            return None
        box: list[Any] = []
        d.addBoth(box.append)
        for _ in range(10):
            if box:
                break
            self.clock.advance(0)
        assert box, "the Deferred never fired"
        if isinstance(box[0], Failure):
            box[0].raiseException()
        return box[0]

    def judge(self, presented: PresentedCertificate) -> TrustDecision:
        """Read the pin as the pipeline does before connecting, then judge."""
        pinned = self.wait(self.tofu.pinned(HOST, PORT))
        return self.tofu.judge(HOST, PORT, presented, pinned)


@pytest.fixture(params=["plain", "deferred", "clocked"])
def answers(request: pytest.FixtureRequest) -> str:
    """How the pin store answers: plain values, Deferreds, Deferreds on the clock."""
    return str(request.param)


@pytest.fixture
def make(answers: str) -> Any:
    def build(pins: MemoryPinStore | None, **options: bool) -> Trust:
        clock = Clock()
        clock.advance(EPOCH)
        store: Any = pins
        if pins is not None and answers != "plain":
            store = DeferringStore(pins, clock if answers == "clocked" else None)
        return Trust(TrustOnFirstUse(clock, store, **options), clock)

    return build


def test_judge_against_the_pin_read_before(make: Any) -> None:
    """judge decides against the pin read first: no pin is first use, the same one a match."""
    pins = MemoryPinStore()
    trust = make(pins)
    first = trust.judge(presented())
    assert first.verdict is Verdict.FIRST_USE and pins.pins == {}  # nothing written yet
    trust.wait(trust.tofu.commit(first))
    assert pins.get(HOST, PORT) == first.pin
    assert trust.judge(presented()).verdict is Verdict.MATCH


def test_judge_is_pure(make: Any) -> None:
    """judge reads no store: it is given the pin (it runs inside the TLS handshake)."""
    pins = MemoryPinStore()
    trust = make(pins)
    pin = trust.judge(presented()).pin
    assert pin is not None
    decision = trust.tofu.judge(HOST, PORT, presented(FP_B, KEY_2), pin)
    assert isinstance(decision.refusal, CertificateChanged)
    assert pins.pins == {}


def test_pinned_failure_is_the_store_error(make: Any) -> None:
    """A store that cannot be read fails the read with its coded error."""

    class Locked(MemoryPinStore):
        def get(self, host: str, port: int) -> Pin | None:
            raise CertificateStoreUnavailable(message="The pin store is locked.")

    trust = make(Locked())
    with pytest.raises(CertificateStoreUnavailable):
        trust.wait(trust.tofu.pinned(HOST, PORT))


def test_judge_without_a_store_pins_nothing(make: Any) -> None:
    """With trust on first use off, a certificate is judged for validity only."""
    trust = make(None)
    decision = trust.judge(presented())
    assert decision.verdict is Verdict.UNPINNED and decision.pin is None
    assert trust.tofu.commit(decision) is None  # nothing to write, no store to write to


def test_commit_of_nothing_is_nothing(make: Any) -> None:
    """A handshake that never judged a certificate commits nothing."""
    pins = MemoryPinStore()
    assert make(pins).tofu.commit(None) is None
    assert pins.pins == {}


def test_commit_waits_for_the_store(make: Any, answers: str) -> None:
    """commit answers with a Deferred that fires once the pin is stored."""
    pins = MemoryPinStore()
    trust = make(pins)
    committed = trust.tofu.commit(trust.judge(presented()))
    assert isinstance(committed, Deferred)
    if answers == "clocked":
        assert not committed.called and pins.pins == {}
    trust.wait(committed)
    assert pins.get(HOST, PORT) is not None


def test_first_use_race_lost_to_the_same_certificate(make: Any) -> None:
    """
    When another process pinned the same certificate since the pin was
    read, its pin stands and is refreshed: the connection goes on.
    """
    pins = MemoryPinStore()
    trust = make(pins)
    decision = trust.judge(presented())
    assert decision.pin is not None
    other = attrs.evolve(decision.pin, first_seen=EPOCH - DAY)
    pins.put(other)  # the other process, between judge and commit
    trust.wait(trust.tofu.commit(decision))
    stored = pins.get(HOST, PORT)
    assert stored is not None and stored.first_seen == EPOCH - DAY
    assert stored.fingerprint == FP_A


def test_first_use_race_lost_to_another_key_refuses(make: Any) -> None:
    """When another process pinned another key in the meantime, commit refuses."""
    pins = MemoryPinStore()
    trust = make(pins)
    decision = trust.judge(presented())
    theirs = trust.judge(presented(FP_B, KEY_2)).pin
    assert theirs is not None
    pins.put(theirs)
    with pytest.raises(CertificateChanged):
        trust.wait(trust.tofu.commit(decision))
    assert pins.get(HOST, PORT) == theirs


def test_facts_for_request_info(make: Any) -> None:
    """facts names the version, cipher, fingerprint and warnings, as request_info spells them."""
    trust = make(MemoryPinStore())
    decision = trust.judge(presented())
    facts = trust.tofu.facts
    assert facts(decision, "TLSv1.3", "AES") == {
        "tls_version": "TLSv1.3",
        "cipher": "AES",
        "cert_fingerprint": FP_A,
    }
    assert facts(None, None, None) == {"tls_version": None, "cipher": None}
    tls_1_2 = facts(decision, "TLSv1.2", "AES", identity_presented=True)
    assert tls_1_2["client_cert_warning"] == TLS_1_2_CLIENT_CERT_WARNING
    assert "client_cert_warning" not in facts(decision, "TLSv1.3", "AES", identity_presented=True)


def test_trust_presented_repins(make: Any) -> None:
    """On consent, the presented certificate replaces the pin, first seen now."""
    pins = MemoryPinStore()
    trust = make(pins)
    trust.wait(trust.tofu.commit(trust.judge(presented())))
    pin = trust.wait(trust.tofu.trust_presented(HOST, PORT, presented(FP_B, KEY_2)))
    assert pins.get(HOST, PORT) == pin
    assert (pin.fingerprint, pin.first_seen) == (FP_B, EPOCH)


def test_trust_presented_without_a_store(make: Any) -> None:
    """Re-pinning with trust on first use off is TOFU_DISABLED."""
    with pytest.raises(TofuDisabled):
        make(None).tofu.trust_presented(HOST, PORT, presented())
