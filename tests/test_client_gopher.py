"""
Tests for L{gophergem.client.gopher}: the protocol on a StringTransport.
"""

from __future__ import annotations

from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from gophergem.client.gopher import GopherClientFactory, GopherClientProtocol, RawResponse
from gophergem.errors import ConnectionFailed


def connected(request: bytes = b"/x\r\n", limit: int = 1024, menu: bool = False):
    protocol = GopherClientFactory(request, limit, menu).buildProtocol(None)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


class GopherClientProtocolTests(SynchronousTestCase):
    def test_writes_request_on_connect(self) -> None:
        """The request line is written as soon as the connection is made."""
        _, transport = connected(b"/about\r\n")
        self.assertEqual(transport.value(), b"/about\r\n")

    def test_fires_only_on_close(self) -> None:
        """The result fires once the server closes, with every byte it sent."""
        protocol, _ = connected()
        protocol.dataReceived(b"hello ")
        protocol.dataReceived(b"world")
        self.assertNoResult(protocol.finished)
        protocol.connectionLost(Failure(ConnectionDone()))
        self.assertEqual(
            self.successResultOf(protocol.finished), RawResponse(b"hello world", False, True)
        )

    def test_cap_cuts_the_connection(self) -> None:
        """At the byte cap the connection is aborted and nothing beyond it is kept."""
        protocol, transport = connected(limit=8)
        protocol.dataReceived(b"0123456789abcdef")
        self.assertTrue(transport.disconnecting)
        protocol.connectionLost(Failure(ConnectionLost()))
        response = self.successResultOf(protocol.finished)
        self.assertEqual((response.data, response.overflowed), (b"01234567", True))

    def test_menu_terminator_ends_early(self) -> None:
        """A menu ends at its lone '.' line even if the server keeps the connection open."""
        protocol, transport = connected(menu=True)
        protocol.dataReceived(b"iHi\t\tx\t1\r\n.\r\n")
        self.assertTrue(transport.disconnecting)
        protocol.connectionLost(Failure(ConnectionLost()))
        self.assertTrue(self.successResultOf(protocol.finished).clean)

    def test_text_does_not_end_at_a_dot_line(self) -> None:
        """A text body is read to close: a '.' line mid-stream does not end it."""
        protocol, transport = connected(menu=False)
        protocol.dataReceived(b"a\r\n.\r\n")
        self.assertFalse(transport.disconnecting)

    def test_broken_before_any_byte(self) -> None:
        """A connection lost before any byte arrived is a ConnectionFailed error."""
        protocol, _ = connected()
        protocol.connectionLost(Failure(ConnectionLost()))
        self.failureResultOf(protocol.finished, ConnectionFailed)

    def test_broken_after_some_bytes(self) -> None:
        """A connection lost mid-response still delivers what arrived, marked unclean."""
        protocol, _ = connected()
        protocol.dataReceived(b"partial")
        protocol.connectionLost(Failure(ConnectionLost()))
        self.assertEqual(
            self.successResultOf(protocol.finished), RawResponse(b"partial", False, False)
        )

    def test_cancel_aborts(self) -> None:
        """Cancelling the result aborts the connection and fires only once."""
        protocol, transport = connected()
        protocol.finished.cancel()
        self.assertTrue(transport.disconnecting)
        protocol.connectionLost(Failure(ConnectionLost()))  # must not raise AlreadyCalled
        self.failureResultOf(protocol.finished)


def test_protocol_is_a_plain_protocol() -> None:
    """The client is a plain Protocol, not a LineReceiver (LF-only and long lines exist)."""
    from twisted.protocols.basic import LineOnlyReceiver, LineReceiver

    assert not issubclass(GopherClientProtocol, (LineReceiver, LineOnlyReceiver))
