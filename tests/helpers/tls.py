"""
Shared helpers for the TLS tests: a server TLS that records what it saw, and a
TLS loopback between two memory transports.
"""

from __future__ import annotations

from typing import Any

import attrs
from cryptography import x509
from OpenSSL import SSL
from twisted.internet.interfaces import IHandshakeListener
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import Clock
from twisted.protocols.tls import TLSMemoryBIOFactory
from twisted.python.failure import Failure
from twisted.test import iosim
from zope.interface import implementer

from gophergem.testing import ServerTLS


@attrs.define
class RecordingServerTLS(ServerTLS):
    """Server TLS that records the SNI name and every client certificate it is shown."""

    max_version: int | None = None
    names: list[bytes | None] = attrs.field(factory=list)
    client_certs: list[x509.Certificate] = attrs.field(factory=list)

    def getContext(self) -> Any:
        context = super().getContext()
        if self.max_version is not None:
            context.set_max_proto_version(self.max_version)

        def verify(connection: Any, cert: Any, errno: int, depth: int, ok: int) -> bool:
            self.client_certs.append(cert.to_cryptography())
            return True

        context.set_verify(SSL.VERIFY_PEER, verify)
        context.set_tlsext_servername_callback(
            lambda connection: self.names.append(connection.get_servername())
        )
        return context


@implementer(IHandshakeListener)
class ClientProbe(Protocol):
    """Writes C{greeting} as soon as the handshake completes; records what happens."""

    def __init__(self, greeting: bytes = b"hello\r\n") -> None:
        self.greeting = greeting
        self.handshakes = 0
        self.received = b""
        self.lost: Failure | None = None

    def handshakeCompleted(self) -> None:
        self.handshakes += 1
        self.transport.write(self.greeting)

    def dataReceived(self, data: bytes) -> None:
        self.received += data

    def connectionLost(self, reason: Failure) -> None:  # type: ignore[override]
        self.lost = reason


class ServerProbe(Protocol):
    """Records what the client sent; answers C{ok} to it."""

    def __init__(self) -> None:
        self.received = b""

    def dataReceived(self, data: bytes) -> None:
        self.received += data
        self.transport.write(b"ok")


def tls_loopback(
    creator: Any, server_tls: Any, client: Any = None, server: Any = None
) -> tuple[Any, Any, iosim.IOPump]:
    """
    Join a client protocol (a L{ClientProbe} unless given; wrapped in TLS by
    C{creator}) and a server protocol (a L{ServerProbe} unless given; wrapped
    by C{server_tls}) in memory; pump until quiet.

    @return: The client protocol, the server protocol and the pump.
    """
    clock = Clock()
    client = client if client is not None else ClientProbe()
    server = server if server is not None else ServerProbe()
    client_tls = TLSMemoryBIOFactory(
        creator, True, Factory.forProtocol(lambda: client), clock=clock
    )
    server_side = TLSMemoryBIOFactory(
        server_tls, False, Factory.forProtocol(lambda: server), clock=clock
    )
    client_wrapper = client_tls.buildProtocol(None)
    server_wrapper = server_side.buildProtocol(None)
    pump = iosim.connect(
        server_wrapper,
        iosim.FakeTransport(server_wrapper, isServer=True),
        client_wrapper,
        iosim.FakeTransport(client_wrapper, isServer=False),
        greet=False,
        clock=clock,
    )
    for _ in range(100):
        if not pump.pump():
            break
    return client, server, pump
