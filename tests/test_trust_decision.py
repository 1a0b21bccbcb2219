"""
Tests for L{gophergem.trust.decision} and L{gophergem.trust.fingerprints}:
the pure trust decision (a table), fingerprint spelling, and what is read
from a certificate.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import attrs
import pytest
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem._time import format_utc
from gophergem.errors import (
    CertificateChanged,
    CertificateExpired,
    CertificateNotYetValid,
    GophergemError,
)
from gophergem.testing import make_certificate
from gophergem.trust import Pin
from gophergem.trust.decision import (
    CLOCK_SKEW_SECONDS,
    PresentedCertificate,
    TrustDecision,
    Verdict,
    decide,
)
from gophergem.trust.fingerprints import normalise_fingerprint
from tests.helpers.trust import DAY, FP_A, FP_B, HOST, KEY_1, KEY_2, NOW, PORT, _cert, pinned


def presented(
    fingerprint: str = FP_A,
    spki: str = KEY_1,
    *,
    not_before: float = NOW - DAY,
    not_after: float = NOW + 365 * DAY,
    names_host: bool = True,
) -> PresentedCertificate:
    return PresentedCertificate(
        fingerprint=fingerprint,
        spki=spki,
        not_before=not_before,
        not_after=not_after,
        names_host=names_host,
    )


def judge(pin: Pin | None, cert: PresentedCertificate, **options: Any) -> TrustDecision:
    return decide(HOST, PORT, pin, cert, NOW, **options)


# --- decide: the pure table -------------------------------------------------------


def test_first_use_pins() -> None:
    """Without a pin the certificate is pinned, first and last seen now, with its dates."""
    cert = presented()
    decision = judge(None, cert)
    assert decision.verdict is Verdict.FIRST_USE
    assert decision.refusal is None and decision.warnings == ()
    assert decision.pin == Pin(
        host=HOST,
        port=PORT,
        fingerprint=FP_A,
        spki=KEY_1,
        first_seen=NOW,
        last_seen=NOW,
        not_before=cert.not_before,
        expires=cert.not_after,
    )


def test_same_certificate_matches() -> None:
    """The pinned certificate matches: last_seen is refreshed and first_seen kept."""
    decision = judge(pinned(), presented())
    assert decision.verdict is Verdict.MATCH
    assert decision.refusal is None and decision.warnings == ()
    assert decision.pin is not None
    assert (decision.pin.first_seen, decision.pin.last_seen) == (NOW - 30 * DAY, NOW)
    assert decision.pin.fingerprint == FP_A


def test_same_key_reissue_repins_with_warning() -> None:
    """A new certificate for the pinned key is accepted with a warning and the new one pinned."""
    decision = judge(pinned(FP_A, KEY_1), presented(FP_B, KEY_1))
    assert decision.verdict is Verdict.SAME_KEY_REISSUE
    assert decision.refusal is None
    assert decision.pin is not None
    assert (decision.pin.fingerprint, decision.pin.spki) == (FP_B, KEY_1)
    assert decision.pin.first_seen == NOW - 30 * DAY
    (warning,) = decision.warnings
    assert "reissue" in warning and FP_B in warning


@pytest.mark.parametrize(
    ("expires", "expired"),
    [(NOW + 10 * DAY, False), (NOW - 10 * DAY, True)],
    ids=["pin-still-valid", "pin-expired"],
)
def test_new_key_is_certificate_changed(expires: float, expired: bool) -> None:
    """A new key is refused as CERTIFICATE_CHANGED with both fingerprints and the old expiry."""
    cert = presented(FP_B, KEY_2)
    decision = judge(pinned(FP_A, KEY_1, expires=expires), cert)
    assert decision.verdict is Verdict.CHANGED
    assert decision.pin is None
    refusal = decision.refusal
    assert isinstance(refusal, CertificateChanged)
    assert refusal.code == "CERTIFICATE_CHANGED"
    assert (refusal.pinned_fingerprint, refusal.presented_fingerprint) == (FP_A, FP_B)
    assert refusal.pinned_expires == format_utc(expires)
    assert refusal.pinned_expired is expired
    assert refusal.presented is cert
    fields = refusal.fields()
    assert fields["pinned_expired"] is expired and fields["presented_fingerprint"] == FP_B
    assert "presented" not in fields


def test_new_key_against_imported_pin_has_unknown_expiry() -> None:
    """A pin without a known expiry reports pinned_expires as null and not expired."""
    decision = judge(pinned(FP_A, "", expires=0.0), presented(FP_B, KEY_2))
    refusal = decision.refusal
    assert isinstance(refusal, CertificateChanged)
    assert (refusal.pinned_expires, refusal.pinned_expired) == (None, False)


def test_not_yet_valid_beyond_skew_refused() -> None:
    """A certificate valid only more than five minutes from now is CERTIFICATE_NOT_YET_VALID."""
    decision = judge(None, presented(not_before=NOW + CLOCK_SKEW_SECONDS + 1))
    assert decision.verdict is Verdict.NOT_YET_VALID
    assert isinstance(decision.refusal, CertificateNotYetValid)
    assert decision.refusal.code == "CERTIFICATE_NOT_YET_VALID"
    assert decision.pin is None


def test_not_yet_valid_within_skew_accepted() -> None:
    """A certificate starting within five minutes of now is accepted and pinned."""
    decision = judge(None, presented(not_before=NOW + CLOCK_SKEW_SECONDS))
    assert decision.verdict is Verdict.FIRST_USE
    assert decision.refusal is None and decision.pin is not None


def test_expired_accepted_with_warning() -> None:
    """An expired certificate is pinned with a warning by default."""
    decision = judge(None, presented(not_after=NOW - 1))
    assert decision.verdict is Verdict.FIRST_USE
    assert decision.refusal is None and decision.pin is not None
    (warning,) = decision.warnings
    assert "expired" in warning


def test_expired_refused_when_configured() -> None:
    """With reject_expired an expired certificate is CERTIFICATE_EXPIRED and nothing is pinned."""
    decision = judge(pinned(), presented(not_after=NOW - 1), reject_expired=True)
    assert decision.verdict is Verdict.EXPIRED
    assert isinstance(decision.refusal, CertificateExpired)
    assert decision.refusal.code == "CERTIFICATE_EXPIRED"
    assert decision.pin is None


def test_hostname_mismatch_is_only_a_warning() -> None:
    """A certificate naming another host is pinned with a warning, never refused."""
    decision = judge(None, presented(names_host=False))
    assert decision.verdict is Verdict.FIRST_USE
    assert decision.refusal is None and decision.pin is not None
    (warning,) = decision.warnings
    assert "another name" in warning


def test_pinning_off_pins_nothing() -> None:
    """With pinning off nothing is pinned or compared, even against an existing pin."""
    decision = judge(pinned(FP_A, KEY_1), presented(FP_B, KEY_2), pinning=False)
    assert decision.verdict is Verdict.UNPINNED
    assert decision.refusal is None and decision.pin is None


def test_imported_pin_without_spki_matches_on_fingerprint() -> None:
    """A pin imported without an SPKI matches on fingerprint and learns the key and dates."""
    cert = presented(FP_A, KEY_1)
    decision = judge(pinned(FP_A, "", expires=0.0), cert)
    assert decision.verdict is Verdict.MATCH
    assert decision.pin is not None
    assert (decision.pin.spki, decision.pin.expires) == (KEY_1, cert.not_after)


def test_imported_pin_without_spki_is_no_same_key_evidence() -> None:
    """An imported pin (no SPKI) never treats another certificate as a same-key reissue."""
    decision = judge(pinned(FP_A, ""), presented(FP_B, ""))
    assert decision.verdict is Verdict.CHANGED


_fingerprints = st.sampled_from([FP_A, FP_B])
_keys = st.sampled_from([KEY_1, KEY_2, ""])
_times = st.floats(min_value=NOW - 1000 * DAY, max_value=NOW + 1000 * DAY)


@settings(max_examples=100, deadline=None)
@given(
    pin=st.none()
    | st.builds(
        lambda f, k, e: pinned(f, k, expires=e), _fingerprints, _keys, _times | st.just(0.0)
    ),
    cert=st.builds(
        lambda f, k, b, a, n: presented(f, k, not_before=b, not_after=a, names_host=n),
        _fingerprints,
        st.sampled_from([KEY_1, KEY_2]),
        _times,
        _times,
        st.booleans(),
    ),
    reject_expired=st.booleans(),
    pinning=st.booleans(),
)
def test_decision_is_refusal_or_pin_never_both(
    pin: Pin | None, cert: PresentedCertificate, reject_expired: bool, pinning: bool
) -> None:
    """Every decision either refuses (pinning nothing) or goes on; it pins only when pinning."""
    decision = judge(pin, cert, reject_expired=reject_expired, pinning=pinning)
    if decision.refusal is not None:
        assert decision.pin is None
        assert isinstance(decision.refusal, GophergemError)
    elif pinning:
        assert decision.pin is not None and decision.pin.fingerprint == cert.fingerprint
    else:
        assert decision.pin is None


# --- fingerprints -------------------------------------------------------------------

HEX = "0123456789abcdef" * 4
WANT = "sha256:" + HEX
COLONS = ":".join(HEX[i : i + 2] for i in range(0, 64, 2))


@pytest.mark.parametrize(
    "spelling",
    [
        HEX,
        HEX.upper(),
        COLONS,
        COLONS.upper(),
        "sha256:" + HEX,
        "SHA256:" + COLONS.upper(),
        "  sha256:" + HEX + "\n",
    ],
)
def test_fingerprint_spellings(spelling: str) -> None:
    """Hex with or without colons, in any case, with an optional sha256: prefix, is accepted."""
    assert normalise_fingerprint(spelling) == WANT


@pytest.mark.parametrize(
    "junk",
    [
        "",
        "sha256:",
        HEX[:-1],
        HEX + "0",
        "g" * 64,
        "sha1:" + HEX,
        "0x" + HEX[2:],
        "sha256:sha256:" + HEX,
        "\u0660" * 64,  # Arabic-Indic digits are digits, not hex
        None,
        64,
    ],
)
def test_fingerprint_junk_refused(junk: Any) -> None:
    """Anything that is not 64 hex digits is refused with None."""
    assert normalise_fingerprint(junk) is None


@settings(max_examples=200)
@given(st.text())
def test_fingerprint_never_raises(text: str) -> None:
    """normalise_fingerprint never raises and returns None or sha256: with 64 lower-case hex."""
    result = normalise_fingerprint(text)
    assert result is None or re.fullmatch(r"sha256:[0-9a-f]{64}", result)


@given(st.binary(min_size=32, max_size=32), st.booleans(), st.booleans(), st.booleans())
def test_fingerprint_spellings_agree(
    digest: bytes, colons: bool, upper: bool, prefix: bool
) -> None:
    """Every spelling of the same digest normalises to the same value."""
    text = digest.hex(":") if colons else digest.hex()
    text = text.upper() if upper else text
    text = ("sha256:" + text) if prefix else text
    assert normalise_fingerprint(text) == "sha256:" + digest.hex()


# --- PresentedCertificate ----------------------------------------------------------


def test_presented_reads_fingerprints_and_dates() -> None:
    """The fingerprint hashes the DER certificate, spki its public key, and dates are read."""
    cert_pem, _ = make_certificate("capsule.example", now=NOW)
    cert = _cert(cert_pem)
    facts = PresentedCertificate.from_cryptography(cert, "capsule.example")
    spki = cert.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    assert (
        facts.fingerprint == "sha256:" + hashlib.sha256(cert.public_bytes(Encoding.DER)).hexdigest()
    )
    assert facts.spki == "sha256:" + hashlib.sha256(spki).hexdigest()
    assert (facts.not_before, facts.not_after) == (NOW - DAY, NOW + 365 * DAY)
    assert facts.names_host is True


def test_presented_name_checks() -> None:
    """A certificate for another name, or an address it does not name, does not name the host."""
    cert = _cert(make_certificate("capsule.example", now=NOW)[0])
    assert not PresentedCertificate.from_cryptography(cert, "other.example").names_host
    assert not PresentedCertificate.from_cryptography(cert, "192.0.2.1").names_host


def test_same_key_reissue_keeps_spki() -> None:
    """Two certificates for one key differ in fingerprint and share their SPKI."""
    key = ec.generate_private_key(ec.SECP256R1())
    one = PresentedCertificate.from_cryptography(
        _cert(make_certificate(key=key, now=NOW)[0]), "localhost"
    )
    two = PresentedCertificate.from_cryptography(
        _cert(make_certificate(key=key, now=NOW + DAY)[0]), "localhost"
    )
    assert one.fingerprint != two.fingerprint and one.spki == two.spki


def test_decision_is_a_value() -> None:
    """A TrustDecision is a frozen value: equal inputs give equal decisions."""
    assert judge(pinned(), presented()) == judge(pinned(), presented())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        judge(None, presented()).pin = None  # type: ignore[misc]
