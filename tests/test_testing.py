"""
Tests for the public fakes (L{gophergem.testing}): each behaves as its
docstring says, so that tests built on them (ours and a library user's)
stand on something checked.
"""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.error import ConnectionDone, ConnectionLost, ConnectionRefusedError
from twisted.internet.protocol import ClientFactory, Protocol
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase
from zope.interface.verify import verifyObject

from gophergem.errors import DNSError
from gophergem.interfaces import IResolver
from gophergem.results import GemtextResult, MenuResult
from gophergem.testing import (
    EPOCH,
    FakeGeminiServer,
    FakeGopherServer,
    FakeResolver,
    MemoryNetwork,
    ServerTLS,
    make_certificate,
)

MENU = b"iHello\t\tx\t1\r\n.\r\n"


# --- FakeResolver ------------------------------------------------------------------------


class FakeResolverTests(SynchronousTestCase):
    """L{FakeResolver} answers from its table and remembers what it was asked."""

    def test_provides_iresolver(self) -> None:
        """FakeResolver provides IResolver."""
        self.assertTrue(verifyObject(IResolver, FakeResolver()))

    def test_answers_from_the_table(self) -> None:
        """A name added with addresses resolves to those addresses, parsed, in order."""
        resolver = FakeResolver()
        resolver.add("two.example", "192.0.2.1", "2001:db8::1")
        found = self.successResultOf(resolver.resolve("two.example"))
        self.assertEqual([str(a) for a in found], ["192.0.2.1", "2001:db8::1"])
        self.assertEqual([a.version for a in found], [4, 6])

    def test_unknown_name_fails_like_nxdomain(self) -> None:
        """A name not in the table fails with DNSError."""
        failure = self.failureResultOf(FakeResolver().resolve("nowhere.example"), DNSError)
        self.assertEqual(failure.value.code, "DNS_ERROR")

    def test_records_every_lookup(self) -> None:
        """Every name asked for is recorded in order, known or not."""
        resolver = FakeResolver({"a.example": ["192.0.2.1"]})
        resolver.resolve("a.example")
        self.failureResultOf(resolver.resolve("b.example"))
        resolver.resolve("a.example")
        self.assertEqual(resolver.lookups, ["a.example", "b.example", "a.example"])

    def test_add_replaces(self) -> None:
        """Adding a name again replaces its addresses."""
        resolver = FakeResolver()
        resolver.add("a.example", "192.0.2.1")
        resolver.add("a.example", "192.0.2.2")
        found = self.successResultOf(resolver.resolve("a.example"))
        self.assertEqual([str(a) for a in found], ["192.0.2.2"])


# --- FakeGopherServer and FakeGeminiServer, on a StringTransport -----------------------


def served(factory: FakeGopherServer | FakeGeminiServer, request: bytes) -> StringTransport:
    """Connect one protocol of C{factory} to a StringTransport and send C{request}."""
    protocol = factory.buildProtocol(None)
    assert protocol is not None
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.dataReceived(request)
    return transport


def test_gopher_server_answers_its_table() -> None:
    """A known selector gets its response; the request line is recorded without CRLF."""
    server = FakeGopherServer({b"/about": b"About.\r\n.\r\n"})
    transport = served(server, b"/about\r\n")
    assert transport.value() == b"About.\r\n.\r\n"
    assert transport.disconnecting
    assert server.requests == [b"/about"]


def test_gopher_server_waits_for_the_line() -> None:
    """Nothing is answered or recorded before the request line ends."""
    server = FakeGopherServer({b"": MENU})
    protocol = server.buildProtocol(None)
    assert protocol is not None
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.dataReceived(b"/ab")
    assert transport.value() == b"" and server.requests == []
    protocol.dataReceived(b"c\n")
    assert server.requests == [b"/abc"]


def test_gopher_server_missing_selector() -> None:
    """An unknown selector gets the missing response (a type-3 error menu by default)."""
    assert served(FakeGopherServer(), b"/nothing\r\n").value().startswith(b"3Not found")
    custom = FakeGopherServer(missing=b"gone")
    assert served(custom, b"/nothing\r\n").value() == b"gone"


def test_gopher_server_search_terms() -> None:
    """A callable response gets the search terms after the tab, or None without one."""
    seen: list[bytes | None] = []

    def search(terms: bytes | None) -> bytes:
        seen.append(terms)
        return b"found\r\n.\r\n"

    server = FakeGopherServer({b"/search": search})
    served(server, b"/search\tcats\r\n")
    served(server, b"/search\r\n")
    assert seen == [b"cats", None]
    assert server.requests == [b"/search\tcats", b"/search"]


def test_gopher_server_may_stay_open() -> None:
    """With close=False the server answers and keeps the connection."""
    transport = served(FakeGopherServer({b"": MENU}, close=False), b"\r\n")
    assert transport.value() == MENU and not transport.disconnecting


def test_gemini_server_routes_by_path() -> None:
    """A route is picked by the request's path without its query."""
    server = FakeGeminiServer({"/page": b"20 text/gemini\r\n# Page\n"})
    transport = served(server, b"gemini://host.example/page?q=1\r\n")
    assert transport.value() == b"20 text/gemini\r\n# Page\n"
    assert transport.disconnecting
    assert server.requests == [b"gemini://host.example/page?q=1"]
    assert server.client_certificates == [None]


def test_gemini_server_callable_route_and_missing() -> None:
    """A callable route gets the request URL; an unknown path gets the missing response."""
    server = FakeGeminiServer({"/echo": lambda url: f"20 text/plain\r\n{url}".encode()})
    assert served(server, b"gemini://h/echo\r\n").value() == b"20 text/plain\r\ngemini://h/echo"
    assert served(server, b"gemini://h/none\r\n").value() == b"51 Not found\r\n"


def test_gemini_server_answers_once() -> None:
    """Bytes after the first request line are ignored."""
    server = FakeGeminiServer({"/": b"20 text/gemini\r\n"})
    protocol = server.buildProtocol(None)
    assert protocol is not None
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.dataReceived(b"gemini://h/\r\ngemini://h/again\r\n")
    protocol.dataReceived(b"gemini://h/more\r\n")
    assert server.requests == [b"gemini://h/"]


# --- certificates -----------------------------------------------------------------------


def test_make_certificate_follows_now() -> None:
    """A certificate is valid from a day before C{now} to a year after, for its host name."""
    from cryptography import x509

    cert_pem, key_pem = make_certificate("cap.example", now=EPOCH)
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert cert.not_valid_before_utc.timestamp() == EPOCH - 86_400
    assert cert.not_valid_after_utc.timestamp() == EPOCH + 365 * 86_400
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["cap.example"]
    assert key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")


def test_make_certificate_same_key_reissue() -> None:
    """Passing the key of an earlier certificate reissues with the same public key."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = ec.generate_private_key(ec.SECP256R1())
    first, _ = make_certificate(key=key, now=EPOCH)
    second, _ = make_certificate(key=key, now=EPOCH, not_after=EPOCH + 10)

    def spki(pem: bytes) -> bytes:
        public = x509.load_pem_x509_certificate(pem).public_key()
        return public.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)

    assert first != second and spki(first) == spki(second)


def test_server_tls_context() -> None:
    """ServerTLS builds a server connection presenting its certificate."""
    from cryptography import x509

    cert_pem, key_pem = make_certificate(now=EPOCH)
    connection = ServerTLS(cert_pem, key_pem).serverConnectionForTLS(None)
    presented = connection.get_certificate().to_cryptography()
    assert presented == x509.load_pem_x509_certificate(cert_pem)


# --- MemoryNetwork ------------------------------------------------------------------------


class RecordingClient(Protocol):
    """A client that sends one line and records what comes back and how it ended."""

    def __init__(self, request: bytes = b"\r\n") -> None:
        self.request = request
        self.received = b""
        self.reason: Failure | None = None

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(self.request)

    def dataReceived(self, data: bytes) -> None:
        self.received += data

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.reason = reason


class RecordingFactory(ClientFactory):
    """Hands out one L{RecordingClient} and records a failure to connect."""

    def __init__(self, request: bytes = b"\r\n") -> None:
        self.client = RecordingClient(request)
        self.failed: Failure | None = None

    def buildProtocol(self, addr: Any) -> RecordingClient:
        return self.client

    def clientConnectionFailed(self, connector: Any, reason: Failure) -> None:
        self.failed = reason


class ServerSide(Protocol):
    """A server protocol that tells its factory how its connection ended."""

    factory: ServerSideFactory

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.factory.ended.append(reason)


class ServerSideFactory(ClientFactory):
    """Builds L{ServerSide} protocols and collects how their connections ended."""

    protocol = ServerSide

    def __init__(self) -> None:
        self.ended: list[Failure | None] = []


class MemoryNetworkTests(SynchronousTestCase):
    """L{MemoryNetwork} wires outgoing connections to registered servers, in memory."""

    def setUp(self) -> None:
        self.net = MemoryNetwork()

    def test_clock_starts_at_epoch(self) -> None:
        """The fake clock starts at a fixed, realistic time (certificates have dates)."""
        self.assertEqual(self.net.reactor.seconds(), EPOCH)

    def test_listen_returns_the_factory(self) -> None:
        """listen registers a factory under its address (in any spelling) and returns it."""
        server = FakeGopherServer()
        self.assertIs(self.net.listen("2001:0db8::0001", 70, server), server)
        self.assertIs(self.net.servers[("2001:db8::1", 70)], server)

    def test_connection_reaches_its_server(self) -> None:
        """A connection to a registered address reaches that server and gets its answer."""
        server = self.net.listen("192.0.2.1", 70, FakeGopherServer({b"": MENU}))
        factory = RecordingFactory()
        self.net.reactor.connectTCP("192.0.2.1", 70, factory)
        self.net.flush()
        self.assertEqual(server.requests, [b""])
        self.assertEqual(factory.client.received, MENU)
        self.assertEqual(self.net.attempts, [("192.0.2.1", 70)])
        assert factory.client.reason is not None
        self.assertTrue(factory.client.reason.check(ConnectionDone))

    def test_unknown_address_is_refused(self) -> None:
        """A connection to an address nobody listens on is refused, and recorded."""
        factory = RecordingFactory()
        self.net.reactor.connectTCP("192.0.2.99", 70, factory)
        self.net.flush()
        assert factory.failed is not None
        self.assertTrue(factory.failed.check(ConnectionRefusedError))
        self.assertEqual(self.net.attempts, [("192.0.2.99", 70)])

    def test_cancelled_attempt_is_not_dialled(self) -> None:
        """A connection attempt stopped before the flush never reaches a server."""
        server = self.net.listen("192.0.2.1", 70, FakeGopherServer({b"": MENU}))
        connector = self.net.reactor.connectTCP("192.0.2.1", 70, RecordingFactory())
        connector.stopConnecting()
        self.net.flush()
        self.assertEqual(self.net.attempts, [])
        self.assertEqual(server.requests, [])

    def test_abort_is_a_reset_at_both_ends(self) -> None:
        """An abort at one end reaches both ends as ConnectionLost, as a reset would."""
        server_factory = ServerSideFactory()
        self.net.listen("192.0.2.1", 70, server_factory)
        factory = RecordingFactory()
        self.net.reactor.connectTCP("192.0.2.1", 70, factory)
        self.net.flush()
        assert factory.client.transport is not None
        factory.client.transport.abortConnection()
        self.net.flush()
        assert factory.client.reason is not None
        self.assertTrue(factory.client.reason.check(ConnectionLost))
        (ended,) = server_factory.ended
        assert ended is not None
        self.assertTrue(ended.check(ConnectionLost))

    def test_lose_connection_is_done_at_both_ends(self) -> None:
        """A polite close reaches both ends as ConnectionDone."""
        server_factory = ServerSideFactory()
        self.net.listen("192.0.2.1", 70, server_factory)
        factory = RecordingFactory()
        self.net.reactor.connectTCP("192.0.2.1", 70, factory)
        self.net.flush()
        assert factory.client.transport is not None
        factory.client.transport.loseConnection()
        self.net.flush()
        assert factory.client.reason is not None
        self.assertTrue(factory.client.reason.check(ConnectionDone))
        (ended,) = server_factory.ended
        assert ended is not None
        self.assertTrue(ended.check(ConnectionDone))

    def test_run_returns_the_result(self) -> None:
        """run returns what the Deferred fired with."""
        self.assertEqual(self.net.run(succeed(7)), 7)

    def test_run_raises_the_failure(self) -> None:
        """run raises the exception the Deferred failed with."""
        with pytest.raises(DNSError):
            self.net.run(fail(DNSError(message="no")))

    def test_run_advances_the_clock(self) -> None:
        """With advance, run moves the clock between rounds until the Deferred fires."""
        d: Deferred[str] = Deferred()
        self.net.reactor.callLater(3, d.callback, "late")
        self.assertEqual(self.net.run(d, advance=1), "late")
        self.assertEqual(self.net.reactor.seconds(), EPOCH + 3)

    def test_run_gives_up(self) -> None:
        """A Deferred that never fires is an AssertionError, not a hang."""
        with pytest.raises(AssertionError, match="never fired"):
            self.net.run(Deferred())

    def test_fetcher_runs_in_memory(self) -> None:
        """The documented example: a fetcher on the network reaches a fake server by name."""
        self.net.resolver.add("gopher.example", "192.0.2.1")
        server = self.net.listen("192.0.2.1", 70, FakeGopherServer({b"": MENU}))
        result = self.net.run(self.net.fetcher().gopher("gopher://gopher.example/"))
        self.assertEqual(server.requests, [b""])
        self.assertIsInstance(result, MenuResult)
        self.assertEqual(self.net.resolver.lookups, ["gopher.example"])
        self.assertEqual(self.net.attempts, [("192.0.2.1", 70)])

    def test_fetcher_reaches_a_gemini_server_over_tls(self) -> None:
        """listen_gemini serves a fake Gemini server over TLS with a fresh certificate."""
        self.net.resolver.add("cap.example", "192.0.2.2")
        server = self.net.listen_gemini(
            "192.0.2.2",
            1965,
            FakeGeminiServer({"/": b"20 text/gemini\r\n# Hi\n"}),
            hostname="cap.example",
        )
        result = self.net.run(self.net.fetcher().gemini("gemini://cap.example/"))
        self.assertIsInstance(result, GemtextResult)
        self.assertEqual(server.requests, [b"gemini://cap.example/"])
        self.assertEqual(len(self.net.pins.all()), 1)


# --- DeferringStore ------------------------------------------------------------------------


def test_deferring_store_answers_with_deferreds() -> None:
    """Without a clock every method answers with a fired Deferred; errors fail it."""
    from gophergem.errors import FingerprintMismatch
    from gophergem.interfaces import IPinStore
    from gophergem.state.memory import MemoryPinStore
    from gophergem.testing import DeferringStore

    class Broken(MemoryPinStore):
        def remove(self, host: str, port: int) -> bool:
            raise FingerprintMismatch(message="no")

    store = DeferringStore(Broken())
    assert IPinStore.providedBy(store) and verifyObject(IPinStore, store)
    got: list[Any] = []
    store.get("h", 1965).addBoth(got.append)
    store.remove("h", 1965).addBoth(got.append)
    assert got[0] is None and isinstance(got[1].value, FingerprintMismatch)
    assert store.calls == ["get", "remove"]


def test_deferring_store_on_a_clock_waits_for_it() -> None:
    """With a clock the store is called only when the clock moves; cancelling calls nothing."""
    from twisted.internet.task import Clock

    from gophergem.state.memory import MemoryFeedStore
    from gophergem.testing import DeferringStore

    inner, clock = MemoryFeedStore(), Clock()
    store = DeferringStore(inner, clock)
    got: list[Any] = []
    store.subscribe("gemini://a.example/", "A", "page", [], EPOCH).addBoth(got.append)
    assert got == [] and inner.subscriptions() == []
    clock.advance(0)
    assert got[0][1] is True and len(inner.subscriptions()) == 1
    d = store.unsubscribe("gemini://a.example/")
    d.addErrback(lambda f: None)
    d.cancel()
    clock.advance(0)
    assert len(inner.subscriptions()) == 1
