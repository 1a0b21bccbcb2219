"""
Tests for L{gophergem.http.site}: the bounds on request heads, bodies and
connections, and the access log that keeps credentials out.

Tests drive a real C{BoundedSite} over an in-memory connection.
"""

from __future__ import annotations

import errno
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.error import ConnectionDone
from twisted.internet.task import Clock
from twisted.logger import LogLevel, capturedLogs, formatEvent
from twisted.python.failure import Failure
from twisted.web.resource import Resource

from gophergem.http.site import (
    RESUME_SECONDS,
    BodyCappedRequest,
    BoundedSite,
    descriptor_budget,
    redact_uri,
)
from tests.helpers.web import Wire, request_bytes

# --- bounds on request heads -------------------------------------------------------


class Hello(Resource):
    isLeaf = True

    def render_GET(self, request: Any) -> bytes:
        return b"hello"


def bounded(header_timeout: float = 10.0) -> tuple[Wire, Clock]:
    clock = Clock()
    root = Resource()
    root.putChild(b"hello", Hello())
    return Wire(BoundedSite(root, header_timeout=header_timeout, reactor=clock)), clock


def test_trickled_headers_time_out() -> None:
    """A client trickling its head a byte at a time gets 408 once the header timeout passes."""
    wire, clock = bounded(header_timeout=10)
    for byte in b"GET /hello HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n":
        wire.send(bytes([byte]))
        clock.advance(0.5)  # over 20 s in all, each byte well inside the idle timeout
        if wire.transport.disconnecting:
            break
    assert wire.value().startswith(b"HTTP/1.1 408 ")
    assert b"Connection: close" in wire.value()
    assert wire.transport.disconnecting


def test_silent_connection_times_out() -> None:
    """A connection that never sends a request is closed after the header timeout."""
    wire, clock = bounded(header_timeout=10)
    clock.advance(9.9)
    assert not wire.transport.disconnecting
    clock.advance(0.2)
    assert wire.value().startswith(b"HTTP/1.1 408 ")
    assert wire.transport.disconnecting


def test_prompt_requests_are_served_on_a_kept_connection() -> None:
    """Heads that arrive in time are served; the clock restarts with the next request."""
    wire, clock = bounded(header_timeout=10)
    wire.send(request_bytes("GET", "/hello"))
    assert wire.value().startswith(b"HTTP/1.1 200 ")
    clock.advance(30)  # idle between requests: not a head being trickled
    assert not wire.transport.disconnecting
    wire.transport.clear()
    wire.send(request_bytes("GET", "/hello"))
    assert wire.value().startswith(b"HTTP/1.1 200 ")
    assert not clock.getDelayedCalls() or all(
        c.getTime() - clock.seconds() > 10 for c in clock.getDelayedCalls()
    )


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414),
        (b"GET /" + b"a" * 20000, 414),  # no end of line in sight
        (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 20000 + b"\r\n\r\n", 431),
        (
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 200) for i in range(90))
            + b"\r\n",
            431,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            + b"".join(b"X-H%d: v\r\n" % i for i in range(150))
            + b"\r\n",
            431,
        ),
    ],
    ids=["long-request-line", "endless-request-line", "big-header", "big-head", "many-headers"],
)
def test_oversize_heads_are_answered(raw: bytes, status: int) -> None:
    """An over-long request line gets 414, over-large headers 431: an answer, then close."""
    wire, _ = bounded()
    wire.send(raw)
    assert wire.value().startswith(b"HTTP/1.1 %d " % status)
    assert wire.head()[1]["connection"] == "close"
    assert wire.transport.disconnecting


# --- the access log ----------------------------------------------------------------


def access_log_of(raw: bytes) -> str:
    """The access-log lines a L{BoundedSite} writes for C{raw}, as the daemon logs them."""
    from twisted.logger import formatEvent

    wire, _ = bounded()
    with capturedLogs() as events:
        wire.channel.factory.startFactory()
        try:
            wire.send(raw)
        finally:
            wire.channel.factory.stopFactory()
    return "\n".join(formatEvent(event) for event in events)


def test_access_log_redacts_credentials_in_the_query() -> None:
    """A token sent as ?access_token= never reaches the access log; other parameters do."""
    line = access_log_of(
        b"GET /hello?access_token=SECRET&x=1 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\n"
        b"Referer: http://127.0.0.1:8000/?token=REFSECRET&page=2\r\n\r\n"
    )
    assert '"GET /hello?access_token=REDACTED&x=1 HTTP/1.1" 200' in line
    assert "page=2" in line
    assert "SECRET" not in line


@given(
    name=st.sampled_from(
        [
            "access_token",
            "Access-Token",
            "token",
            "id_token",
            "code",
            "key",
            "api_key",
            "client_secret",
            "password",
            "passwd",
            "auth",
            "authorization",
            "session_id",
            "sig",
            "X-Amz-Credential",
        ]
    ),
    value=st.text(
        alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E, exclude_characters="&;#"),
        min_size=1,
        max_size=40,
    ),
    before=st.sampled_from(["", "x=1&", "a&", "q=%20&"]),
    after=st.sampled_from(["", "&y=2", ";z", "&" + "k=v"]),
)
def test_redact_uri_hides_every_credential_value(
    name: str, value: str, before: str, after: str
) -> None:
    """Whatever the credential-like parameter holds, its value is gone; the rest stays."""
    uri = f"/p?{before}{name}={value}{after}".encode()
    redacted = redact_uri(uri)
    assert redacted == f"/p?{before}{name}=REDACTED{after}".encode()


def test_redact_uri_leaves_harmless_uris_alone() -> None:
    for uri in (b"/mcp", b"/health?", b"/search?q=gopher&page=2", b"/a?flag", b"/a?=x"):
        assert redact_uri(uri) == uri


def test_request_repr_redacts_credentials() -> None:
    """Twisted logs a request by its repr (a HEAD answered with a body): no token in it."""
    wire, _ = bounded()
    request = BodyCappedRequest(wire.channel)
    request.method, request.uri = b"GET", b"/hello?code=SECRET&x=1"
    assert "SECRET" not in repr(request)
    assert "uri=/hello?code=REDACTED&x=1 " in repr(request)


# --- bounds on request bodies and connections --------------------------------------


def drip_head(length: int = 100_000) -> bytes:
    return (
        b"POST /hello HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n" % length
    )


class Posted(Resource):
    isLeaf = True

    def render_POST(self, request: Any) -> bytes:
        return b"got %d bytes" % len(request.content.read())


def body_site(body_timeout: float = 30.0, **options: Any) -> tuple[BoundedSite, Clock]:
    clock = Clock()
    root = Resource()
    root.putChild(b"hello", Posted())
    site = BoundedSite(root, body_timeout=body_timeout, reactor=clock, **options)
    return site, clock


def test_dripped_body_is_cut_at_the_deadline() -> None:
    """A body sent a byte every 10 s gets 408 and a closed connection at the body deadline."""
    site, clock = body_site(body_timeout=30)
    wire = Wire(site)
    wire.send(drip_head())
    for _ in range(2):
        clock.advance(10)
        wire.send(b"{")
    assert not wire.transport.disconnecting
    clock.advance(10)  # 30 s since the head: however busy the client looked
    assert wire.value().startswith(b"HTTP/1.1 408 ")
    assert wire.head()[1]["connection"] == "close"
    assert wire.transport.disconnecting
    wire.send(b"{")  # nothing more is read
    assert wire.value().count(b"HTTP/1.1") == 1


def test_prompt_body_leaves_no_deadline_behind() -> None:
    """A body that arrives in time is served; its deadline is gone with it."""
    site, clock = body_site(body_timeout=30)
    wire = Wire(site)
    wire.send(drip_head(2) + b"{}")
    assert wire.value().startswith(b"HTTP/1.1 200 ")
    assert wire.value().endswith(b"got 2 bytes")
    clock.advance(31)
    assert b"408" not in wire.value()


def test_body_deadline_comes_from_the_site() -> None:
    site, clock = body_site(body_timeout=5)
    wire = Wire(site)
    wire.send(drip_head())
    clock.advance(5)
    assert wire.value().startswith(b"HTTP/1.1 408 ")


def connect(site: BoundedSite, host: str, port: int = 40000) -> Any:
    """A connection to C{site} from C{host}; the protocol it got, connected."""
    from twisted.internet.address import IPv4Address
    from twisted.internet.testing import StringTransport

    transport = StringTransport(
        hostAddress=IPv4Address("TCP", "127.0.0.1", 8000),
        peerAddress=IPv4Address("TCP", host, port),
    )
    protocol = site.buildProtocol(transport.getPeer())
    protocol.makeConnection(transport)
    return protocol


def test_one_connection_over_the_per_address_limit_is_refused() -> None:
    """The N+1th connection from one address gets 503 and is closed; others are served."""
    site, _ = body_site(max_connections_per_address=3)
    with capturedLogs() as events:
        kept = [connect(site, "192.0.2.7", 40000 + n) for n in range(3)]
        refused = [connect(site, "192.0.2.7", 41000 + n) for n in range(2)]
    for protocol in refused:
        assert protocol.transport.value().startswith(b"HTTP/1.1 503 ")
        assert b"Retry-After: 10" in protocol.transport.value()
        assert protocol.transport.disconnecting
    assert not any(p.transport.disconnecting for p in kept)
    other = connect(site, "192.0.2.8")
    assert not other.transport.disconnecting
    warnings = [e for e in events if e["log_level"] == LogLevel.warn]
    assert len(warnings) == 1  # once, not per refused connection
    kept[0].connectionLost(Failure(ConnectionDone()))
    again = connect(site, "192.0.2.7", 42000)
    assert not again.transport.disconnecting
    assert site.connections["192.0.2.7"] == 3


def test_no_per_address_limit_at_zero() -> None:
    site, _ = body_site(max_connections_per_address=0)
    protocols = [connect(site, "192.0.2.7", 40000 + n) for n in range(300)]
    assert not any(p.transport.disconnecting for p in protocols)


class FakeListener:
    def __init__(self) -> None:
        self.fail_with: int | None = None

    def accept(self) -> Any:
        if self.fail_with is not None:
            raise OSError(self.fail_with, os.strerror(self.fail_with))
        return "client", ("127.0.0.1", 1)

    def fileno(self) -> int:
        return 42


class FakePort:
    """A listening port as the site sees it: reading or not, and its socket."""

    def __init__(self) -> None:
        self.reading = True
        self.connected = True
        self.disconnecting = False
        self.socket: Any = FakeListener()

    def stopReading(self) -> None:
        self.reading = False

    def startReading(self) -> None:
        self.reading = True


def test_out_of_descriptors_stops_accepting_logs_once_and_resumes() -> None:
    """
    EMFILE in accept: to Twisted's accept loop it is "no more clients" (so
    waiting clients are neither accepted nor dropped), the port stops
    accepting, one warning, and it accepts again a moment later.
    """
    site, clock = body_site()
    port = FakePort()
    listener = port.socket
    site.watch_port(port)
    assert port.socket.fileno() == 42  # the rest of the socket is untouched
    listener.fail_with = errno.EMFILE
    with capturedLogs() as events:
        for _ in range(3):
            with pytest.raises(BlockingIOError) as raised:
                port.socket.accept()
            assert raised.value.errno == errno.EAGAIN
        assert not port.reading
        clock.advance(RESUME_SECONDS)
        assert port.reading
        with pytest.raises(BlockingIOError):  # again within the minute: not logged again
            port.socket.accept()
        assert not port.reading
        clock.advance(RESUME_SECONDS)
    assert port.reading
    warnings = [e for e in events if e["log_level"] >= LogLevel.warn]
    assert len(warnings) == 1
    assert "EMFILE" in formatEvent(warnings[0])
    listener.fail_with = None
    assert port.socket.accept()[0] == "client"


def test_out_of_descriptors_for_a_body_file_is_a_503(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    No descriptor for the temporary file of a body over 100 kB: 503 with
    Retry-After and close, the port stops accepting, no traceback.
    """
    import tempfile

    def no_descriptor(*args: object, **kwargs: object) -> Any:
        raise OSError(errno.EMFILE, "Too many open files")

    site, _ = body_site()
    port = FakePort()
    site.watch_port(port)
    monkeypatch.setattr(tempfile, "TemporaryFile", no_descriptor)
    wire = Wire(site)
    with capturedLogs() as events:
        wire.send(drip_head(200_000))
    assert wire.value().startswith(b"HTTP/1.1 503 ")
    assert wire.head()[1]["retry-after"] == "10"
    assert wire.transport.disconnecting
    assert not port.reading
    assert [e["log_level"] for e in events if e["log_level"] >= LogLevel.warn] == [LogLevel.warn]


def test_other_accept_errors_do_not_pause() -> None:
    site, _ = body_site()
    port = FakePort()
    site.watch_port(port)
    port.socket._listener.fail_with = errno.ECONNABORTED
    with pytest.raises(OSError):
        port.socket.accept()
    assert port.reading


def test_descriptor_budget_stops_accepting_before_the_limit() -> None:
    """At C{max_connections} open, the port stops accepting until one closes."""
    site, clock = body_site(max_connections=2)
    port = FakePort()
    site.watch_port(port)
    first = connect(site, "192.0.2.1")
    assert port.reading
    connect(site, "192.0.2.2")
    assert not port.reading
    clock.advance(RESUME_SECONDS)
    assert not port.reading  # still full
    first.connectionLost(Failure(ConnectionDone()))
    clock.advance(RESUME_SECONDS)
    assert port.reading
    assert site.open_connections == 1


def test_descriptor_budget() -> None:
    """A quarter (at most 256) kept back; two descriptors per connection."""
    assert descriptor_budget(1024) == 384
    assert descriptor_budget(256) == 96
    assert descriptor_budget(20000) == 9872
    assert descriptor_budget(10) == 16
