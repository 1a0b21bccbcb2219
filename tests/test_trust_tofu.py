"""
Tests for L{gophergem.trust.tofu}: trust on first use in one object, on a
memory pin store and a fake clock.
"""

from __future__ import annotations

import attrs
import pytest
from twisted.internet.task import Clock

from gophergem.errors import CertificateChanged, TofuDisabled
from gophergem.testing import EPOCH
from gophergem.trust.decision import PresentedCertificate, Verdict
from gophergem.trust.pins import MemoryPinStore
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


def tofu(pins: MemoryPinStore | None = None, **options: bool) -> TrustOnFirstUse:
    clock = Clock()
    clock.advance(EPOCH)
    return TrustOnFirstUse(clock, pins, **options)


def test_judge_reads_the_pin() -> None:
    """judge decides against the stored pin: no pin is first use, the same one a match."""
    pins = MemoryPinStore()
    trust = tofu(pins)
    first = trust.judge(HOST, PORT, presented())
    assert first.verdict is Verdict.FIRST_USE and pins.pins == {}  # nothing written yet
    trust.commit(first)
    assert pins.get(HOST, PORT) == first.pin
    assert trust.judge(HOST, PORT, presented()).verdict is Verdict.MATCH


def test_judge_without_a_store_pins_nothing() -> None:
    """With trust on first use off, a certificate is judged for validity only."""
    trust = tofu(None)
    decision = trust.judge(HOST, PORT, presented())
    assert decision.verdict is Verdict.UNPINNED and decision.pin is None
    trust.commit(decision)  # nothing to write, no store to write to


def test_commit_of_nothing_is_nothing() -> None:
    """A handshake that never judged a certificate commits nothing."""
    pins = MemoryPinStore()
    tofu(pins).commit(None)
    assert pins.pins == {}


def test_first_use_race_lost_to_the_same_certificate() -> None:
    """
    When another process pinned the same certificate since the handshake
    began, its pin stands and is refreshed: the connection goes on.
    """
    pins = MemoryPinStore()
    trust = tofu(pins)
    decision = trust.judge(HOST, PORT, presented())
    assert decision.pin is not None
    other = attrs.evolve(decision.pin, first_seen=EPOCH - DAY)
    pins.put(other)  # the other process, between judge and commit
    trust.commit(decision)
    stored = pins.get(HOST, PORT)
    assert stored is not None and stored.first_seen == EPOCH - DAY
    assert stored.fingerprint == FP_A


def test_first_use_race_lost_to_another_key_refuses() -> None:
    """When another process pinned another key in the meantime, commit refuses."""
    pins = MemoryPinStore()
    trust = tofu(pins)
    decision = trust.judge(HOST, PORT, presented())
    theirs = trust.judge(HOST, PORT, presented(FP_B, KEY_2)).pin
    assert theirs is not None
    pins.put(theirs)
    with pytest.raises(CertificateChanged):
        trust.commit(decision)
    assert pins.get(HOST, PORT) == theirs


def test_facts_for_request_info() -> None:
    """facts names the version, cipher, fingerprint and warnings, as request_info spells them."""
    trust = tofu(MemoryPinStore())
    decision = trust.judge(HOST, PORT, presented())
    assert trust.facts(decision, "TLSv1.3", "AES") == {
        "tls_version": "TLSv1.3",
        "cipher": "AES",
        "cert_fingerprint": FP_A,
    }
    assert trust.facts(None, None, None) == {"tls_version": None, "cipher": None}
    facts = trust.facts(decision, "TLSv1.2", "AES", identity_presented=True)
    assert facts["client_cert_warning"] == TLS_1_2_CLIENT_CERT_WARNING
    assert "client_cert_warning" not in trust.facts(
        decision, "TLSv1.3", "AES", identity_presented=True
    )


def test_trust_presented_repins() -> None:
    """On consent, the presented certificate replaces the pin, first seen now."""
    pins = MemoryPinStore()
    trust = tofu(pins)
    trust.commit(trust.judge(HOST, PORT, presented()))
    pin = trust.trust_presented(HOST, PORT, presented(FP_B, KEY_2))
    assert pins.get(HOST, PORT) == pin
    assert (pin.fingerprint, pin.first_seen) == (FP_B, EPOCH)


def test_trust_presented_without_a_store() -> None:
    """Re-pinning with trust on first use off is TOFU_DISABLED."""
    with pytest.raises(TofuDisabled):
        tofu(None).trust_presented(HOST, PORT, presented())
