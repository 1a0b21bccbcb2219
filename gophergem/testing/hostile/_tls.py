# -*- test-case-name: tests.test_testing_hostile,tests.test_hostile -*-
"""
Server-side TLS for the hostile Gemini servers: a connection creator that
presents the certificate a behaviour asks for (expired, for another name, a
new key every time, or only old TLS versions).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
from twisted.internet.interfaces import IOpenSSLServerConnectionCreator
from zope.interface import implementer

from gophergem.testing import make_certificate

if TYPE_CHECKING:
    from gophergem.testing.hostile._engine import NamedServer


@implementer(IOpenSSLServerConnectionCreator)
@attrs.define
class HostileTLS:
    """
    Server-side TLS for a hostile Gemini server.

    @ivar certificate: Returns C{(certificate_pem, key_pem)}; called once,
        or for every connection when C{rotate} is set.
    @ivar rotate: Present a new certificate (and key) on every connection.
    @ivar max_version: The highest TLS version offered (an OpenSSL
        constant), to make a server that cannot agree with a TLS 1.2+ client.
    """

    certificate: Callable[[], tuple[bytes, bytes]]
    rotate: bool = False
    max_version: int | None = None
    _pair: tuple[bytes, bytes] | None = attrs.field(default=None, init=False)

    def _current(self) -> tuple[bytes, bytes]:
        if self._pair is None or self.rotate:
            self._pair = self.certificate()
        return self._pair

    def certificate_pem(self) -> bytes:
        """The certificate presented (the latest one, when rotating)."""
        return self._current()[0]

    def _context(self) -> Any:
        from cryptography import x509
        from OpenSSL import SSL

        from gophergem.tls import use_private_key

        cert_pem, key_pem = self._current()
        context = SSL.Context(SSL.TLS_SERVER_METHOD)
        if self.max_version is not None:
            context.set_min_proto_version(0)
            context.set_max_proto_version(self.max_version)
        context.use_certificate(x509.load_pem_x509_certificate(cert_pem))
        use_private_key(context, key_pem)
        return context

    def serverConnectionForTLS(self, tlsProtocol: Any) -> Any:
        from OpenSSL import SSL

        connection = SSL.Connection(self._context(), None)
        connection.set_app_data(tlsProtocol)
        return connection


def cert(
    *, name: str | None = None, start: float | None = None, end: float | None = None
) -> Callable[[NamedServer], HostileTLS]:
    """TLS presenting a certificate for C{name}, valid from now+C{start} to now+C{end}."""

    def build(server: NamedServer) -> HostileTLS:
        def pair() -> tuple[bytes, bytes]:
            now = server.clock.seconds()
            return make_certificate(
                name or server.hostname,
                now=now,
                not_before=None if start is None else now + start,
                not_after=None if end is None else now + end,
            )

        return HostileTLS(pair)

    return build


def rotating_cert(server: NamedServer) -> HostileTLS:
    """TLS presenting a new certificate, with a new key, on every connection."""
    return HostileTLS(
        lambda: make_certificate(server.hostname, now=server.clock.seconds()), rotate=True
    )


def old_tls_only(server: NamedServer) -> HostileTLS:
    """TLS offering nothing newer than TLS 1.1."""
    from OpenSSL import SSL

    tls = cert()(server)
    return attrs.evolve(tls, max_version=SSL.TLS1_1_VERSION)
