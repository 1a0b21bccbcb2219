"""
Tests for L{gophergem.tls}: L{GeminiTLSCreator} over real OpenSSL in memory
(C{TLSMemoryBIOFactory} at both ends, joined by iosim).  The pure decision it
calls is tested in C{tests/test_trust_decision.py}.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import attrs
from cryptography.hazmat.primitives.serialization import Encoding
from OpenSSL import SSL
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from zope.interface.verify import verifyObject

from gophergem.errors import (
    CertificateChanged,
    CertificateUnverified,
)
from gophergem.testing import make_certificate
from gophergem.tls import GeminiTLSCreator
from gophergem.trust.decision import PresentedCertificate, TrustDecision, Verdict, decide
from tests.helpers.tls import RecordingServerTLS, tls_loopback
from tests.helpers.trust import NOW, _cert, pinned

# --- GeminiTLSCreator over real OpenSSL in memory --------------------------------------


def accept_all(host: str = "localhost") -> tuple[Callable[..., TrustDecision], list[Any]]:
    seen: list[PresentedCertificate] = []

    def judge_(cert: PresentedCertificate) -> TrustDecision:
        seen.append(cert)
        return decide(host, 1965, None, cert, NOW)

    return judge_, seen


def server_tls(hostname: str = "localhost", **options: Any) -> RecordingServerTLS:
    return RecordingServerTLS(*make_certificate(hostname, now=NOW), **options)


def test_creator_provides_interface() -> None:
    """GeminiTLSCreator provides IOpenSSLClientConnectionCreator."""
    creator = GeminiTLSCreator("localhost", accept_all()[0])
    assert verifyObject(IOpenSSLClientConnectionCreator, creator)


def test_creator_judges_once_and_connects() -> None:
    """The judge sees the server's certificate once; the decision, version and cipher are kept."""
    tls = server_tls()
    judge_, seen = accept_all()
    creator = GeminiTLSCreator("localhost", judge_)
    client, server, _ = tls_loopback(creator, tls)
    (facts,) = seen
    der = _cert(tls.certificate_pem).public_bytes(Encoding.DER)
    assert facts.fingerprint == "sha256:" + hashlib.sha256(der).hexdigest()
    assert facts.names_host is True
    assert creator.decision is not None and creator.decision.verdict is Verdict.FIRST_USE
    assert creator.tls_version == "TLSv1.3" and creator.cipher
    assert (client.handshakes, server.received, client.received) == (1, b"hello\r\n", b"ok")


def test_creator_sends_sni_for_names_only() -> None:
    """SNI carries the host name, and is left out when the host is an IP address."""
    tls = server_tls()
    tls_loopback(GeminiTLSCreator("localhost", accept_all()[0]), tls)
    tls_loopback(GeminiTLSCreator("192.0.2.20", accept_all("192.0.2.20")[0]), tls)
    assert tls.names == [b"localhost", None]


def test_creator_refuses_below_tls_1_2() -> None:
    """A server offering only TLS 1.1 fails the handshake; nothing is judged or sent."""
    tls = server_tls(max_version=SSL.TLS1_1_VERSION)
    judge_, seen = accept_all()
    client, server, _ = tls_loopback(GeminiTLSCreator("localhost", judge_), tls)
    assert seen == [] and client.handshakes == 0 and server.received == b""
    assert client.lost is not None and client.lost.check(SSL.Error)


def test_creator_accepts_tls_1_2() -> None:
    """A TLS 1.2 server is accepted and the version recorded."""
    creator = GeminiTLSCreator("localhost", accept_all()[0])
    _, server, _ = tls_loopback(creator, server_tls(max_version=SSL.TLS1_2_VERSION))
    assert creator.tls_version == "TLSv1.2" and server.received == b"hello\r\n"


def test_refusal_aborts_before_any_byte_is_sent() -> None:
    """A refusal aborts the connection with that error; a write after it never arrives."""
    refusal = CertificateChanged(message="changed")

    def refuse(cert: PresentedCertificate) -> TrustDecision:
        return attrs.evolve(decide("localhost", 1965, None, cert, NOW), refusal=refusal, pin=None)

    client, server, _ = tls_loopback(GeminiTLSCreator("localhost", refuse), server_tls())
    assert server.received == b""
    assert client.lost is not None and client.lost.value is refusal


def test_judge_exception_fails_closed() -> None:
    """An unexpected exception in the judge aborts the handshake as CERTIFICATE_UNVERIFIED."""

    def broken(cert: PresentedCertificate) -> TrustDecision:
        raise RuntimeError("bug in the judge")

    client, server, _ = tls_loopback(GeminiTLSCreator("localhost", broken), server_tls())
    assert server.received == b""
    assert client.lost is not None and client.lost.check(CertificateUnverified)


def test_credentials_presented_to_server() -> None:
    """With credentials the server is shown that client certificate; without, none."""
    identity_pem, identity_key = make_certificate("gophergem-test", now=NOW)
    tls = server_tls()
    tls_loopback(GeminiTLSCreator("localhost", accept_all()[0], (identity_pem, identity_key)), tls)
    assert {c.public_bytes(Encoding.DER) for c in tls.client_certs} == {
        _cert(identity_pem).public_bytes(Encoding.DER)
    }
    bare = server_tls()
    tls_loopback(GeminiTLSCreator("localhost", accept_all()[0]), bare)
    assert bare.client_certs == []


def test_refused_server_never_sees_the_client_identity() -> None:
    """A server refused by the trust decision is never shown the client identity."""
    identity_pem, identity_key = make_certificate("gophergem-test", now=NOW)

    def refuse(cert: PresentedCertificate) -> TrustDecision:
        stale = pinned("sha256:" + "c" * 64, "sha256:" + "d" * 64)
        return decide("localhost", 1965, attrs.evolve(stale, host="localhost"), cert, NOW)

    tls = server_tls()
    creator = GeminiTLSCreator("localhost", refuse, (identity_pem, identity_key))
    _, server, _ = tls_loopback(creator, tls)
    assert isinstance(creator.decision and creator.decision.refusal, CertificateChanged)
    assert server.received == b""
    assert tls.client_certs == []
