# -*- test-case-name: tests.test_tls -*-
"""
TLS for Gemini: the client connection creator, with trust on first use
decided inside the handshake.

L{GeminiTLSCreator} is an C{IOpenSSLClientConnectionCreator}: TLS 1.2 or
later, SNI with the host name, a client certificate when an identity covers
the request, and a verify callback that ignores the chain (Gemini
certificates are self-signed) but judges the leaf (L{gophergem.trust.tofu})
as soon as it arrives, aborting the handshake on a refusal: before the
client sends its own certificate and before any request byte.  Both
callbacks fail closed: an exception in them aborts the handshake.

The decision itself is pure and lives in L{gophergem.trust.decision}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import attrs
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from OpenSSL import SSL
from OpenSSL.crypto import X509
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gophergem.errors import CertificateUnverified, GophergemError
from gophergem.policy.addresses import parse_ip_literal
from gophergem.trust.decision import PresentedCertificate, TrustDecision

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa

    # The private key types pyOpenSSL's Context.use_privatekey accepts; it
    # raises TypeError on the others load_pem_private_key can return.
    _OpenSSLPrivateKey = (
        dsa.DSAPrivateKey
        | ec.EllipticCurvePrivateKey
        | ed25519.Ed25519PrivateKey
        | ed448.Ed448PrivateKey
        | rsa.RSAPrivateKey
    )

__all__ = ["GeminiTLSCreator", "use_private_key"]

log = Logger()


def use_private_key(context: SSL.Context, key_pem: bytes) -> None:
    """
    Load the unencrypted PEM private key C{key_pem} into C{context}: the one
    place that hands a key to pyOpenSSL (for the client's certificate here,
    for the test servers' in L{gophergem.testing}).

    @raise TypeError: The key is of a type pyOpenSSL does not take.
    """
    key = load_pem_private_key(key_pem, password=None)
    context.use_privatekey(cast("_OpenSSLPrivateKey", key))


def _fail_closed(callback: Callable[..., Any]) -> Callable[..., Any]:
    """
    Wrap an OpenSSL callback so that any exception aborts the handshake with
    that exception as the reason, instead of being swallowed.
    """

    def wrapper(connection: SSL.Connection, *args: Any) -> Any:
        try:
            return callback(connection, *args)
        except BaseException as exc:
            error = (
                exc
                if isinstance(exc, GophergemError)
                else CertificateUnverified(message="The server's certificate could not be checked.")
            )
            if not isinstance(exc, GophergemError):
                log.failure("TLS callback failed", Failure(exc))
            protocol = connection.get_app_data()
            if protocol is not None:
                protocol.failVerification(Failure(error))
            return False

    return wrapper


@implementer(IOpenSSLClientConnectionCreator)
@attrs.define
class GeminiTLSCreator:
    """
    Make the client side of one Gemini TLS connection.

    @ivar host: The host name (for SNI and the decision; never an address
        the connection was dialled at).
    @ivar judge: Called with a L{PresentedCertificate} when the server's
        certificate arrives; returns a L{TrustDecision}.  A refusal aborts
        the handshake.
    @ivar credentials: C{(certificate_pem, key_pem)} of the client identity
        to present, if any.
    @ivar decision: The decision made, once the handshake has completed.
    """

    host: str
    judge: Callable[[PresentedCertificate], TrustDecision]
    credentials: tuple[bytes, bytes] | None = None
    decision: TrustDecision | None = attrs.field(default=None, init=False)
    tls_version: str | None = attrs.field(default=None, init=False)
    cipher: str | None = attrs.field(default=None, init=False)

    def _context(self) -> SSL.Context:
        context = SSL.Context(SSL.TLS_CLIENT_METHOD)
        context.set_min_proto_version(SSL.TLS1_2_VERSION)
        context.set_verify(SSL.VERIFY_PEER, _fail_closed(self._verify))
        context.set_info_callback(_fail_closed(self._info))
        if self.credentials is not None:
            cert_pem, key_pem = self.credentials
            context.use_certificate(x509.load_pem_x509_certificate(cert_pem))
            use_private_key(context, key_pem)
        return context

    def clientConnectionForTLS(self, tlsProtocol: Any) -> SSL.Connection:
        """Create the OpenSSL connection for C{tlsProtocol}."""
        connection = SSL.Connection(self._context(), None)
        connection.set_app_data(tlsProtocol)
        if parse_ip_literal(self.host) is None:
            connection.set_tlsext_host_name(self.host.encode("ascii"))
        return connection

    def _verify(
        self, connection: SSL.Connection, cert: X509, errno: int, depth: int, ok: int
    ) -> bool:
        # Self-signed certificates are the norm in Gemini, so OpenSSL's own
        # verdict on the chain is ignored.  The leaf (depth 0) is judged here,
        # as soon as it arrives: before the client sends a certificate of its
        # own, so a refused server never sees the user's identity.
        if depth != 0:
            return True
        if self.decision is None:
            presented = PresentedCertificate.from_cryptography(cert.to_cryptography(), self.host)
            self.decision = self.judge(presented)
        if self.decision.refusal is not None:
            raise self.decision.refusal
        return True

    def _info(self, connection: SSL.Connection, where: int, ret: int) -> None:
        if not where & SSL.SSL_CB_HANDSHAKE_DONE:
            return
        if self.decision is None:
            raise CertificateUnverified(message="The server's certificate was never checked.")
        self.tls_version = connection.get_protocol_version_name()
        self.cipher = connection.get_cipher_name()
