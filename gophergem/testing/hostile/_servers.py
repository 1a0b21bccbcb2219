# -*- test-case-name: tests.test_testing_hostile,tests.test_hostile -*-
"""
The hostile servers (one per behaviour, as a Twisted factory), the registry
of every behaviour, and the two ways to serve one: on a memory network or on
a loopback port.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import attrs
from twisted.internet.interfaces import (
    IListeningPort,
    IOpenSSLServerConnectionCreator,
    IProtocolFactory,
    IReactorTCP,
    IReactorTime,
)
from twisted.internet.protocol import Factory, ServerFactory
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol

from gophergem.testing.hostile._engine import FLOOD_LIMIT, Behaviour, HostileExchange
from gophergem.testing.hostile._finger import FINGER_BEHAVIOURS
from gophergem.testing.hostile._gemini import GEMINI_BEHAVIOURS
from gophergem.testing.hostile._gopher import GOPHER_BEHAVIOURS
from gophergem.testing.hostile._nex import NEX_BEHAVIOURS
from gophergem.testing.hostile._spartan import SPARTAN_BEHAVIOURS

if TYPE_CHECKING:
    from gophergem.testing import MemoryNetwork

#: Every behaviour, keyed by C{(protocol, name)}.
BEHAVIOURS: Mapping[tuple[str, str], Behaviour] = {
    **{("gopher", name): b for name, b in GOPHER_BEHAVIOURS.items()},
    **{("gemini", name): b for name, b in GEMINI_BEHAVIOURS.items()},
    **{("finger", name): b for name, b in FINGER_BEHAVIOURS.items()},
    **{("nex", name): b for name, b in NEX_BEHAVIOURS.items()},
    **{("spartan", name): b for name, b in SPARTAN_BEHAVIOURS.items()},
}

#: The small web's plain-TCP catalogues (served by L{HostilePlainServer}).
PLAIN_BEHAVIOURS: Mapping[str, Mapping[str, Behaviour]] = {
    "finger": FINGER_BEHAVIOURS,
    "nex": NEX_BEHAVIOURS,
    "spartan": SPARTAN_BEHAVIOURS,
}


def lookup(table: Mapping[str, Behaviour], protocol: str, name: str) -> Behaviour:
    """
    The behaviour called C{name} in C{table}.

    @raise ValueError: If there is none; the message names the known ones.
    """
    try:
        return table[name]
    except KeyError:
        known = ", ".join(sorted(table))
        raise ValueError(f"no {protocol} behaviour named {name!r}; known: {known}") from None


@attrs.define(eq=False)
class HostileGopherServer(Factory):
    """
    A Gopher server that misbehaves as its L{Behaviour} says.

    Serve it as it is (it is a plain TCP factory): L{listen_hostile},
    C{MemoryNetwork.listen} or L{serve_loopback}.

    @ivar behaviour: What it does.
    @ivar clock: Where its timed calls go (a memory network's reactor, or
        the real one).
    @ivar requests: Every request line received, without its line end.
    @ivar connections: Connections accepted so far.
    @ivar open: Connections still open.
    @ivar bytes_sent: Bytes written over every connection.
    @ivar flood_limit: Where a flood stops (see L{FLOOD_LIMIT}).
    """

    behaviour: Behaviour
    clock: IReactorTime
    flood_limit: int = FLOOD_LIMIT
    requests: list[bytes] = attrs.field(factory=list, init=False)
    connections: int = attrs.field(default=0, init=False)
    open: int = attrs.field(default=0, init=False)
    bytes_sent: int = attrs.field(default=0, init=False)
    noisy = False

    @classmethod
    def named(cls, name: str, clock: IReactorTime, **options: Any) -> HostileGopherServer:
        """
        The server playing the Gopher behaviour called C{name}.

        @raise ValueError: If there is no such behaviour.
        """
        return cls(lookup(GOPHER_BEHAVIOURS, "gopher", name), clock, **options)

    def buildProtocol(self, addr: object) -> HostileExchange:
        exchange = HostileExchange(self)
        exchange.factory = self
        return exchange

    def wire_factory(self) -> IProtocolFactory:
        """The factory to listen with: this one (Gopher is plain TCP)."""
        return self


class HostilePlainServer(HostileGopherServer):
    """
    A Finger, Nex or Spartan server that misbehaves as its L{Behaviour}
    says: plain TCP, like L{HostileGopherServer}, playing another catalogue.
    """

    @classmethod
    def playing(
        cls, protocol: str, name: str, clock: IReactorTime, **options: Any
    ) -> HostilePlainServer:
        """
        The server playing C{protocol}'s behaviour called C{name}
        (C{protocol}: C{"finger"}, C{"nex"} or C{"spartan"}).

        @raise ValueError: If there is no such protocol or behaviour.
        """
        if protocol not in PLAIN_BEHAVIOURS:
            raise ValueError(f"no plain-TCP protocol named {protocol!r}")
        return cls(lookup(PLAIN_BEHAVIOURS[protocol], protocol, name), clock, **options)


class _UnbufferedTLSFactory(TLSMemoryBIOFactory):
    """
    TLS without write aggregation: bytes a behaviour writes are encrypted
    and handed to TCP at once, so that cutting the TCP connection right
    after a write still sends them (and sends no close_notify).
    """

    protocol = TLSMemoryBIOProtocol


@attrs.define(eq=False)
class HostileGeminiServer(Factory):
    """
    A Gemini server that misbehaves as its L{Behaviour} says.

    Listen with L{wire_factory} (which adds the behaviour's TLS, or none),
    as L{listen_hostile} and L{serve_loopback} do.

    @ivar hostname: The name its certificates are made for (unless the
        behaviour is to present another).
    @ivar requests: Every request line received, without CRLF (for a raw
        behaviour, the first bytes received).
    @ivar connections: TCP connections accepted so far, whether or not
        their TLS handshake completed.
    @ivar open: Connections still open.
    @ivar bytes_sent: Application bytes written over every connection.
    """

    behaviour: Behaviour
    clock: IReactorTime
    hostname: str = "localhost"
    flood_limit: int = FLOOD_LIMIT
    requests: list[bytes] = attrs.field(factory=list, init=False)
    connections: int = attrs.field(default=0, init=False)
    open: int = attrs.field(default=0, init=False)
    bytes_sent: int = attrs.field(default=0, init=False)
    _tls: IOpenSSLServerConnectionCreator | None = attrs.field(default=None, init=False)
    noisy = False

    @classmethod
    def named(
        cls, name: str, clock: IReactorTime, hostname: str = "localhost", **options: Any
    ) -> HostileGeminiServer:
        """
        The server playing the Gemini behaviour called C{name}.

        @raise ValueError: If there is no such behaviour.
        """
        return cls(lookup(GEMINI_BEHAVIOURS, "gemini", name), clock, hostname, **options)

    def tls(self) -> IOpenSSLServerConnectionCreator | None:
        """
        The server's TLS (built once, on first use, at the clock's time):
        C{None} for a raw behaviour.
        """
        if self._tls is None and self.behaviour.tls is not None:
            self._tls = self.behaviour.tls(self)
        return self._tls

    def buildProtocol(self, addr: object) -> HostileExchange:
        exchange = HostileExchange(self)
        exchange.factory = self
        return exchange

    def wire_factory(self) -> IProtocolFactory:
        """The factory to listen with: this one inside the behaviour's TLS, or bare."""
        tls = self.tls()
        if tls is None:
            return self
        return _UnbufferedTLSFactory(tls, False, self, clock=self.clock)


HostileServer = HostileGopherServer | HostileGeminiServer


def listen_hostile(
    net: MemoryNetwork, address: str, port: int, server: HostileServer
) -> HostileServer:
    """
    Serve C{server} on a L{MemoryNetwork<gophergem.testing.MemoryNetwork>}
    at C{address}:C{port}; return it.
    """
    net.listen(address, port, server.wire_factory())
    return server


def check_loopback(interface: str) -> None:
    """@raise ValueError: If C{interface} is not a loopback IP address."""
    try:
        address = ipaddress.ip_address(interface)
    except ValueError:
        raise ValueError(f"{interface!r} is not an IP address") from None
    if not address.is_loopback:
        raise ValueError(f"{interface} is not a loopback address; hostile servers stay on loopback")


def serve_loopback(
    server: HostileServer, reactor: IReactorTCP, port: int = 0, interface: str = "127.0.0.1"
) -> IListeningPort:
    """
    Serve C{server} with a real reactor on a loopback port (0: any free one;
    read it from the result's C{getHost().port}).

    @raise ValueError: If C{interface} is not a loopback address.
    """
    check_loopback(interface)
    factory = cast(ServerFactory, server.wire_factory())
    return reactor.listenTCP(port, factory, interface=interface)
