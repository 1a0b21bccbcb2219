# -*- test-case-name: tests.test_testing_hostile,tests.test_hostile -*-
"""
The engine of the hostile servers: one connection (L{HostileExchange}) and
the small vocabulary a L{Behaviour} is written in (send, trickle, flood,
cut, hold), plus the content several behaviours share.
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from typing import Any, Literal
from urllib.parse import urlsplit

import attrs
from twisted.internet.interfaces import (
    IDelayedCall,
    IOpenSSLServerConnectionCreator,
    IPushProducer,
    IReactorTime,
)
from twisted.internet.protocol import Protocol
from twisted.protocols.tls import TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from zope.interface import implementer

#: Seconds between two bytes of a trickling server.
TRICKLE_INTERVAL = 1.0

#: Seconds a plain-TCP cut waits for written bytes to leave before it resets.
CUT_DELAY = 0.2

#: Seconds between two chunks of a flood (16 KiB each: 16 MB/s).  A flood
#: is paced by the clock rather than by "as fast as the reactor turns"
#: because a memory clock runs every call due now in one go, and
#: C{twisted.test.iosim} only delivers a client's hang-up once a pump moves
#: no data: on a L{MemoryNetwork<gophergem.testing.MemoryNetwork>}, run a
#: flooded fetch with C{net.run(d, advance=FLOOD_INTERVAL)}.
FLOOD_INTERVAL = 0.001

#: A flooding server stops (and holds the connection open) after this many
#: bytes, so that a client which never cuts a flood shows up as a failed
#: assertion rather than as a test that runs out of memory.
FLOOD_LIMIT = 64 * 1024 * 1024

_MAX_REQUEST = 64 * 1024  # a hostile server must not be a memory sink itself

ProtocolName = Literal["gopher", "gemini", "finger", "nex", "spartan"]
Respond = Callable[["HostileExchange", bytes], None]


# --- the connection a behaviour drives --------------------------------------------


@implementer(IPushProducer)
class _Flood:
    """Write the same chunk every L{FLOOD_INTERVAL} until paused, stopped or cut."""

    def __init__(self, exchange: HostileExchange, chunk: bytes, limit: int) -> None:
        self._exchange = exchange
        self._chunk = chunk
        self._left = limit
        self._paused = False
        self._stopped = False
        self._call: IDelayedCall | None = None

    def start(self) -> None:
        self._exchange.wire.registerProducer(self, True)
        self._schedule()

    def _schedule(self) -> None:
        if self._call is None and not (self._paused or self._stopped) and self._left > 0:
            self._call = self._exchange.clock.callLater(FLOOD_INTERVAL, self._write)

    def _write(self) -> None:
        self._call = None
        if self._paused or self._stopped or not self._exchange.connected:
            return
        chunk = self._chunk[: self._left]
        self._left -= len(chunk)
        self._exchange.send(chunk)
        self._schedule()

    def pauseProducing(self) -> None:
        self._paused = True

    def resumeProducing(self) -> None:
        self._paused = False
        self._schedule()

    def stopProducing(self) -> None:
        self._stopped = True
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None


class HostileServer(typing.Protocol):
    """
    What a connection needs of its server: the behaviour, the clock and the
    counters it keeps.  C{HostileGopherServer} and C{HostileGeminiServer}
    are ones (named here by their shape: their module imports this one).
    """

    behaviour: Behaviour
    clock: IReactorTime
    flood_limit: int
    requests: list[bytes]
    connections: int
    open: int
    bytes_sent: int


class NamedServer(HostileServer, typing.Protocol):
    """A L{HostileServer} with a host name to make certificates for (a Gemini one)."""

    hostname: str


class HostileExchange(Protocol):
    """
    One connection to a hostile server: reads one request, then lets the
    behaviour drive it.

    Behaviours use the small vocabulary below; every timed call is cancelled
    when the connection goes away.

    @ivar server: The L{HostileGopherServer} or L{HostileGeminiServer}.
    @ivar clock: Where timed calls are scheduled (the server's clock).
    """

    server: HostileServer

    def __init__(self, server: HostileServer) -> None:
        self.server = server
        self.clock = server.clock
        self._buffer = b""
        self._answered = False
        self._calls: list[IDelayedCall] = []
        self._flood: _Flood | None = None
        self._lost = False

    # -- Twisted side --

    def connectionMade(self) -> None:
        self.server.connections += 1
        self.server.open += 1

    def dataReceived(self, data: bytes) -> None:
        if self._answered:
            return
        self._buffer = (self._buffer + data)[:_MAX_REQUEST]
        if self.server.behaviour.raw:
            # No TLS layer: the first bytes (a TLS ClientHello) are the "request".
            self._answer(self._buffer)
            return
        if b"\n" not in self._buffer:
            if len(self._buffer) >= _MAX_REQUEST:
                self.wire.abortConnection()
            return
        line = self._buffer.split(b"\n", 1)[0].removesuffix(b"\r")
        self._answer(line)

    def _answer(self, request: bytes) -> None:
        self._answered = True
        self.server.requests.append(request)
        self.server.behaviour.respond(self, request)

    def connectionLost(self, reason: Failure | None = None) -> None:
        if self._lost:
            return
        self._lost = True
        self.connected = False
        self.server.open -= 1
        for call in self._calls:
            if call.active():
                call.cancel()
        self._calls = []
        if self._flood is not None:
            self._flood.stopProducing()

    # -- the behaviour's vocabulary --

    @property
    def wire(self) -> Any:
        """The transport: TCP, C{iosim}'s or TLS (all of them can abort)."""
        return self.transport

    @property
    def tls(self) -> bool:
        """Whether this connection runs inside TLS."""
        return isinstance(self.transport, TLSMemoryBIOProtocol)

    def send(self, data: bytes) -> None:
        """Write C{data} now (nothing once the connection is gone)."""
        if not self.connected or not data:
            return
        self.server.bytes_sent += len(data)
        self.wire.write(data)

    def close(self) -> None:
        """Close politely: a TCP FIN, after TLS close_notify on TLS."""
        if self.connected:
            self.wire.loseConnection()

    def cut(self) -> None:
        """
        Close without the goodbye.  On TLS, close the TCP connection under
        the TLS layer: what was written still goes out, but no close_notify.
        On plain TCP, abort (a reset on a real socket) once what was written
        has had L{CUT_DELAY} seconds to leave, since an abort discards
        whatever is still buffered.
        """
        if not self.connected:
            return
        if self.tls:
            self.wire.transport.loseConnection()
        else:
            self.after(CUT_DELAY, self.wire.abortConnection)

    def after(self, seconds: float, action: Callable[[], None]) -> None:
        """Run C{action} in C{seconds} on the server's clock, unless the connection goes."""

        def run() -> None:
            if self.connected:
                action()

        self._calls.append(self.clock.callLater(seconds, run))

    def trickle(
        self,
        data: bytes,
        *,
        interval: float = TRICKLE_INTERVAL,
        then: Callable[[], None] | None = None,
    ) -> None:
        """Send C{data} one byte every C{interval} seconds, then call C{then}."""

        def step(position: int) -> None:
            if position >= len(data):
                if then is not None:
                    then()
                return
            self.send(data[position : position + 1])
            self.after(interval, lambda: step(position + 1))

        step(0)

    def flood(self, chunk: bytes, *, prefix: bytes = b"") -> None:
        """
        Send C{prefix}, then C{chunk} every L{FLOOD_INTERVAL} seconds until
        the client cuts the connection (or L{FLOOD_LIMIT} bytes have gone;
        then hold).  It is a streaming producer: a real transport pauses it
        when its buffer is full, so the server never holds more than one
        chunk.
        """
        self.send(prefix)
        limit = max(self.server.flood_limit - len(prefix), 0)
        self._flood = _Flood(self, chunk, limit)
        self._flood.start()

    def hold(self) -> None:
        """Do nothing more: keep the connection open until the client leaves."""


# --- behaviours ----------------------------------------------------------------------


@attrs.frozen
class Behaviour:
    """
    One way to misbehave.

    @ivar name: What tests and the command line call it (C{kebab-case}).
    @ivar protocol: C{"gopher"}, C{"gemini"}, or one of the small web's plain-TCP
        protocols: C{"finger"}, C{"nex"}, C{"spartan"}.
    @ivar summary: One sentence: what the server does.
    @ivar respond: Drives a connection once its request has arrived:
        C{respond(exchange, request)}; the request is the Gopher selector
        line or the Gemini request line without its line end, or, for a
        C{raw} behaviour, the first bytes the client sent.
    @ivar tls: Gemini only: builds the server's TLS (a connection creator)
        for a server; C{None} for a C{raw} behaviour.
    @ivar raw: Gemini only: no TLS layer at all; C{respond} sees bytes as
        they come off TCP.
    """

    name: str
    protocol: ProtocolName
    summary: str
    respond: Respond
    tls: Callable[[NamedServer], IOpenSSLServerConnectionCreator] | None = None
    raw: bool = False


def is_robots(protocol: ProtocolName, request: bytes) -> bool:
    """Whether C{request} asks for robots.txt."""
    if protocol == "gopher":
        return request.split(b"\t", 1)[0] in (b"robots.txt", b"/robots.txt")
    return gemini_path(request) == "/robots.txt"


def gemini_path(request: bytes) -> str:
    """The path of a Gemini request line (C{/} when it has none or is no URL)."""
    try:
        return urlsplit(request.decode("utf-8", "replace")).path or "/"
    except ValueError:
        return "/"


# Content used by several behaviours.

#: Terminal escapes, bidi overrides and other characters no reader should see raw.
BIDI_AND_ANSI = (
    "\x1b[2J\x1b[31mRED\x1b[0m \u202eevil\u202c \u200bzero\u200b \u2028sep \ue000private \x07bell"
).encode()
#: Two kilobytes of every byte value.
BINARY = bytes(range(256)) * 8


def robots_huge() -> bytes:
    """A robots.txt of two megabytes whose last rule disallows everything."""
    head = b"User-agent: *\r\nDisallow: /private\r\n"
    padding = b"# a comment line to make this robots.txt enormous\r\n" * 40_000
    return head + padding + b"Disallow: /\r\n"


# The vocabulary behaviours are built from.


def answer(data: bytes | Callable[[], bytes], *, then: str = "close") -> Respond:
    """
    A behaviour that writes C{data} (made on demand when it is a callable:
    big answers cost nothing until they are asked for) and then closes,
    cuts or holds.
    """

    def respond(exchange: HostileExchange, request: bytes) -> None:
        exchange.send(data() if callable(data) else data)
        getattr(exchange, then)()

    return respond


def by_request(route: Callable[[bytes], bytes | None], default: Respond) -> Respond:
    """Answer with C{route(request)} when it returns bytes, else run C{default}."""

    def respond(exchange: HostileExchange, request: bytes) -> None:
        data = route(request)
        if data is None:
            default(exchange, request)
        else:
            exchange.send(data)
            exchange.close()

    return respond


def robots(protocol: ProtocolName, hostile: Respond, normal: bytes) -> Respond:
    """Misbehave only for robots.txt; answer everything else with C{normal}."""

    def respond(exchange: HostileExchange, request: bytes) -> None:
        if is_robots(protocol, request):
            hostile(exchange, request)
        else:
            exchange.send(normal)
            exchange.close()

    return respond


def trickle(data: bytes) -> Respond:
    """A behaviour that trickles C{data} a byte at a time, then closes."""

    def respond(exchange: HostileExchange, request: bytes) -> None:
        exchange.trickle(data, then=exchange.close)

    return respond


def flood(chunk: bytes, prefix: bytes = b"") -> Respond:
    """A behaviour that sends C{prefix}, then C{chunk} without end."""

    def respond(exchange: HostileExchange, request: bytes) -> None:
        exchange.flood(chunk, prefix=prefix)

    return respond


def hold(exchange: HostileExchange, request: bytes) -> None:
    """A behaviour that never answers and never closes."""
    exchange.hold()


def close(exchange: HostileExchange, request: bytes) -> None:
    """A behaviour that closes without answering."""
    exchange.close()
