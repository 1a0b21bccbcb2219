# -*- test-case-name: tests.test_hostile,tests.test_testing_hostile -*-
"""
Misbehaving Gopher and Gemini servers, for showing that no server behaviour
can crash, hang, exhaust or mislead a client.

Each server plays one named L{Behaviour} on every connection: trickling a
byte a second, never closing, sending forever, breaking the framing, lying
about its certificate, redirecting somewhere private, and so on (see
L{GOPHER_BEHAVIOURS} and L{GEMINI_BEHAVIOURS}, or run C{python -m
gophergem.testing.hostile --list}).  The same server runs in two places:

  - in memory, on a L{gophergem.testing.MemoryNetwork} (time is the
    network's fake clock, so a server that trickles for an hour costs
    nothing)::

        net = MemoryNetwork()
        net.resolver.add("bad.example", "192.0.2.66")
        server = listen_hostile(net, "192.0.2.66", 70,
                                HostileGopherServer.named("trickle", net.reactor))
        result = net.run(net.fetcher(timeout_seconds=5).gopher("gopher://bad.example/"),
                         advance=1)
        assert result.error.code == "TIMEOUT"

  - on a real loopback port, for tests that drive a whole process: in this
    process with L{serve_loopback}, or in a subprocess of its own::

        python -m gophergem.testing.hostile --protocol gemini \\
            --behaviour no-close-notify --port 0
        # prints the port it listens on (127.0.0.1 only), then serves
        # until killed

Every server records what it saw (C{requests}), how many connections it
accepted and still has open, and how many bytes it wrote, so a test can show
that a client cut a flood at its cap and left nothing open.

The Gemini servers speak TLS through their own wrapping factory
(L{HostileGeminiServer.wire_factory}); L{listen_hostile} and
L{serve_loopback} use it.  Application-level behaviours also work under
L{MemoryNetwork.listen_gemini<gophergem.testing.MemoryNetwork.listen_gemini>}
(pass C{tls=server.tls()}), but the ones that misbehave at the TLS layer
(C{no-close-notify}, the C{tls-*} and C{cert-*} ones) need C{wire_factory}.

Loopback only: L{serve_loopback} and the command line refuse any interface
outside 127.0.0.0/8 and ::1.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import unquote_to_bytes, urlsplit

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import (
    IDelayedCall,
    IListeningPort,
    IOpenSSLServerConnectionCreator,
    IProtocolFactory,
    IPushProducer,
    IReactorTCP,
    IReactorTime,
)
from twisted.internet.protocol import Factory, Protocol, ServerFactory
from twisted.internet.task import react
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from zope.interface import implementer

from gophergem.testing import make_certificate

if TYPE_CHECKING:
    from gophergem.tls import _OpenSSLPrivateKey

__all__ = [
    "BEHAVIOURS",
    "CUT_DELAY",
    "FLOOD_INTERVAL",
    "FLOOD_LIMIT",
    "GEMINI_BEHAVIOURS",
    "GOPHER_BEHAVIOURS",
    "TRICKLE_INTERVAL",
    "Behaviour",
    "HostileExchange",
    "HostileGeminiServer",
    "HostileGopherServer",
    "HostileTLS",
    "listen_hostile",
    "main",
    "serve_loopback",
]

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

ProtocolName = Literal["gopher", "gemini"]
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


class HostileExchange(Protocol):
    """
    One connection to a hostile server: reads one request, then lets the
    behaviour drive it.

    Behaviours use the small vocabulary below; every timed call is cancelled
    when the connection goes away.

    @ivar server: The L{HostileGopherServer} or L{HostileGeminiServer}.
    @ivar clock: Where timed calls are scheduled (the server's clock).
    """

    server: HostileGopherServer | HostileGeminiServer

    def __init__(self, server: HostileGopherServer | HostileGeminiServer) -> None:
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
    @ivar protocol: C{"gopher"} or C{"gemini"}.
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
    tls: Callable[[HostileGeminiServer], IOpenSSLServerConnectionCreator] | None = None
    raw: bool = False


def _is_robots(protocol: ProtocolName, request: bytes) -> bool:
    if protocol == "gopher":
        return request.split(b"\t", 1)[0] in (b"robots.txt", b"/robots.txt")
    return _gemini_path(request) == "/robots.txt"


def _gemini_path(request: bytes) -> str:
    try:
        return urlsplit(request.decode("utf-8", "replace")).path or "/"
    except ValueError:
        return "/"


def _gemini_query(request: bytes) -> bytes | None:
    text = request.decode("utf-8", "replace")
    if "?" not in text:
        return None
    return unquote_to_bytes(text.split("?", 1)[1].split("#", 1)[0])


# Content used by several behaviours.

GOOD_MENU = (
    b"iWelcome to a well-behaved corner\t\tlocalhost\t70\r\n0About\t/about\tlocalhost\t70\r\n.\r\n"
)
GOOD_GEMTEXT = b"20 text/gemini; charset=utf-8\r\n# Welcome\nAll is well here.\n"
_MENU_LINES = [
    b"iPlain info line",
    b"0A text\t/text\tlocalhost\t70",
    b"1A menu\t/menu\tlocalhost\t70",
]
_BIDI_AND_ANSI = (
    "\x1b[2J\x1b[31mRED\x1b[0m \u202eevil\u202c \u200bzero\u200b \u2028sep \ue000private \x07bell"
).encode()
_BINARY = bytes(range(256)) * 8


def _answer(data: bytes | Callable[[], bytes], *, then: str = "close") -> Respond:
    """
    A behaviour that writes C{data} (made on demand when it is a callable:
    big answers cost nothing until they are asked for) and then closes,
    cuts or holds.
    """

    def respond(exchange: HostileExchange, request: bytes) -> None:
        exchange.send(data() if callable(data) else data)
        getattr(exchange, then)()

    return respond


def _by_request(route: Callable[[bytes], bytes | None], default: Respond) -> Respond:
    """Answer with C{route(request)} when it returns bytes, else run C{default}."""

    def respond(exchange: HostileExchange, request: bytes) -> None:
        data = route(request)
        if data is None:
            default(exchange, request)
        else:
            exchange.send(data)
            exchange.close()

    return respond


def _robots(protocol: ProtocolName, hostile: Respond, normal: bytes) -> Respond:
    """Misbehave only for robots.txt; answer everything else with C{normal}."""

    def respond(exchange: HostileExchange, request: bytes) -> None:
        if _is_robots(protocol, request):
            hostile(exchange, request)
        else:
            exchange.send(normal)
            exchange.close()

    return respond


def _trickle(data: bytes) -> Respond:
    def respond(exchange: HostileExchange, request: bytes) -> None:
        exchange.trickle(data, then=exchange.close)

    return respond


def _flood(chunk: bytes, prefix: bytes = b"") -> Respond:
    def respond(exchange: HostileExchange, request: bytes) -> None:
        exchange.flood(chunk, prefix=prefix)

    return respond


def _hold(exchange: HostileExchange, request: bytes) -> None:
    exchange.hold()


def _close(exchange: HostileExchange, request: bytes) -> None:
    exchange.close()


# Gopher ------------------------------------------------------------------------------


def _never_close(request: bytes) -> bytes:
    if request == b"/text":
        return b"The whole text arrived.\r\n.\r\n"
    return GOOD_MENU


def _gopher_never_close(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(_never_close(request))
    exchange.hold()


def _hold_mid_answer(exchange: HostileExchange, request: bytes) -> None:
    if request == b"/text":
        exchange.send(b"The first half of a text, and then noth")
    elif request == b"/binary":
        exchange.send(_BINARY[:1000])
    else:
        exchange.send(b"\r\n".join(_MENU_LINES) + b"\r\n")  # no "." line
    exchange.hold()


def _control_selectors() -> bytes:
    lines = [
        b"0NUL in selector\t/a\x00b\tlocalhost\t70",
        b"0ESC in selector\t/\x1b[31mred\tlocalhost\t70",
        b"0DEL and BEL\t/x\x7f\x07y\tlocalhost\t70",
        b"0C1 control\t/c1\xc2\x9bz\tlocalhost\t70",
        b"\x01Control type byte\t/junk\terror.host\t1",
        b"0Form feed host\t/ok\tlocal\x0chost\t70",
    ]
    return b"\r\n".join(lines) + b"\r\n.\r\n"


def _menu_ssrf_links() -> bytes:
    lines = [
        b"0Metadata service\t/latest/meta-data/\t169.254.169.254\t80",
        b"1Private network\t/\t10.0.0.1\t70",
        b"1Loopback, decimal\t/\t2130706433\t70",
        b"hScript\tURL:javascript:alert(1)\tlocalhost\t70",
        b"hLocal file\tURL:file:///etc/passwd\tlocalhost\t70",
        b"hData URL\tURL:data:text/html,<script>alert(1)</script>\tlocalhost\t70",
    ]
    return b"\r\n".join(lines) + b"\r\n.\r\n"


def _nul_invalid_utf8(request: bytes) -> bytes:
    if request == b"/text":
        return b"Before\x00after \xff\xfe\xc3( broken \xe2\x82 UTF-8\r\nline two\x00\r\n.\r\n"
    return (
        b"iNUL\x00in title\t\tlocalhost\t70\r\n"
        b"0Bad \xff\xfe UTF-8\t/t\xfe\tlocalhost\t70\r\n"
        b"0Half \xe2\x82 a euro\t/text\tlocalhost\t70\r\n.\r\n"
    )


def _ansi(request: bytes) -> bytes:
    if request == b"/text":
        return b"Text: " + _BIDI_AND_ANSI + b"\r\n.\r\n"
    return b"0Title: " + _BIDI_AND_ANSI + b"\t/text\tlocalhost\t70\r\n.\r\n"


def _huge_line(request: bytes) -> bytes:
    return b"i" + b"A" * 1_000_000  # one line, no line break anywhere, no terminator


def _many_items() -> bytes:
    return b"1\t\t\t\r\n" * 200_000 + b".\r\n"


def _robots_huge() -> bytes:
    head = b"User-agent: *\r\nDisallow: /private\r\n"
    padding = b"# a comment line to make this robots.txt enormous\r\n" * 40_000
    return head + padding + b"Disallow: /\r\n"


GOPHER_BEHAVIOURS: Mapping[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "trickle",
            "gopher",
            "Answers a menu one byte per second and only closes when it is done.",
            _trickle(GOOD_MENU * 50),
        ),
        Behaviour(
            "silent",
            "gopher",
            "Reads the request, then never sends a byte and never closes.",
            _hold,
        ),
        Behaviour(
            "never-close",
            "gopher",
            "Sends a complete answer (a terminated menu, or a terminated text at /text) "
            "and keeps the connection open.",
            _gopher_never_close,
        ),
        Behaviour(
            "hold-mid-answer",
            "gopher",
            "Sends part of an answer (a menu without its '.' line; part of a text at "
            "/text; 1000 binary bytes at /binary) and keeps the connection open.",
            _hold_mid_answer,
        ),
        Behaviour(
            "send-forever",
            "gopher",
            "Streams text without end until the client cuts the connection.",
            _flood(b"All work and no play makes Jack a dull boy.\r\n" * 256),
        ),
        Behaviour(
            "send-forever-utf8",
            "gopher",
            "Streams UTF-8 text with two-byte characters without end, so that any byte "
            "cap falls inside a character sooner or later.",
            _flood("café\n".encode() * 2048),
        ),
        Behaviour(
            "close-silently",
            "gopher",
            "Reads the request and closes without sending a single byte.",
            _close,
        ),
        Behaviour(
            "reset-mid-menu",
            "gopher",
            "Sends half a menu and aborts the connection (a reset on a real socket).",
            _answer(b"\r\n".join(_MENU_LINES) + b"\r\n1Half a li", then="cut"),
        ),
        Behaviour(
            "no-terminator",
            "gopher",
            "Sends a menu without the closing '.' line, then closes.",
            _answer(b"\r\n".join(_MENU_LINES) + b"\r\n"),
        ),
        Behaviour(
            "lf-only",
            "gopher",
            "Ends menu lines with a bare LF.",
            _answer(b"\n".join([*_MENU_LINES, b"."]) + b"\n"),
        ),
        Behaviour(
            "cr-only",
            "gopher",
            "Ends menu lines with a bare CR.",
            _answer(b"\r".join([*_MENU_LINES, b"."]) + b"\r"),
        ),
        Behaviour(
            "huge-line",
            "gopher",
            "Answers with one line of a million bytes: no line break, no terminator.",
            _by_request(_huge_line, _close),
        ),
        Behaviour(
            "many-items",
            "gopher",
            "Answers with a menu of 200,000 tiny items.",
            _answer(_many_items),
        ),
        Behaviour(
            "nul-invalid-utf8",
            "gopher",
            "Puts NUL bytes and invalid UTF-8 in menu titles, selectors and text (/text).",
            _by_request(_nul_invalid_utf8, _close),
        ),
        Behaviour(
            "control-selectors",
            "gopher",
            "Serves a menu whose selectors, type bytes and hosts carry control bytes.",
            _by_request(
                lambda r: _control_selectors() if r == b"" else b"Followed.\r\n.\r\n", _close
            ),
        ),
        Behaviour(
            "ansi-bidi",
            "gopher",
            "Puts ANSI escape sequences, bidi overrides, zero-width, separator, private-use "
            "and bell characters in titles and text (/text).",
            _by_request(_ansi, _close),
        ),
        Behaviour(
            "menu-ssrf-links",
            "gopher",
            "Serves menu items pointing at a metadata service, a private network, a "
            "loopback spelling, javascript:, file: and data: URLs.",
            _answer(_menu_ssrf_links()),
        ),
        Behaviour(
            "robots-huge",
            "gopher",
            "Serves a robots.txt of two megabytes (its last rule, past any sane cap, "
            "disallows everything); everything else is a normal menu.",
            _robots("gopher", _answer(_robots_huge), GOOD_MENU),
        ),
        Behaviour(
            "robots-binary",
            "gopher",
            "Serves binary garbage as robots.txt; everything else is a normal menu.",
            _robots("gopher", _answer(_BINARY), GOOD_MENU),
        ),
        Behaviour(
            "robots-forever",
            "gopher",
            "Streams robots.txt without end; everything else is a normal menu.",
            _robots("gopher", _flood(b"# never ending\r\n" * 1024), GOOD_MENU),
        ),
    )
}


# Gemini ------------------------------------------------------------------------------


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
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
        from OpenSSL import SSL

        cert_pem, key_pem = self._current()
        context = SSL.Context(SSL.TLS_SERVER_METHOD)
        if self.max_version is not None:
            context.set_min_proto_version(0)
            context.set_max_proto_version(self.max_version)
        context.use_certificate(x509.load_pem_x509_certificate(cert_pem))
        context.use_privatekey(cast("_OpenSSLPrivateKey", load_pem_private_key(key_pem, None)))
        return context

    def serverConnectionForTLS(self, tlsProtocol: Any) -> Any:
        from OpenSSL import SSL

        connection = SSL.Connection(self._context(), None)
        connection.set_app_data(tlsProtocol)
        return connection


def _cert(
    *, name: str | None = None, start: float | None = None, end: float | None = None
) -> Callable[[HostileGeminiServer], HostileTLS]:
    """TLS presenting a certificate for C{name}, valid from now+C{start} to now+C{end}."""

    def build(server: HostileGeminiServer) -> HostileTLS:
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


def _rotating(server: HostileGeminiServer) -> HostileTLS:
    return HostileTLS(
        lambda: make_certificate(server.hostname, now=server.clock.seconds()), rotate=True
    )


def _old_tls_only(server: HostileGeminiServer) -> HostileTLS:
    from OpenSSL import SSL

    tls = _cert()(server)
    return attrs.evolve(tls, max_version=SSL.TLS1_1_VERSION)


_DAY = 86_400.0

# A TLS 1.2 fatal alert record: handshake_failure (40).
_FATAL_ALERT = b"\x15\x03\x03\x00\x02\x02\x28"


def _raw_alert(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(_FATAL_ALERT)
    exchange.close()


def _not_tls(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(b"20 text/gemini\r\n# I do not speak TLS\n")
    exchange.close()


def _no_close_notify(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(b"20 text/gemini\r\n# The end?\nThis body may or may not be complete.\n")
    exchange.cut()


def _gemini_never_close(exchange: HostileExchange, request: bytes) -> None:
    exchange.send(GOOD_GEMTEXT)
    exchange.hold()


def _sensitive(echo: bool) -> Respond:
    def respond(exchange: HostileExchange, request: bytes) -> None:
        answer = _gemini_query(request)
        if answer is None:
            exchange.send(b"11 Enter your password\r\n")
        elif echo:
            # Echo the secret everywhere a server can: a redirect target.
            exchange.send(b"30 /welcome?token=" + request.split(b"?", 1)[1] + b"\r\n")
        else:
            exchange.send(b"20 text/gemini\r\n# Logged in\nWelcome back.\n")
        exchange.close()

    return respond


def _sensitive_echo_body(exchange: HostileExchange, request: bytes) -> None:
    answer = _gemini_query(request)
    if answer is None:
        exchange.send(b"11 Enter your password\r\n")
    else:
        exchange.send(b"20 text/plain\r\nYou said: " + answer + b"\n")
    exchange.close()


_HOSTILE_LINKS = (
    b"20 text/gemini\r\n"
    b"# Links to nowhere good\n"
    b"=> file:///etc/passwd The password file\n"
    b"=> data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg== A data URL\n"
    b"=> javascript:alert(1) Script\n"
    b"=> gemini://169.254.169.254/latest/meta-data/ Metadata service\n"
    b"=> gemini://10.0.0.1/ Private network\n"
    b"=> //[::1]:1965/ Loopback, scheme-relative\n"
    b"=> \x1b[31mgemini://localhost/\x1b[0m ANSI in a link\n"
)


def _redirect(target: bytes) -> Respond:
    return _answer(b"30 " + target + b"\r\n")


GEMINI_BEHAVIOURS: Mapping[str, Behaviour] = {
    b.name: b
    for b in (
        Behaviour(
            "trickle",
            "gemini",
            "Sends its response header one byte per second.",
            _trickle(GOOD_GEMTEXT * 20),
            tls=_cert(),
        ),
        Behaviour(
            "silent",
            "gemini",
            "Completes the TLS handshake, reads the request, then never answers or closes.",
            _hold,
            tls=_cert(),
        ),
        Behaviour(
            "handshake-stall",
            "gemini",
            "Accepts the TCP connection and never answers the TLS ClientHello.",
            _hold,
            raw=True,
        ),
        Behaviour(
            "never-close",
            "gemini",
            "Sends a complete response and keeps the connection open.",
            _gemini_never_close,
            tls=_cert(),
        ),
        Behaviour(
            "header-then-hold",
            "gemini",
            "Sends a success header (20 text/gemini) and no body, and keeps the connection open.",
            _answer(b"20 text/gemini\r\n", then="hold"),
            tls=_cert(),
        ),
        Behaviour(
            "status-then-hold",
            "gemini",
            "Answers 51 (a status with no body) and keeps the connection open.",
            _answer(b"51 Not here\r\n", then="hold"),
            tls=_cert(),
        ),
        Behaviour(
            "send-forever",
            "gemini",
            "Answers 20 text/plain and streams the body without end.",
            _flood(b"All work and no play.\n" * 512, prefix=b"20 text/plain\r\n"),
            tls=_cert(),
        ),
        Behaviour(
            "send-forever-utf8",
            "gemini",
            "Answers 20 text/plain; charset=utf-8 and streams two-byte characters without "
            "end, so that any byte cap falls inside a character sooner or later.",
            _flood("café\n".encode() * 2048, prefix=b"20 text/plain; charset=utf-8\r\n"),
            tls=_cert(),
        ),
        Behaviour(
            "header-no-crlf",
            "gemini",
            "Sends a header without its CRLF, then closes.",
            _answer(b"20 text/gemini"),
            tls=_cert(),
        ),
        Behaviour(
            "header-lf-only",
            "gemini",
            "Ends its header with a bare LF.",
            _answer(b"20 text/gemini\n# Hello\n"),
            tls=_cert(),
        ),
        Behaviour(
            "status-non-numeric",
            "gemini",
            "Answers with a status that is not a number.",
            _answer(b"OK text/gemini\r\n# Hello\n"),
            tls=_cert(),
        ),
        Behaviour(
            "status-one-digit",
            "gemini",
            "Answers with a one-digit status.",
            _answer(b"2 text/gemini\r\n# Hello\n"),
            tls=_cert(),
        ),
        Behaviour(
            "status-three-digit",
            "gemini",
            "Answers with a three-digit status.",
            _answer(b"200 text/gemini\r\n# Hello\n"),
            tls=_cert(),
        ),
        Behaviour(
            "status-27",
            "gemini",
            "Answers 27, a status the specification leaves undefined in the success family.",
            _answer(b"27 text/gemini\r\n# Undefined success\n"),
            tls=_cert(),
        ),
        Behaviour(
            "status-99",
            "gemini",
            "Answers 99, outside every status family.",
            _answer(b"99 Whatever this means\r\n"),
            tls=_cert(),
        ),
        Behaviour(
            "meta-too-long",
            "gemini",
            "Sends a 2048-byte META.",
            _answer(b"20 text/gemini; x=" + b"a" * 2048 + b"\r\n# Hello\n"),
            tls=_cert(),
        ),
        Behaviour(
            "meta-invalid-utf8",
            "gemini",
            "Sends a META that is not UTF-8.",
            _answer(b"51 Not found \xff\xfe here\r\n"),
            tls=_cert(),
        ),
        Behaviour(
            "header-spaces-forever",
            "gemini",
            "Sends '20 ' and then spaces without end: a header that never finishes.",
            _flood(b" " * 1024, prefix=b"20 "),
            tls=_cert(),
        ),
        Behaviour(
            "no-close-notify",
            "gemini",
            "Sends a whole response, then closes TCP without TLS close_notify.",
            _no_close_notify,
            tls=_cert(),
        ),
        Behaviour(
            "tls-alert",
            "gemini",
            "Answers the TLS ClientHello with a fatal handshake_failure alert.",
            _raw_alert,
            raw=True,
        ),
        Behaviour(
            "tls-old-version",
            "gemini",
            "Speaks only TLS 1.1 and older, which a Gemini client must refuse.",
            _answer(GOOD_GEMTEXT),
            tls=_old_tls_only,
        ),
        Behaviour(
            "not-tls",
            "gemini",
            "Answers in plain text, without TLS.",
            _not_tls,
            raw=True,
        ),
        Behaviour(
            "cert-not-yet-valid",
            "gemini",
            "Presents a certificate valid only from tomorrow.",
            _answer(GOOD_GEMTEXT),
            tls=_cert(start=_DAY, end=365 * _DAY),
        ),
        Behaviour(
            "cert-expired",
            "gemini",
            "Presents a certificate that expired yesterday.",
            _answer(GOOD_GEMTEXT),
            tls=_cert(start=-365 * _DAY, end=-_DAY),
        ),
        Behaviour(
            "cert-other-name",
            "gemini",
            "Presents a certificate for another host name (other.example).",
            _answer(GOOD_GEMTEXT),
            tls=_cert(name="other.example"),
        ),
        Behaviour(
            "cert-new-key-every-time",
            "gemini",
            "Presents a certificate with a new key on every connection.",
            _answer(GOOD_GEMTEXT),
            tls=_rotating,
        ),
        Behaviour(
            "redirect-private",
            "gemini",
            "Redirects to a private address (gemini://10.0.0.1/).",
            _redirect(b"gemini://10.0.0.1/"),
            tls=_cert(),
        ),
        Behaviour(
            "redirect-metadata",
            "gemini",
            "Redirects to the cloud metadata address (gemini://169.254.169.254/).",
            _redirect(b"gemini://169.254.169.254/latest/meta-data/"),
            tls=_cert(),
        ),
        Behaviour(
            "redirect-other-scheme",
            "gemini",
            "Redirects to file:///etc/passwd.",
            _redirect(b"file:///etc/passwd"),
            tls=_cert(),
        ),
        Behaviour(
            "redirect-self",
            "gemini",
            "Redirects to the URL that was asked for (a loop).",
            lambda exchange, request: _redirect(request)(exchange, request),
            tls=_cert(),
        ),
        Behaviour(
            "slow-down-absurd",
            "gemini",
            "Answers 44 asking for a wait of 999,999,999 seconds.",
            _answer(b"44 999999999\r\n"),
            tls=_cert(),
        ),
        Behaviour(
            "slow-down-text",
            "gemini",
            "Answers 44 with free text instead of a number of seconds.",
            _answer(b"44 Please go away for a while\r\n"),
            tls=_cert(),
        ),
        Behaviour(
            "robots-huge",
            "gemini",
            "Serves a robots.txt of two megabytes (its last rule, past any sane cap, "
            "disallows everything); everything else is a normal page.",
            _robots("gemini", _answer(lambda: b"20 text/plain\r\n" + _robots_huge()), GOOD_GEMTEXT),
            tls=_cert(),
        ),
        Behaviour(
            "robots-binary",
            "gemini",
            "Serves binary garbage as robots.txt; everything else is a normal page.",
            _robots("gemini", _answer(b"20 image/png\r\n" + _BINARY), GOOD_GEMTEXT),
            tls=_cert(),
        ),
        Behaviour(
            "robots-redirect",
            "gemini",
            "Redirects robots.txt to a private address; everything else is a normal page.",
            _robots("gemini", _redirect(b"gemini://10.0.0.1/robots.txt"), GOOD_GEMTEXT),
            tls=_cert(),
        ),
        Behaviour(
            "hostile-links",
            "gemini",
            "Serves gemtext linking to file:///etc/passwd, a data: URL, javascript:, the "
            "metadata service, a private network and loopback.",
            _answer(_HOSTILE_LINKS),
            tls=_cert(),
        ),
        Behaviour(
            "nul-invalid-utf8",
            "gemini",
            "Serves gemtext declared UTF-8 holding NUL bytes and invalid UTF-8.",
            _answer(
                b"20 text/gemini; charset=utf-8\r\n# NUL\x00here\nbad \xff\xfe \xe2\x82 bytes\n"
            ),
            tls=_cert(),
        ),
        Behaviour(
            "ansi-bidi",
            "gemini",
            "Puts ANSI escapes and bidi overrides in an input prompt (/prompt), an error "
            "META (/error) and a page.",
            _by_request(
                lambda r: (
                    b"10 " + _BIDI_AND_ANSI + b"\r\n"
                    if _gemini_path(r) == "/prompt"
                    else b"51 " + _BIDI_AND_ANSI + b"\r\n"
                    if _gemini_path(r) == "/error"
                    else b"20 text/gemini\r\n# " + _BIDI_AND_ANSI + b"\n"
                ),
                _close,
            ),
            tls=_cert(),
        ),
        Behaviour(
            "huge-line",
            "gemini",
            "Serves gemtext that is one line of a million bytes.",
            _answer(lambda: b"20 text/gemini\r\n=> gemini://localhost/ " + b"A" * 1_000_000),
            tls=_cert(),
        ),
        Behaviour(
            "bogus-charset",
            "gemini",
            "Declares a charset that does not exist.",
            _answer(b"20 text/plain; charset=x-no-such-charset\r\nplain caf\xe9\n"),
            tls=_cert(),
        ),
        Behaviour(
            "sensitive-input",
            "gemini",
            "Asks for a password with 11, then answers a polite page without echoing it.",
            _sensitive(echo=False),
            tls=_cert(),
        ),
        Behaviour(
            "sensitive-echo",
            "gemini",
            "Asks for a password with 11, then echoes it back in a redirect target.",
            _sensitive(echo=True),
            tls=_cert(),
        ),
        Behaviour(
            "sensitive-echo-body",
            "gemini",
            "Asks for a password with 11, then echoes it back in a text/plain body.",
            _sensitive_echo_body,
            tls=_cert(),
        ),
    )
}

#: Every behaviour, keyed by C{(protocol, name)}.
BEHAVIOURS: Mapping[tuple[str, str], Behaviour] = {
    **{("gopher", name): b for name, b in GOPHER_BEHAVIOURS.items()},
    **{("gemini", name): b for name, b in GEMINI_BEHAVIOURS.items()},
}


# --- servers ---------------------------------------------------------------------------


def _lookup(table: Mapping[str, Behaviour], protocol: str, name: str) -> Behaviour:
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
        return cls(_lookup(GOPHER_BEHAVIOURS, "gopher", name), clock, **options)

    def buildProtocol(self, addr: object) -> HostileExchange:
        exchange = HostileExchange(self)
        exchange.factory = self
        return exchange

    def wire_factory(self) -> IProtocolFactory:
        """The factory to listen with: this one (Gopher is plain TCP)."""
        return self


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
        return cls(_lookup(GEMINI_BEHAVIOURS, "gemini", name), clock, hostname, **options)

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


def listen_hostile(net: Any, address: str, port: int, server: HostileServer) -> HostileServer:
    """
    Serve C{server} on a L{MemoryNetwork<gophergem.testing.MemoryNetwork>}
    at C{address}:C{port}; return it.
    """
    net.listen(address, port, server.wire_factory())
    return server


def _check_loopback(interface: str) -> None:
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
    _check_loopback(interface)
    factory = cast(ServerFactory, server.wire_factory())
    return reactor.listenTCP(port, factory, interface=interface)


# --- command line ----------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m gophergem.testing.hostile",
        description="Serve one misbehaving Gopher or Gemini server on a loopback port. "
        "Prints the port on the first line of standard output, then serves until killed.",
    )
    parser.add_argument("--protocol", choices=("gopher", "gemini"))
    parser.add_argument("--behaviour", metavar="NAME", help="See --list.")
    parser.add_argument("--port", type=int, default=0, help="0 (the default): any free port.")
    parser.add_argument(
        "--interface", default="127.0.0.1", help="A loopback address (127.0.0.1 or ::1)."
    )
    parser.add_argument(
        "--hostname", default="localhost", help="The name Gemini certificates are made for."
    )
    parser.add_argument("--list", action="store_true", help="List the behaviours and exit.")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; see C{--help}."""
    args = _parser().parse_args(argv)
    if args.list:
        for (protocol, name), behaviour in BEHAVIOURS.items():
            print(f"{protocol:6} {name:24} {behaviour.summary}")
        return 0
    if args.behaviour is None:
        _parser().error("--behaviour is required (see --list)")
    protocol, _, name = args.behaviour.rpartition(":")
    protocol = protocol or args.protocol
    if protocol not in ("gopher", "gemini"):
        _parser().error("--protocol gopher|gemini is required (or --behaviour gemini:NAME)")
    table = GOPHER_BEHAVIOURS if protocol == "gopher" else GEMINI_BEHAVIOURS
    try:
        _check_loopback(args.interface)
        behaviour = _lookup(table, protocol, name)
    except ValueError as exc:
        _parser().error(str(exc))

    def serve(reactor: Any) -> Deferred[None]:
        server: HostileServer = (
            HostileGopherServer(behaviour, reactor)
            if protocol == "gopher"
            else HostileGeminiServer(behaviour, reactor, args.hostname)
        )
        listening = serve_loopback(server, reactor, args.port, args.interface)
        sys.stdout.write(f"{getattr(listening.getHost(), 'port', 0)}\n")
        sys.stdout.flush()
        return Deferred()  # never fires: serve until killed

    # react() picks the reactor only now: nothing above may install one.
    react(serve)
    return 0  # pragma: no cover - react() exits


if __name__ == "__main__":  # pragma: no cover - exercised through a subprocess
    raise SystemExit(main())
