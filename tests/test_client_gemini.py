"""
Tests for L{gophergem.client.gemini}: the thin protocol on a
C{StringTransport}, then over real TLS in memory (iosim) for what only TLS
can show: a body ended with and without close_notify.
"""

from __future__ import annotations

from typing import Any

import pytest
from OpenSSL import SSL
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.protocol import Protocol
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure

from gophergem.client.gemini import GeminiClientProtocol, GeminiResponse
from gophergem.errors import (
    CertificateStoreUnavailable,
    GophergemError,
    InvalidStatus,
    ProtocolError,
    TLSError,
)
from gophergem.testing import EPOCH, ServerTLS, make_certificate
from gophergem.tls import GeminiTLSCreator
from gophergem.trust.decision import decide
from gophergem.wire.gemini import ResponseHeader
from tests.helpers.tls import tls_loopback

REQUEST = b"gemini://localhost/\r\n"


def connected(limit: int = 1000, on_handshake: Any = None) -> tuple[GeminiClientProtocol, Any]:
    protocol = GeminiClientProtocol(REQUEST, limit, on_handshake or (lambda: None))
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


def outcome(d: Deferred[Any]) -> Any:
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "the Deferred has not fired"
    return box[0]


def test_request_written_after_handshake() -> None:
    """Nothing is written before the handshake; then exactly the request line, once."""
    protocol, transport = connected()
    assert transport.value() == b""
    protocol.handshakeCompleted()
    assert transport.value() == REQUEST


def test_commit_failure_sends_nothing() -> None:
    """When the handshake hook refuses, nothing is written and that error is the outcome."""
    error = CertificateStoreUnavailable(message="locked")

    def refuse() -> None:
        raise error

    protocol, transport = connected(on_handshake=refuse)
    protocol.handshakeCompleted()
    assert transport.value() == b"" and transport.disconnected
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished).value is error


def test_request_waits_for_a_deferred_commit() -> None:
    """A hook answering with a Deferred holds the request back until it fires."""
    committed: Deferred[None] = Deferred()
    protocol, transport = connected(on_handshake=lambda: committed)
    protocol.handshakeCompleted()
    assert transport.value() == b"" and not transport.disconnecting
    committed.callback(None)
    assert transport.value() == REQUEST


def test_failed_deferred_commit_sends_nothing() -> None:
    """A hook whose Deferred fails aborts the connection: no byte, that error."""
    committed: Deferred[None] = Deferred()
    protocol, transport = connected(on_handshake=lambda: committed)
    protocol.handshakeCompleted()
    error = CertificateStoreUnavailable(message="locked")
    committed.errback(error)
    assert transport.value() == b"" and transport.disconnected
    protocol.connectionLost(Failure(ConnectionLost()))
    assert outcome(protocol.finished).value is error


def test_unexpected_commit_failure_is_coded() -> None:
    """A hook failing with something uncoded still sends nothing, and is a TLS_ERROR."""
    committed: Deferred[None] = Deferred()
    protocol, transport = connected(on_handshake=lambda: committed)
    protocol.handshakeCompleted()
    committed.errback(RuntimeError("boom"))
    protocol.connectionLost(Failure(ConnectionLost()))
    assert transport.value() == b""
    assert isinstance(outcome(protocol.finished).value, TLSError)


def test_cancel_while_committing_cancels_the_commit() -> None:
    """Cancelling the read while the pin is stored cancels that too; nothing is sent."""
    cancelled: list[bool] = []
    committed: Deferred[None] = Deferred(lambda _: cancelled.append(True))
    protocol, transport = connected(on_handshake=lambda: committed)
    protocol.handshakeCompleted()
    protocol.finished.cancel()
    assert cancelled == [True] and transport.value() == b""
    protocol.connectionLost(Failure(ConnectionLost()))
    assert isinstance(outcome(protocol.finished).value, CancelledError)


def test_connection_lost_while_committing_sends_nothing_later() -> None:
    """A connection lost while the pin is stored: the late commit writes nothing."""
    committed: Deferred[None] = Deferred()
    protocol, transport = connected(on_handshake=lambda: committed)
    protocol.handshakeCompleted()
    protocol.connectionLost(Failure(ConnectionLost()))
    assert isinstance(outcome(protocol.finished).value, GophergemError)
    committed.callback(None)
    assert transport.value() == b""


def test_response_in_single_bytes() -> None:
    """A response dribbled one byte at a time is parsed into header and body."""
    protocol, _ = connected()
    protocol.handshakeCompleted()
    for byte in b"20 text/gemini\r\n# Hi\n":
        protocol.dataReceived(bytes([byte]))
    protocol.connectionLost(Failure(ConnectionDone()))
    response = outcome(protocol.finished)
    assert response == GeminiResponse(
        ResponseHeader(20, "text/gemini"), b"# Hi\n", overflowed=False, clean=True
    )


def test_body_with_header_in_one_chunk() -> None:
    """Body bytes that arrive with the header are kept."""
    protocol, _ = connected()
    protocol.handshakeCompleted()
    protocol.dataReceived(b"20 text/plain\r\nabc")
    protocol.dataReceived(b"def")
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished).body == b"abcdef"


def test_body_cap_cuts_connection() -> None:
    """A body beyond the cap is cut there, marked overflowed, and the connection aborted."""
    protocol, transport = connected(limit=4)
    protocol.handshakeCompleted()
    protocol.dataReceived(b"20 text/plain\r\n0123456789")
    assert transport.disconnected
    protocol.connectionLost(Failure(ConnectionLost()))
    response = outcome(protocol.finished)
    assert (response.body, response.overflowed) == (b"0123", True)


def test_body_exactly_at_cap_is_not_overflowed() -> None:
    """A body of exactly the cap is whole, not overflowed."""
    protocol, transport = connected(limit=4)
    protocol.handshakeCompleted()
    protocol.dataReceived(b"20 text/plain\r\n0123")
    assert not transport.disconnected
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished).overflowed is False


@pytest.mark.parametrize(
    ("reason", "clean"),
    [(ConnectionDone(), True), (ConnectionLost(), False), (SSL.Error([]), False)],
    ids=["close_notify", "tcp-drop", "tls-error"],
)
def test_clean_records_how_the_body_ended(reason: Exception, clean: bool) -> None:
    """Only an orderly close counts as clean; a dropped or failed connection does not."""
    protocol, _ = connected()
    protocol.handshakeCompleted()
    protocol.dataReceived(b"20 text/gemini\r\n# Hi\n")
    protocol.connectionLost(Failure(reason))
    assert outcome(protocol.finished).clean is clean


@pytest.mark.parametrize(
    ("header", "error"),
    [
        (b"200 text/gemini\r\n", ProtocolError),
        (b"20 text/gemini\n", ProtocolError),
        (b"99 nope\r\n", InvalidStatus),
        (b"20 " + b"m" * 1100, ProtocolError),
    ],
    ids=["three-digits", "bare-lf", "out-of-range", "too-long"],
)
def test_bad_header_fails_and_aborts(header: bytes, error: type[GophergemError]) -> None:
    """A malformed header aborts the connection and the outcome is its coded error."""
    protocol, transport = connected()
    protocol.handshakeCompleted()
    protocol.dataReceived(header)
    assert transport.disconnected
    protocol.dataReceived(b"more junk\r\n")  # ignored after the failure
    protocol.connectionLost(Failure(ConnectionLost()))
    assert outcome(protocol.finished).check(error)


def test_close_without_header_is_protocol_error() -> None:
    """A connection closed after the handshake with no header is PROTOCOL_ERROR."""
    protocol, _ = connected()
    protocol.handshakeCompleted()
    protocol.dataReceived(b"20 text/gem")
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished).check(ProtocolError)


def test_close_before_handshake_is_tls_error() -> None:
    """A connection lost during the handshake is TLS_ERROR, naming OpenSSL's reason."""
    protocol, transport = connected()
    reason = SSL.Error([("SSL routines", "", "tlsv1 alert protocol version")])
    protocol.connectionLost(Failure(reason))
    failure = outcome(protocol.finished)
    assert failure.check(TLSError)
    assert "protocol version" in failure.value.message
    assert transport.value() == b""


def test_refusal_from_handshake_is_passed_through() -> None:
    """A coded refusal that ended the handshake is the outcome as it is."""
    protocol, _ = connected()
    error = CertificateStoreUnavailable(message="locked")
    protocol.connectionLost(Failure(error))
    assert outcome(protocol.finished).value is error


def test_cancel_aborts() -> None:
    """Cancelling the outcome aborts the connection."""
    protocol, transport = connected()
    protocol.finished.cancel()
    assert transport.disconnected
    assert outcome(protocol.finished).check(CancelledError)


def test_fires_once() -> None:
    """A second connectionLost does not fire the outcome again."""
    protocol, _ = connected()
    protocol.handshakeCompleted()
    protocol.dataReceived(b"51 gone\r\n")
    protocol.connectionLost(Failure(ConnectionDone()))
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished).header.status == 51


# --- over real TLS in memory ---------------------------------------------------------


class GeminiServerProbe(Protocol):
    """Answers the request line with C{response}; ends as C{ending} says."""

    response = b"20 text/gemini\r\n# Hi\n"

    def __init__(self, ending: str) -> None:
        self.ending = ending
        self.received = b""

    def dataReceived(self, data: bytes) -> None:
        self.received += data
        if not self.received.endswith(b"\r\n"):
            return
        self.transport.write(self.response)
        if self.ending == "close_notify":
            self.transport.loseConnection()


def exchange(ending: str) -> tuple[GeminiResponse | Failure, bytes]:
    """Run one request over TLS; end the response as C{ending} says."""
    protocol = GeminiClientProtocol(REQUEST, 1000, lambda: None)
    creator = GeminiTLSCreator(
        "localhost", lambda cert: decide("localhost", 1965, None, cert, EPOCH)
    )
    tls = ServerTLS(*make_certificate(now=EPOCH))
    probe = GeminiServerProbe(ending)
    client, server, pump = tls_loopback(creator, tls, protocol, probe)
    if ending == "tcp-drop":
        server.transport.transport.loseConnection()  # under TLS: no close_notify
        for _ in range(100):
            if not pump.pump():
                break
    return outcome(client.finished), server.received


def test_tls_close_notify_is_clean() -> None:
    """Over TLS, a body ended with close_notify is clean and the request was the URL + CRLF."""
    response, sent = exchange("close_notify")
    assert isinstance(response, GeminiResponse)
    assert (response.body, response.clean) == (b"# Hi\n", True)
    assert sent == REQUEST


def test_tls_drop_without_close_notify_is_not_clean() -> None:
    """Over TLS, a body cut by a TCP close without close_notify is reported as not clean."""
    response, _ = exchange("tcp-drop")
    assert isinstance(response, GeminiResponse)
    assert (response.body, response.clean) == (b"# Hi\n", False)


def test_tls_drop_without_close_notify_says_why() -> None:
    """Over TLS, a body cut without close_notify names no_close_notify as its reason."""
    response, _ = exchange("tcp-drop")
    assert isinstance(response, GeminiResponse)
    assert response.incomplete_reason == "no_close_notify"
    clean, _ = exchange("close_notify")
    assert isinstance(clean, GeminiResponse) and clean.incomplete_reason is None


# --- partial content: the deadline and the end of the body ----------------------------


def deadline_connected(passed: bool = True, limit: int = 1000) -> tuple[GeminiClientProtocol, Any]:
    """A connected protocol told that the deadline has (or has not) passed when cancelled."""
    protocol = GeminiClientProtocol(REQUEST, limit, lambda: None, keep_partial=lambda: passed)
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.handshakeCompleted()
    return protocol, transport


def test_deadline_keeps_the_body_that_arrived() -> None:
    """Cancelled by the deadline after body bytes: fires with them, marked deadline, aborted."""
    protocol, transport = deadline_connected()
    protocol.dataReceived(b"20 text/gemini\r\n# Half a pa")
    protocol.finished.cancel()
    assert transport.disconnected
    response = outcome(protocol.finished)
    assert isinstance(response, GeminiResponse)
    assert (response.body, response.incomplete_reason) == (b"# Half a pa", "deadline")
    assert response.clean is False
    protocol.connectionLost(Failure(ConnectionLost()))  # fires nothing more


def test_deadline_before_any_body_byte_is_a_cancellation() -> None:
    """A success header with no body byte yet, or no header at all: the cancel stands."""
    for received in (b"", b"20 text/gem", b"20 text/gemini\r\n"):
        protocol, _ = deadline_connected()
        if received:
            protocol.dataReceived(received)
        protocol.finished.cancel()
        assert outcome(protocol.finished).check(CancelledError), received


def test_cancel_by_a_caller_keeps_nothing() -> None:
    """Cancelled while the deadline has not passed (a caller gave up): CancelledError."""
    protocol, _ = deadline_connected(passed=False)
    protocol.dataReceived(b"20 text/gemini\r\n# Half")
    protocol.finished.cancel()
    assert outcome(protocol.finished).check(CancelledError)


def test_deadline_after_a_capped_body_is_not_incomplete() -> None:
    """A body already cut at the cap is complete-to-the-cap, not incomplete."""
    protocol, _ = deadline_connected(limit=4)
    protocol.dataReceived(b"20 text/plain\r\n0123456789")
    protocol.finished.cancel()
    response = outcome(protocol.finished)
    assert (response.body, response.overflowed, response.incomplete_reason) == (
        b"0123",
        True,
        None,
    )


class SynchronousAbort(StringTransport):
    """A transport whose abort reports the lost connection at once."""

    def abortConnection(self) -> None:
        super().abortConnection()
        self.protocol.connectionLost(Failure(ConnectionLost()))


@pytest.mark.parametrize("passed", [True, False])
def test_cancel_with_a_synchronous_abort(passed: bool) -> None:
    """An abort that reports at once still ends as the cancel says, once."""
    protocol = GeminiClientProtocol(REQUEST, 100, lambda: None, keep_partial=lambda: passed)
    transport = SynchronousAbort()
    protocol.makeConnection(transport)
    transport.protocol = protocol
    protocol.handshakeCompleted()
    protocol.dataReceived(b"20 text/plain\r\nabc")
    protocol.finished.cancel()
    result = outcome(protocol.finished)
    if passed:
        assert (result.body, result.incomplete_reason) == (b"abc", "deadline")
    else:
        assert result.check(CancelledError)


def test_status_without_body_closes_at_once() -> None:
    """A header other than a success is the whole response: the client closes right away."""
    protocol, transport = connected()
    protocol.handshakeCompleted()
    protocol.dataReceived(b"31 gemini://elsewhere/\r\nignored bytes")
    assert transport.disconnecting
    protocol.dataReceived(b"more ignored bytes")
    protocol.connectionLost(Failure(ConnectionLost()))
    response = outcome(protocol.finished)
    assert (response.header.status, response.body, response.incomplete_reason) == (31, b"", None)


def test_clean_close_is_whole() -> None:
    """A body ended with close_notify carries no incomplete reason."""
    protocol, _ = connected()
    protocol.handshakeCompleted()
    protocol.dataReceived(b"20 text/gemini\r\n# Hi\n")
    protocol.connectionLost(Failure(ConnectionDone()))
    assert outcome(protocol.finished).incomplete_reason is None
