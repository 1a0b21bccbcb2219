# -*- test-case-name: tests.test_testing -*-
"""
Public fakes for testing code that uses gophergem, and for gophergem's own
tests: no sockets, no threads, no real time.

  - L{FakeResolver}: host names from a table; unknown names fail like NXDOMAIN.
  - L{FakeGopherServer}: a Gopher server factory answering from a table of
    selectors, recording every request line it saw.
  - L{FakeSmolServer}: a Finger, Nex or Spartan server factory answering
    from a table of request lines, recording every request (and Spartan's
    data block) it saw.
  - L{MemoryNetwork}: a C{MemoryReactorClock} whose outgoing TCP connections
    are wired (with C{twisted.test.iosim}) to fake servers registered by
    address and port; a fetcher built on it runs entirely in memory.  As on
    a real socket, C{abortConnection} at either end reaches both ends as
    C{ConnectionLost} (a reset), C{loseConnection} as C{ConnectionDone}.
  - L{DeferringStore}: wraps any store (pins, identities, feeds, a cache,
    the 44 board) so that every method answers with a Deferred, at once or
    only when a clock is advanced: proof that a caller never takes a
    store's answer to be immediate.

Example::

    net = MemoryNetwork()
    net.resolver.add("gopher.example", "203.0.113.7")
    server = net.listen("203.0.113.7", 70, FakeGopherServer({b"": MENU}))
    result = net.run(net.fetcher().gopher("gopher://gopher.example/"))
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import ip_address
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.error import ConnectionLost, ConnectionRefusedError
from twisted.internet.interfaces import IOpenSSLServerConnectionCreator, IReactorTime
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure
from twisted.test import iosim
from zope.interface import directlyProvides, implementer, providedBy

from gophergem.config import Config
from gophergem.errors import DNSError
from gophergem.interfaces import IIdentityStore, IPinStore, IResolver
from gophergem.policy.addresses import IPAddress

if TYPE_CHECKING:
    from gophergem.fetcher import Fetcher

__all__ = [
    "DeferringStore",
    "FakeGeminiServer",
    "FakeGopherServer",
    "FakeResolver",
    "FakeSmolServer",
    "MemoryNetwork",
    "ServerTLS",
    "make_certificate",
]

_T = TypeVar("_T")

#: Where a L{MemoryNetwork}'s clock starts: 2027-01-15T08:00:00Z.
EPOCH = 1_800_000_000.0

#: A response: bytes to send, or a callable taking the search terms (or
#: C{None}) and returning the bytes.
Response = bytes | Callable[[bytes | None], bytes]


@implementer(IResolver)
@attrs.define
class FakeResolver:
    """
    Resolve host names from a table; never touches the network.

    @ivar table: Host name to addresses (as text).
    @ivar lookups: Every name asked for, in order.
    """

    table: dict[str, list[str]] = attrs.field(factory=dict)
    lookups: list[str] = attrs.field(factory=list)

    def add(self, host: str, *addresses: str) -> None:
        """Make C{host} resolve to C{addresses}."""
        self.table[host] = list(addresses)

    def resolve(self, host: str) -> Deferred[list[IPAddress]]:
        """Answer from the table, or fail with L{DNSError}."""
        self.lookups.append(host)
        if host not in self.table:
            return fail(DNSError(message="The host name did not resolve."))
        return succeed([ip_address(a) for a in self.table[host]])


class _GopherServerProtocol(Protocol):
    factory: FakeGopherServer

    def __init__(self) -> None:
        self._buffer = b""

    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        if b"\n" not in self._buffer:
            return
        line = self._buffer.split(b"\n", 1)[0].removesuffix(b"\r")
        self.factory.requests.append(line)
        selector, tab, search = line.partition(b"\t")
        response = self.factory.responses.get(selector, self.factory.missing)
        body = response(search if tab else None) if callable(response) else response
        assert self.transport is not None
        self.transport.write(body)
        if self.factory.close:
            self.transport.loseConnection()


@attrs.define(eq=False)
class FakeGopherServer(Factory[_GopherServerProtocol]):
    """
    A Gopher server answering from C{responses} (selector bytes to response).

    @ivar requests: Every request line received (without CRLF).
    @ivar missing: What an unknown selector gets.
    @ivar close: Whether to close after answering (a hostile server may not).
    """

    responses: dict[bytes, Response] = attrs.field(factory=dict)
    missing: bytes = b"3Not found\t\terror.host\t1\r\n.\r\n"
    close: bool = True
    requests: list[bytes] = attrs.field(factory=list)
    protocol = _GopherServerProtocol


class _SmolServerProtocol(Protocol):
    factory: FakeSmolServer

    def __init__(self) -> None:
        self._buffer = b""
        self._line: bytes | None = None
        self._wanted = 0

    def dataReceived(self, data: bytes) -> None:
        self._buffer += data
        if self._line is None:
            if b"\n" not in self._buffer:
                return
            line, self._buffer = self._buffer.split(b"\n", 1)
            self._line = line.removesuffix(b"\r")
            if self.factory.spartan:
                size = self._line.rsplit(b" ", 1)[-1]
                self._wanted = int(size) if size.isdigit() else 0
        if len(self._buffer) < self._wanted:
            return
        block, self._buffer = self._buffer[: self._wanted], b""
        self.factory.requests.append((self._line, block))
        response = self.factory.responses.get(self._line, self.factory.missing)
        body = response(block) if callable(response) else response
        assert self.transport is not None
        self.transport.write(body)
        if self.factory.close:
            self.transport.loseConnection()


@attrs.define(eq=False)
class FakeSmolServer(Factory[_SmolServerProtocol]):
    """
    A Finger, Nex or Spartan server answering from C{responses}: the
    request line (bytes, without CRLF: a finger query, a Nex path, a
    Spartan C{host path length}) to the response, or to a callable given
    the data block (Spartan's; C{b""} for the others).

    @ivar spartan: Read a Spartan request: the line, then as many bytes of
        data as its last field says.
    @ivar requests: Every C{(line, data)} received.
    @ivar missing: What an unknown request line gets.
    @ivar close: Whether to close after answering (a hostile server may not).
    """

    responses: dict[bytes, Response] = attrs.field(factory=dict)
    spartan: bool = False
    missing: bytes = b""
    close: bool = True
    requests: list[tuple[bytes, bytes]] = attrs.field(factory=list)
    protocol = _SmolServerProtocol


def _memory_pins() -> IPinStore:
    from gophergem.state.memory import MemoryPinStore

    return MemoryPinStore()


def _memory_identities() -> IIdentityStore:
    from gophergem.state.memory import MemoryIdentityStore

    return MemoryIdentityStore()


# --- Gemini -------------------------------------------------------------------


def make_certificate(
    hostname: str = "localhost",
    *,
    key: Any = None,
    not_before: float | None = None,
    not_after: float | None = None,
    now: float | None = None,
) -> tuple[bytes, bytes]:
    """
    Make a self-signed certificate for C{hostname}.

    @param key: An existing private key (to make a same-key reissue); a new
        EC P-256 key when omitted.
    @param not_before: Start of validity (POSIX seconds); a day before C{now}
        by default.
    @param not_after: End of validity; a year after C{now} by default.
    @param now: The time the defaults are relative to; the wall clock when
        omitted (pass a fake clock's time for memory tests).
    @return: C{(certificate_pem, key_pem)}.
    """
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = key or ec.generate_private_key(ec.SECP256R1())
    current = (
        datetime.datetime.now(datetime.UTC)
        if now is None
        else datetime.datetime.fromtimestamp(now, datetime.UTC)
    )
    start = (
        datetime.datetime.fromtimestamp(not_before, datetime.UTC)
        if not_before is not None
        else current - datetime.timedelta(days=1)
    )
    end = (
        datetime.datetime.fromtimestamp(not_after, datetime.UTC)
        if not_after is not None
        else current + datetime.timedelta(days=365)
    )
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hostname)])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(end)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(hostname)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@implementer(IOpenSSLServerConnectionCreator)
@attrs.define
class ServerTLS:
    """
    Server-side TLS for a fake Gemini server: one certificate, and client
    certificates requested (never required) and accepted as presented.
    """

    certificate_pem: bytes
    key_pem: bytes

    def getContext(self) -> Any:
        from cryptography import x509
        from OpenSSL import SSL

        from gophergem.tls import use_private_key

        context = SSL.Context(SSL.TLS_SERVER_METHOD)
        context.set_min_proto_version(SSL.TLS1_2_VERSION)
        context.use_certificate(x509.load_pem_x509_certificate(self.certificate_pem))
        use_private_key(context, self.key_pem)
        context.set_verify(SSL.VERIFY_PEER, lambda *args: True)
        context.set_session_id(b"gophergem-testing")
        return context

    def serverConnectionForTLS(self, tlsProtocol: Any) -> Any:
        from OpenSSL import SSL

        connection = SSL.Connection(self.getContext(), None)
        connection.set_app_data(tlsProtocol)
        return connection


class _GeminiServerProtocol(Protocol):
    factory: FakeGeminiServer

    def __init__(self) -> None:
        self._buffer = b""
        self._answered = False

    def dataReceived(self, data: bytes) -> None:
        if self._answered:
            return
        self._buffer += data
        if b"\r\n" not in self._buffer:
            return
        self._answered = True
        request = self._buffer.split(b"\r\n", 1)[0]
        assert self.transport is not None
        peer = (
            self.transport.getPeerCertificate()
            if hasattr(self.transport, "getPeerCertificate")
            else None
        )
        self.factory.requests.append(request)
        self.factory.client_certificates.append(peer)
        url = request.decode("utf-8", "replace")
        path = "/" + url.split("://", 1)[-1].partition("/")[2]
        route = path.split("?", 1)[0]
        response = self.factory.routes.get(route, self.factory.missing)
        body = response(url) if callable(response) else response
        self.transport.write(body)
        if self.factory.close:
            self.transport.loseConnection()


@attrs.define(eq=False)
class FakeGeminiServer(Factory[_GeminiServerProtocol]):
    """
    A Gemini server answering from C{routes}: a path (without query) to the
    whole response (header and body) or a callable taking the request URL.

    Wrap it for TLS with L{MemoryNetwork.listen_gemini}.

    @ivar requests: Every request line received (without CRLF).
    @ivar client_certificates: The client certificate presented with each
        request (C{None} when none was).
    @ivar close: Close (with TLS close_notify) after answering.
    """

    routes: dict[str, bytes | Callable[[str], bytes]] = attrs.field(factory=dict)
    missing: bytes = b"51 Not found\r\n"
    close: bool = True
    requests: list[bytes] = attrs.field(factory=list)
    client_certificates: list[Any] = attrs.field(factory=list)
    protocol = _GeminiServerProtocol


class _ResettableTransport(iosim.FakeTransport):
    """
    C{iosim}'s transport, except that an abort is a reset: both ends see
    C{ConnectionLost}, as they would on a real socket.  (Bytes already
    written are still delivered, as C{iosim} always does.)
    """

    peer: _ResettableTransport | None = None

    def abortConnection(self) -> None:
        reason: Any = ConnectionLost("The connection was aborted (a reset).")
        self.disconnectReason = reason
        if self.peer is not None:
            self.peer.disconnectReason = reason
        self.disconnecting = True  # what iosim's own abortConnection does


@attrs.define
class MemoryNetwork:
    """
    A memory reactor whose outgoing connections reach registered fake servers.

    @ivar reactor: The L{MemoryReactorClock} everything runs on.
    @ivar resolver: The L{FakeResolver} fetchers built here use.
    @ivar attempts: Every C{(address, port)} a client tried to reach.
    """

    reactor: MemoryReactorClock = attrs.field(factory=MemoryReactorClock)
    resolver: FakeResolver = attrs.field(factory=FakeResolver)
    servers: dict[tuple[str, int], Factory] = attrs.field(factory=dict)
    attempts: list[tuple[str, int]] = attrs.field(factory=list)
    _pumps: list[iosim.IOPump] = attrs.field(factory=list)
    _seen: int = 0

    def __attrs_post_init__(self) -> None:
        # Certificates have validity dates: start the fake clock at a
        # realistic, fixed time rather than at 1970.
        if self.reactor.seconds() == 0:
            self.reactor.advance(EPOCH)

    def listen(self, address: str, port: int, factory: _T) -> _T:
        """Serve C{factory} at C{address}:C{port}; return it."""
        self.servers[(str(ip_address(address)), port)] = factory  # type: ignore[assignment]
        return factory

    pins: IPinStore = attrs.field(factory=lambda: _memory_pins())
    identities: IIdentityStore = attrs.field(factory=lambda: _memory_identities())

    def fetcher(
        self,
        config: Config | None = None,
        *,
        gemini: dict[str, Any] | None = None,
        smolweb: dict[str, Any] | None = None,
        **gopher: Any,
    ) -> Fetcher:
        """
        A L{gophergem.fetcher.Fetcher} on this network, with this network's
        memory pin and identity stores.

        Keyword arguments override L{gophergem.config.GopherConfig} fields,
        C{gemini} overrides L{gophergem.config.GeminiConfig} fields and
        C{smolweb} L{gophergem.config.SmolwebConfig} fields.  Unless
        overridden, local addresses are allowed and robots.txt and pacing are
        off (pass C{respect_robots_txt=True}, C{requests_per_minute=60} to
        test them).
        """
        from gophergem.fetcher import Fetcher

        config = config or Config()
        gemini = dict(gemini or {})
        smolweb = dict(smolweb or {})
        for overrides in (gopher, gemini, smolweb):
            # Tests opt in to politeness; by default it would only add robots.txt
            # probes and waits on the fake clock to every test.
            overrides.setdefault("allow_local_hosts", True)
            overrides.setdefault("requests_per_minute", 0)
            overrides.setdefault("respect_robots_txt", False)
        config = attrs.evolve(
            config,
            gopher=attrs.evolve(config.gopher, **gopher),
            gemini=attrs.evolve(config.gemini, **gemini),
            smolweb=attrs.evolve(config.smolweb, **smolweb),
        )
        return Fetcher.from_config(
            config, self.reactor, self.resolver, pins=self.pins, identities=self.identities
        )

    def listen_gemini(
        self,
        address: str,
        port: int,
        server: FakeGeminiServer,
        tls: ServerTLS | None = None,
        *,
        hostname: str = "localhost",
    ) -> FakeGeminiServer:
        """
        Serve C{server} over TLS at C{address}:C{port} (a fresh self-signed
        certificate for C{hostname} unless C{tls} is given); return it.
        """
        from twisted.protocols.tls import TLSMemoryBIOFactory

        tls = tls or ServerTLS(*make_certificate(hostname, now=self.reactor.seconds()))
        self.listen(address, port, TLSMemoryBIOFactory(tls, False, server, clock=self.reactor))
        return server

    def flush(self) -> None:
        """Connect new clients to their servers and move bytes until quiet."""
        progress = True
        while progress:
            progress = False
            self.reactor.advance(0)  # run what is due now (e.g. TLS write aggregation)
            while self._seen < len(self.reactor.tcpClients):
                host, port, factory, _timeout, _bind = self.reactor.tcpClients[self._seen]
                connector = self.reactor.connectors[self._seen]
                self._seen += 1
                if getattr(connector, "stoppedConnecting", False):
                    continue  # cancelled before the connection was made
                self.attempts.append((host, port))
                self._connect(host, port, factory)
                progress = True
            for pump in self._pumps:
                if pump.pump():
                    progress = True

    def _connect(self, host: str, port: int, client_factory: Any) -> None:
        server_factory = self.servers.get((str(ip_address(host)), port))
        if server_factory is None:
            client_factory.clientConnectionFailed(None, Failure(ConnectionRefusedError()))
            return
        address = TwistedIPv4Address("TCP", "127.0.0.1", 1)
        server = server_factory.buildProtocol(address)
        client = client_factory.buildProtocol(address)
        server_transport = _ResettableTransport(server, isServer=True)  # type: ignore[no-untyped-call]
        client_transport = _ResettableTransport(client, isServer=False)  # type: ignore[no-untyped-call]
        server_transport.peer, client_transport.peer = client_transport, server_transport
        self._pumps.append(iosim.connect(server, server_transport, client, client_transport))

    def run(self, d: Deferred[_T], *, advance: float = 0) -> _T:
        """
        Flush the network (advancing the clock by C{advance} seconds at a
        time while waiting) until C{d} fires; return its result.

        @raise AssertionError: If C{d} has not fired after 10,000 rounds.
        """
        box: list[Any] = []
        d.addBoth(box.append)
        for _ in range(10_000):
            self.flush()
            if box:
                break
            if advance:
                self.reactor.advance(advance)
        else:
            raise AssertionError("the Deferred never fired")
        result = box[0]
        if isinstance(result, Failure):
            result.raiseException()
        return result  # type: ignore[no-any-return]


class DeferringStore:
    """
    Any store, answering later: every method of the wrapped C{store} returns
    a L{Deferred} (what a networked store does) firing with what the store
    answered, or failing with what it raised.  Other attributes (a cache's
    C{ttl}, a memory store's contents) are the store's own.

    Without a clock, the Deferred fires before the call returns.  With one,
    the store is called, and the Deferred fired, only when the clock next
    advances (C{callLater(0)}): a caller that takes the answer for granted
    sees an unfired Deferred.  Cancelling the Deferred before then calls
    nothing.

    The wrapper provides every interface the store provides.

    @ivar store: The store wrapped.
    @ivar clock: When given, where the answers wait for the clock to advance.
    @ivar calls: The names of the methods called, in order.
    """

    def __init__(self, store: object, clock: IReactorTime | None = None) -> None:
        self.store = store
        self.clock = clock
        self.calls: list[str] = []
        directlyProvides(self, *providedBy(store))

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.store, name)
        if name.startswith("_") or not callable(value):
            return value

        def later(*args: Any, **kwargs: Any) -> Deferred[Any]:
            self.calls.append(name)
            if self.clock is None:
                return _answer(value, args, kwargs)
            answer: Deferred[Any] = Deferred(lambda _: call.cancel())

            def deliver() -> None:
                _answer(value, args, kwargs).chainDeferred(answer)

            call = self.clock.callLater(0, deliver)
            return answer

        return later

    def __repr__(self) -> str:
        timing = "at once" if self.clock is None else "on the clock"
        return f"<DeferringStore of {self.store!r}, answering {timing}>"


def _answer(method: Callable[..., Any], args: Any, kwargs: Any) -> Deferred[Any]:
    """What C{method(*args, **kwargs)} answers, as a Deferred that has fired."""
    try:
        return succeed(method(*args, **kwargs))
    except Exception:
        return fail(Failure())
