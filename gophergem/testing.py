# -*- test-case-name: tests.test_testing -*-
"""
Public fakes for testing code that uses gophergem, and for gophergem's own
tests: no sockets, no threads, no real time.

  - L{FakeResolver}: host names from a table; unknown names fail like NXDOMAIN.
  - L{FakeGopherServer}: a Gopher server factory answering from a table of
    selectors, recording every request line it saw.
  - L{MemoryNetwork}: a C{MemoryReactorClock} whose outgoing TCP connections
    are wired (with C{twisted.test.iosim}) to fake servers registered by
    address and port; a fetcher built on it runs entirely in memory.

Example::

    net = MemoryNetwork()
    net.resolver.add("gopher.example", "203.0.113.7")
    server = net.listen("203.0.113.7", 70, FakeGopherServer({b"": MENU}))
    result = net.run(net.fetcher().gopher("gopher://gopher.example/"))
"""

from __future__ import annotations

from collections.abc import Callable
from ipaddress import IPv4Address, IPv6Address, ip_address
from typing import Any, TypeVar

import attrs
from twisted.internet.address import IPv4Address as TwistedIPv4Address
from twisted.internet.defer import Deferred, fail, succeed
from twisted.internet.error import ConnectionRefusedError
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.testing import MemoryReactorClock
from twisted.python.failure import Failure
from twisted.test import iosim
from zope.interface import implementer

from gophergem.config import Config
from gophergem.errors import DNSError
from gophergem.interfaces import IResolver

__all__ = ["FakeGopherServer", "FakeResolver", "MemoryNetwork"]

_T = TypeVar("_T")
IPAddress = IPv4Address | IPv6Address

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
        self.transport.write(body)
        if self.factory.close:
            self.transport.loseConnection()


@attrs.define(eq=False)
class FakeGopherServer(Factory):
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

    def listen(self, address: str, port: int, factory: _T) -> _T:
        """Serve C{factory} at C{address}:C{port}; return it."""
        self.servers[(str(ip_address(address)), port)] = factory  # type: ignore[assignment]
        return factory

    def fetcher(self, config: Config | None = None, **gopher: Any) -> Any:
        """
        A L{gophergem.fetcher.Fetcher} on this network.

        Keyword arguments override L{GopherConfig} fields; local addresses
        are allowed unless C{allow_local_hosts=False} is passed.
        """
        from gophergem.service import build_fetcher

        config = config or Config()
        gopher.setdefault("allow_local_hosts", True)
        config = attrs.evolve(config, gopher=attrs.evolve(config.gopher, **gopher))
        return build_fetcher(config, self.reactor, self.resolver)

    def flush(self) -> None:
        """Connect new clients to their servers and move bytes until quiet."""
        progress = True
        while progress:
            progress = False
            while self._seen < len(self.reactor.tcpClients):
                host, port, factory, _timeout, _bind = self.reactor.tcpClients[self._seen]
                self._seen += 1
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
        server_transport = iosim.FakeTransport(server, isServer=True)
        client_transport = iosim.FakeTransport(client, isServer=False)
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
