"""
Tests for the small web's thin client protocols (L{gophergem.client.finger},
L{gophergem.client.nex}, L{gophergem.client.spartan},
L{gophergem.client.titan}): on a C{StringTransport}, Titan over real TLS in
memory (iosim), and each dialled through the connect pinch point
(L{gophergem.client.connect}) on a memory reactor.
"""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.protocol import Protocol
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from gophergem.client.connect import Connector
from gophergem.client.finger import FingerClientProtocol, RawResponse
from gophergem.client.nex import NexClientProtocol
from gophergem.client.spartan import SpartanClientProtocol, SpartanResponse
from gophergem.client.titan import GeminiResponse, TitanClientProtocol
from gophergem.errors import (
    ConnectionFailed,
    GophergemError,
    InvalidRequest,
    InvalidStatus,
    ProtocolError,
)
from gophergem.policy.targets import AddressPolicy
from gophergem.testing import EPOCH, FakeResolver, ServerTLS, make_certificate
from gophergem.tls import GeminiTLSCreator
from gophergem.trust.decision import decide
from gophergem.wire.finger import FingerURL
from gophergem.wire.gemini import ResponseHeader as GeminiHeader
from gophergem.wire.nex import NexURL
from gophergem.wire.spartan import MAX_HEADER_BYTES, ResponseHeader, SpartanStatus, SpartanURL
from gophergem.wire.titan import TitanURL
from tests.helpers.tls import tls_loopback


def outcome(d: Deferred[Any]) -> Any:
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "the Deferred has not fired"
    return box[0]


def connect(protocol: Protocol) -> StringTransport:
    transport = StringTransport()
    protocol.makeConnection(transport)
    return transport


# --- Finger and Nex: a line, then everything up to the close --------------------------


def test_finger_sends_the_query_and_reads_to_the_close() -> None:
    """The query line goes out on connect; the answer is every byte up to the close."""
    protocol = FingerClientProtocol(FingerURL.from_text("finger://alice@h"), 100)
    transport = connect(protocol)
    assert transport.value() == b"alice\r\n"
    protocol.dataReceived(b"Plan: ")
    protocol.dataReceived(b"none\r\n")
    assert not protocol.finished.called
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished) == RawResponse(b"Plan: none\r\n", False, True)


def test_finger_lists_users_with_an_empty_query() -> None:
    """finger://host/ sends an empty line."""
    transport = connect(FingerClientProtocol(FingerURL("h"), 100))
    assert transport.value() == b"\r\n"


def test_finger_cap_cuts_a_flood() -> None:
    """At the cap the connection is aborted; nothing past the cap is kept."""
    protocol = FingerClientProtocol(FingerURL("h", user="a"), 8)
    transport = connect(protocol)
    protocol.dataReceived(b"0123456789" * 100)
    assert transport.disconnecting
    protocol.connectionLost(Failure(ConnectionLost()))
    response = outcome(protocol.finished)
    assert (bytes(response.data), response.overflowed) == (b"01234567", True)


def test_finger_early_close_is_a_connection_failure() -> None:
    """A server that closes (or resets) before sending anything: CONNECTION_FAILED."""
    protocol = FingerClientProtocol(FingerURL("h"), 8)
    connect(protocol)
    protocol.connectionLost(Failure(ConnectionLost()))
    assert isinstance(outcome(protocol.finished).value, ConnectionFailed)


def test_nex_request_and_reset_mid_answer() -> None:
    """The path goes out decoded; an answer cut by a reset says so."""
    protocol = NexClientProtocol(NexURL.from_text("nex://h/a%20b/"), 100)
    transport = connect(protocol)
    assert transport.value() == b"/a b/\r\n"
    protocol.dataReceived(b"=> x")
    protocol.connectionLost(Failure(ConnectionLost()))
    assert outcome(protocol.finished) == RawResponse(b"=> x", False, False, "connection_reset")


def test_nex_drip_then_deadline_keeps_what_arrived() -> None:
    """A server that drips and never closes: at the deadline, what arrived, marked deadline."""
    protocol = NexClientProtocol(NexURL("h"), 100, keep_partial=lambda: True)
    transport = connect(protocol)
    for byte in b"# Dir":
        protocol.dataReceived(bytes([byte]))
    protocol.finished.cancel()
    assert transport.disconnecting
    assert outcome(protocol.finished) == RawResponse(b"# Dir", False, False, "deadline")
    protocol.connectionLost(Failure(ConnectionLost()))  # the abort lands: nothing more


def test_nex_silent_server_cancelled_is_a_cancellation() -> None:
    """Nothing arrived before the deadline: the cancellation itself is the outcome."""
    protocol = NexClientProtocol(NexURL("h"), 100, keep_partial=lambda: True)
    connect(protocol)
    protocol.finished.cancel()
    assert isinstance(outcome(protocol.finished).value, CancelledError)


# --- Spartan -----------------------------------------------------------------------


def spartan(limit: int = 100, **kw: Any) -> tuple[SpartanClientProtocol, StringTransport]:
    protocol = SpartanClientProtocol.for_url(SpartanURL.from_text("spartan://h/p?q"), limit, **kw)
    return protocol, connect(protocol)


def test_spartan_request_with_its_data_block() -> None:
    """The request line and the data block (the URL's query, or the given data)."""
    _, transport = spartan()
    assert transport.value() == b"h /p 1\r\nq"
    given = SpartanClientProtocol.for_url(SpartanURL("h", path="/in"), 10, b"typed")
    assert connect(given).value() == b"h /in 5\r\ntyped"


def test_spartan_success_in_single_bytes() -> None:
    """A response dripped a byte at a time is header and body."""
    protocol, _ = spartan()
    for byte in b"2 text/gemini\r\n# Hi\n":
        protocol.dataReceived(bytes([byte]))
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished) == SpartanResponse(
        ResponseHeader(SpartanStatus.SUCCESS, "text/gemini"), bytearray(b"# Hi\n"), False, True
    )


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (b"3 /moved\r\n", SpartanStatus.REDIRECT),
        (b"4 File not found\r\n", SpartanStatus.CLIENT_ERROR),
        (b"5 Broken\r\n", SpartanStatus.SERVER_ERROR),
    ],
)
def test_spartan_bodiless_status_closes_at_once(header: bytes, status: SpartanStatus) -> None:
    """3, 4 and 5 have no body: the connection is closed as soon as the header is in."""
    protocol, transport = spartan()
    protocol.dataReceived(header + b"trailing junk")
    assert transport.disconnecting
    protocol.connectionLost(Failure(ConnectionLost()))
    response = outcome(protocol.finished)
    assert (response.header.status, response.body, response.clean) == (status, b"", True)


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"2 " + b"a" * MAX_HEADER_BYTES, ProtocolError),
        (b"20 text/gemini\r\n", ProtocolError),
        (b"9 what\r\n", InvalidStatus),
        (bytes(range(256)), ProtocolError),
    ],
)
def test_spartan_bad_header_fails_and_aborts(data: bytes, error: type[GophergemError]) -> None:
    """A header that is not Spartan's (a huge one too) aborts the connection with its error."""
    protocol, transport = spartan()
    protocol.dataReceived(data)
    assert transport.disconnecting
    protocol.dataReceived(b"more")  # ignored
    protocol.connectionLost(Failure(ConnectionLost()))
    assert isinstance(outcome(protocol.finished).value, error)


def test_spartan_close_before_a_header_is_a_protocol_error() -> None:
    """A server that closes early, or in the middle of the header: PROTOCOL_ERROR."""
    for sent in (b"", b"2 text"):
        protocol, _ = spartan()
        protocol.dataReceived(sent)
        protocol.connectionLost(Failure(ConnectionDone()))
        assert isinstance(outcome(protocol.finished).value, ProtocolError)


def test_spartan_body_cap_and_reset() -> None:
    """A flooding body is cut at the cap; a body cut by a reset says connection_reset."""
    protocol, transport = spartan(limit=4)
    protocol.dataReceived(b"2 text/plain\r\n0123456789")
    assert transport.disconnecting
    protocol.connectionLost(Failure(ConnectionLost()))
    response = outcome(protocol.finished)
    assert (bytes(response.body), response.overflowed, response.incomplete_reason) == (
        b"0123",
        True,
        None,
    )
    protocol, _ = spartan()
    protocol.dataReceived(b"2 text/plain\r\nhalf")
    protocol.connectionLost(Failure(ConnectionLost()))
    assert outcome(protocol.finished).incomplete_reason == "connection_reset"


def test_spartan_never_closing_server_and_the_deadline() -> None:
    """Held open after a body: the deadline keeps the body, marked deadline."""
    protocol, transport = spartan(keep_partial=lambda: True)
    protocol.dataReceived(b"2 text/gemini\r\n# All\n")
    protocol.finished.cancel()
    assert transport.disconnecting
    response = outcome(protocol.finished)
    assert (bytes(response.body), response.incomplete_reason) == (b"# All\n", "deadline")


def test_spartan_cancel_in_the_header_is_a_cancellation() -> None:
    """A deadline in the middle of the header keeps nothing."""
    protocol, _ = spartan(keep_partial=lambda: True)
    protocol.dataReceived(b"2 te")
    protocol.finished.cancel()
    assert isinstance(outcome(protocol.finished).value, CancelledError)


# --- Titan over TLS -------------------------------------------------------------------


class TitanServerProbe(Protocol):
    """Reads a request line and C{size} bytes, then answers 30 and closes."""

    def __init__(self) -> None:
        self.received = b""

    def dataReceived(self, data: bytes) -> None:
        self.received += data
        line, crlf, body = self.received.partition(b"\r\n")
        if not crlf:
            return
        size = int(line.split(b";size=")[1].split(b";")[0])
        if len(body) >= size:
            self.transport.write(b"30 gemini://localhost/notes.gmi\r\n")
            self.transport.loseConnection()


def test_titan_uploads_after_the_handshake() -> None:
    """Nothing goes out before the handshake; then exactly the line and the bytes."""
    url = TitanURL.for_upload("titan://localhost/notes.gmi", 5, "text/plain", "pw")
    protocol = TitanClientProtocol(url, b"hello", 100, lambda: None)
    transport = connect(protocol)
    assert transport.value() == b""
    protocol.handshakeCompleted()
    assert transport.value() == (
        b"titan://localhost/notes.gmi;size=5;mime=text/plain;token=pw\r\nhello"
    )


def test_titan_size_mismatch_is_refused_before_anything() -> None:
    """A URL naming another size than the content's is refused when the protocol is built."""
    with pytest.raises(InvalidRequest):
        TitanClientProtocol(TitanURL("h", size=3), b"hello", 100, lambda: None)


def test_titan_over_tls_in_memory() -> None:
    """Over real TLS: the server reads exactly the upload; the answer is a Gemini redirect."""
    url = TitanURL.for_upload("titan://localhost/notes.gmi", 2048, "application/octet-stream")
    content = bytes(range(256)) * 8
    protocol = TitanClientProtocol(url, content, 100, lambda: None)
    creator = GeminiTLSCreator(
        "localhost", lambda cert: decide("localhost", 1965, None, cert, EPOCH)
    )
    probe = TitanServerProbe()
    client, _, _ = tls_loopback(creator, ServerTLS(*make_certificate(now=EPOCH)), protocol, probe)
    response = outcome(client.finished)
    assert isinstance(response, GeminiResponse)
    assert response.header == GeminiHeader(30, "gemini://localhost/notes.gmi")
    assert probe.received == url.request_line() + content


# --- through the connect pinch point ----------------------------------------------------


def pinch(allow_local: bool = False) -> tuple[Connector, MemoryReactorClock, FakeResolver]:
    reactor, resolver = MemoryReactorClock(), FakeResolver()
    return Connector(reactor, resolver, AddressPolicy(allow_local=allow_local)), reactor, resolver


@pytest.mark.parametrize(
    "url",
    [
        FingerURL("smol.example", 7979, "alice"),
        NexURL("smol.example", 1901),
        SpartanURL("smol.example", 3000),
    ],
    ids=["finger", "nex", "spartan"],
)
def test_plain_schemes_dial_the_vetted_address(url: Any) -> None:
    """Finger, Nex and Spartan go through the pinch point: resolved, vetted, plain TCP."""
    connector, reactor, resolver = pinch(allow_local=True)
    resolver.add("smol.example", "192.0.2.5")
    connector.connect(url, Protocol())
    host, port, factory, _timeout, _bind = reactor.tcpClients[0]
    assert (host, port) == ("192.0.2.5", url.port)
    assert "TLS" not in type(factory._wrappedFactory).__name__
    with pytest.raises(ValueError):
        connector.connect(url, Protocol(), object())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text",
    [
        "finger://127.0.0.1/alice",
        "finger://alice@10.0.0.1",
        "nex://[::1]/",
        "nex://2130706433/",
        "spartan://169.254.169.254/",
        "titan://192.168.0.1/x",
    ],
)
def test_private_addresses_are_blocked_with_nothing_dialled(text: str) -> None:
    """Every scheme, every spelling: a private address is BLOCKED and nothing is dialled."""
    from gophergem.wire.smolweb import parse_url

    connector, reactor, _ = pinch()
    url = parse_url(text)
    tls = GeminiTLSCreator(url.host, lambda presented: None) if isinstance(url, TitanURL) else None  # type: ignore[arg-type,return-value]
    failure = outcome(connector.connect(url, Protocol(), tls))
    assert failure.value.code == "BLOCKED"
    assert reactor.tcpClients == []


def test_titan_is_tls_only() -> None:
    """A titan:// URL without a connection creator is a programming error."""
    connector, reactor, _ = pinch(allow_local=True)
    with pytest.raises(ValueError):
        connector.connect(TitanURL("192.0.2.1"), Protocol())
    creator = GeminiTLSCreator("192.0.2.1", lambda presented: None)  # type: ignore[arg-type,return-value]
    connector.connect(TitanURL("192.0.2.1", 1966), Protocol(), creator)
    host, port, factory, _timeout, _bind = reactor.tcpClients[0]
    assert (host, port) == ("192.0.2.1", 1966)
    assert "TLS" in type(factory._wrappedFactory).__name__
