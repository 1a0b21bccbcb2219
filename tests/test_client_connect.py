"""
Tests for the connect pinch point (L{gophergem.client.connect}): resolve once,
vet every address, dial the vetted address itself, and turn every way of
not connecting into one of gophergem's errors.

Everything runs on a C{MemoryReactorClock} with a L{FakeResolver}: a dial is
an entry in C{reactor.tcpClients}, never a packet.
"""

from __future__ import annotations

from ipaddress import ip_address
from typing import Any

import attrs
from twisted.internet import error as ierror
from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.interfaces import IOpenSSLClientConnectionCreator
from twisted.internet.protocol import Protocol
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from zope.interface import implementer
from zope.interface.verify import verifyObject

from gophergem.client.connect import Connector, ReactorResolver
from gophergem.errors import GophergemError
from gophergem.interfaces import IAddressPolicy, IResolver
from gophergem.policy.addresses import IPAddress
from gophergem.policy.targets import AddressPolicy
from gophergem.testing import FakeResolver
from gophergem.tls import GeminiTLSCreator
from gophergem.url import GeminiURL, GopherURL


@implementer(IAddressPolicy)
@attrs.define
class RecordingPolicy:
    """Permit what C{policy} permits, remembering every address asked about."""

    policy: AddressPolicy = attrs.field(factory=AddressPolicy)
    asked: list[IPAddress] = attrs.field(factory=list)

    def permits(self, address: IPAddress) -> bool:
        self.asked.append(address)
        return self.policy.permits(address)


@implementer(IOpenSSLClientConnectionCreator)
class RecordingCreator:
    """A Gemini connection creator that records each TLS connection it makes."""

    def __init__(self) -> None:
        self.asked: list[object] = []
        self.creator = GeminiTLSCreator("capsule.example", lambda presented: None)  # type: ignore[arg-type,return-value]

    def clientConnectionForTLS(self, tlsProtocol: Any) -> Any:
        self.asked.append(tlsProtocol)
        return self.creator.clientConnectionForTLS(tlsProtocol)


class ConnectorTests(SynchronousTestCase):
    """L{Connector} resolves, vets and dials on a memory reactor."""

    def setUp(self) -> None:
        self.reactor = MemoryReactorClock()
        self.resolver = FakeResolver()
        self.policy = RecordingPolicy()
        self.protocol = Protocol()

    def connector(self, *, allow_local: bool = False, timeout: float = 30.0) -> Connector:
        self.policy.policy = AddressPolicy(allow_local=allow_local)
        return Connector(self.reactor, self.resolver, self.policy, timeout)

    def dial(self, connector: Connector, host: str, port: int = 70) -> Deferred[Protocol]:
        return connector.connect(GopherURL(host, port), self.protocol)

    def accept(self, index: int = 0) -> Protocol:
        """Let the memory reactor's C{index}th pending connection succeed."""
        _host, _port, factory, _timeout, _bind = self.reactor.tcpClients[index]
        wire = factory.buildProtocol(TwistedIPv4Address("TCP", "192.0.2.1", 70))
        wire.makeConnection(StringTransport())
        return self.protocol

    def refuse(self, index: int, reason: Exception) -> None:
        """Let the memory reactor's C{index}th pending connection fail with C{reason}."""
        _host, _port, factory, _timeout, _bind = self.reactor.tcpClients[index]
        factory.clientConnectionFailed(self.reactor.connectors[index], Failure(reason))

    def error_code(self, d: Deferred[Protocol]) -> str:
        failure = self.failureResultOf(d, GophergemError)
        return failure.value.code  # type: ignore[no-any-return]

    # -- resolve and vet -------------------------------------------------------------

    def test_resolves_then_dials_the_vetted_address(self) -> None:
        """A host name is looked up once and the connection goes to the address found."""
        self.resolver.add("gopher.example", "192.0.2.7")
        d = self.dial(self.connector(allow_local=True), "gopher.example", 7070)
        self.assertEqual(self.resolver.lookups, ["gopher.example"])
        host, port, _factory, _timeout, _bind = self.reactor.tcpClients[0]
        self.assertEqual((host, port), ("192.0.2.7", 7070))
        self.assertEqual(len(self.reactor.tcpClients), 1)
        protocol = self.accept()
        self.assertIs(self.successResultOf(d), protocol)

    def test_every_address_is_vetted_before_any_dial(self) -> None:
        """Every resolved address is put to the policy before anything is dialled."""
        self.resolver.add("two.example", "192.0.2.7", "2001:db8::7")
        self.dial(self.connector(allow_local=True), "two.example")
        self.assertEqual(self.policy.asked, [ip_address("192.0.2.7"), ip_address("2001:db8::7")])
        self.assertEqual([c[0] for c in self.reactor.tcpClients], ["192.0.2.7"])

    def test_ip_literal_is_not_looked_up(self) -> None:
        """An IP literal is dialled as it is, without asking the resolver."""
        d = self.dial(self.connector(allow_local=True), "192.0.2.9")
        self.assertEqual(self.resolver.lookups, [])
        self.assertEqual(self.reactor.tcpClients[0][0], "192.0.2.9")
        protocol = self.accept()
        self.assertIs(self.successResultOf(d), protocol)

    def test_ipv6_address_is_dialled_over_ipv6(self) -> None:
        """An IPv6 answer is dialled at that IPv6 address."""
        self.resolver.add("six.example", "2001:db8::6")
        self.dial(self.connector(allow_local=True), "six.example")
        self.assertEqual(self.reactor.tcpClients[0][0], "2001:db8::6")

    def test_refused_address_is_never_dialled(self) -> None:
        """A host resolving to a private address fails BLOCKED and nothing is dialled."""
        self.resolver.add("inside.example", "10.0.0.1")
        d = self.dial(self.connector(), "inside.example")
        self.assertEqual(self.error_code(d), "BLOCKED")
        self.assertEqual(self.reactor.tcpClients, [])

    def test_mixed_answer_is_refused_whole(self) -> None:
        """One refused address among public ones refuses the host: nothing is dialled."""
        self.resolver.add("mixed.example", "8.8.8.8", "127.0.0.1")
        d = self.dial(self.connector(), "mixed.example")
        self.assertEqual(self.error_code(d), "BLOCKED")
        self.assertEqual(self.reactor.tcpClients, [])

    def test_refused_literal_in_another_spelling(self) -> None:
        """Loopback written as a decimal integer is still loopback: refused, never dialled."""
        d = self.dial(self.connector(), "2130706433")
        self.assertEqual(self.error_code(d), "BLOCKED")
        self.assertEqual(self.reactor.tcpClients, [])
        self.assertEqual(self.resolver.lookups, [])

    def test_unknown_name_is_a_dns_error(self) -> None:
        """A name that does not resolve fails DNS_ERROR and nothing is dialled."""
        d = self.dial(self.connector(), "nowhere.example")
        self.assertEqual(self.error_code(d), "DNS_ERROR")
        self.assertEqual(self.reactor.tcpClients, [])

    # -- dialling ----------------------------------------------------------------------

    def test_connect_timeout_is_the_connectors(self) -> None:
        """The dial carries the connector's connect timeout."""
        self.resolver.add("gopher.example", "192.0.2.7")
        self.dial(self.connector(allow_local=True, timeout=4.5), "gopher.example")
        self.assertEqual(self.reactor.tcpClients[0][3], 4.5)

    def test_connect_timeout_is_a_timeout(self) -> None:
        """A connect that times out fails TIMEOUT."""
        self.resolver.add("gopher.example", "192.0.2.7")
        d = self.dial(self.connector(allow_local=True), "gopher.example")
        self.refuse(0, ierror.TimeoutError())
        self.assertEqual(self.error_code(d), "TIMEOUT")

    def test_next_address_after_a_refusal(self) -> None:
        """When the first address refuses, the next vetted one is dialled."""
        self.resolver.add("two.example", "192.0.2.7", "192.0.2.8")
        d = self.dial(self.connector(allow_local=True), "two.example")
        self.refuse(0, ierror.ConnectionRefusedError())
        self.assertEqual([c[0] for c in self.reactor.tcpClients], ["192.0.2.7", "192.0.2.8"])
        protocol = self.accept(1)
        self.assertIs(self.successResultOf(d), protocol)

    def test_every_address_refused(self) -> None:
        """When every address refuses, the dial fails CONNECTION_FAILED."""
        self.resolver.add("two.example", "192.0.2.7", "192.0.2.8")
        d = self.dial(self.connector(allow_local=True), "two.example")
        self.refuse(0, ierror.ConnectionRefusedError())
        self.refuse(1, ierror.ConnectionRefusedError())
        self.assertEqual(self.error_code(d), "CONNECTION_FAILED")

    def test_cancel_while_connecting(self) -> None:
        """Cancelling a dial stops the connection attempt and fails with CancelledError."""
        self.resolver.add("gopher.example", "192.0.2.7")
        d = self.dial(self.connector(allow_local=True), "gopher.example")
        d.cancel()
        self.failureResultOf(d, CancelledError)
        self.assertTrue(self.reactor.connectors[0].stoppedConnecting)  # type: ignore[attr-defined]

    # -- the protocol handed back ------------------------------------------------------

    def test_hands_back_the_given_protocol_quietly(self) -> None:
        """
        The protocol given is the one connected and handed back, built by a
        quiet factory (one per connection: no "Starting factory" log lines).
        """
        self.resolver.add("gopher.example", "192.0.2.7")
        d = self.dial(self.connector(allow_local=True), "gopher.example")
        protocol = self.accept()
        self.assertIs(self.successResultOf(d), protocol)
        self.assertIsNotNone(protocol.transport)
        self.assertIs(protocol.factory.noisy, False)  # type: ignore[union-attr]

    def test_gemini_is_dialled_over_tls(self) -> None:
        """
        A gemini:// URL is dialled with its connection creator around the
        protocol, and the protocol handed back is ours, not the TLS wrapper.
        """
        self.resolver.add("capsule.example", "192.0.2.8")
        creator = RecordingCreator()
        d = self.connector(allow_local=True).connect(
            GeminiURL("capsule.example"), self.protocol, creator
        )
        protocol = self.accept()
        self.assertEqual(len(creator.asked), 1)
        self.assertIs(self.successResultOf(d), protocol)

    def test_the_scheme_picks_tls(self) -> None:
        """gemini:// without a creator, or gopher:// with one, is a programming error."""
        connector = self.connector(allow_local=True)
        creator = GeminiTLSCreator("capsule.example", lambda presented: None)  # type: ignore[arg-type,return-value]
        with self.assertRaises(ValueError):
            connector.connect(GeminiURL("capsule.example"), self.protocol)
        with self.assertRaises(ValueError):
            connector.connect(GopherURL("gopher.example"), self.protocol, creator)
        self.assertEqual(self.reactor.tcpClients, [])


def test_connector_policy_providers() -> None:
    """The recording policy used above is a faithful IAddressPolicy."""
    assert verifyObject(IAddressPolicy, RecordingPolicy())


def test_reactor_resolver_provides_iresolver() -> None:
    """The resolver over the reactor's name resolver provides IResolver."""
    assert verifyObject(IResolver, ReactorResolver(MemoryReactorClock().nameResolver))
