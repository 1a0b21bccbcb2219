"""
Tests for L{gophergem.client.gopher}: the protocol on a StringTransport.
"""

from __future__ import annotations

from twisted.internet.defer import CancelledError
from twisted.internet.error import ConnectionDone, ConnectionLost
from twisted.internet.testing import StringTransport
from twisted.python.failure import Failure
from twisted.trial.unittest import SynchronousTestCase

from gophergem.client.gopher import GopherClientProtocol, RawResponse
from gophergem.errors import ConnectionFailed


def connected(request: bytes = b"/x\r\n", limit: int = 1024, menu: bool = False):
    protocol = GopherClientProtocol(request, limit, menu)
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
        """
        A connection lost mid-response still delivers what arrived, marked
        unclean and incomplete (connection_reset).
        """
        protocol, _ = connected()
        protocol.dataReceived(b"partial")
        protocol.connectionLost(Failure(ConnectionLost()))
        self.assertEqual(
            self.successResultOf(protocol.finished),
            RawResponse(b"partial", False, False, "connection_reset"),
        )

    def test_menu_without_terminator(self) -> None:
        """
        A menu without its '.' line is whole when the server closed cleanly
        (the SPEC tolerates it) and incomplete when the connection broke.
        """
        for reason, expected in ((ConnectionDone(), None), (ConnectionLost(), "connection_reset")):
            protocol, transport = connected(menu=True)
            protocol.dataReceived(b"iHi\t\tx\t1\r\n")
            self.assertFalse(transport.disconnecting)
            protocol.connectionLost(Failure(reason))
            response = self.successResultOf(protocol.finished)
            self.assertEqual(response.incomplete_reason, expected)

    def test_terminated_menu_then_reset_is_whole(self) -> None:
        """A menu that ended at its '.' line is whole, however the connection went."""
        protocol, _ = connected(menu=True)
        protocol.dataReceived(b"iHi\t\tx\t1\r\n.\r\n")
        protocol.connectionLost(Failure(ConnectionLost()))
        self.assertIsNone(self.successResultOf(protocol.finished).incomplete_reason)

    def test_cap_is_not_incomplete(self) -> None:
        """A body we cut at the cap is complete-to-the-cap (overflowed), not incomplete."""
        protocol, _ = connected(limit=4)
        protocol.dataReceived(b"0123456789")
        protocol.connectionLost(Failure(ConnectionLost()))
        self.assertIsNone(self.successResultOf(protocol.finished).incomplete_reason)


def deadline_connected(passed: bool = True, menu: bool = False):
    """A connected protocol told that the deadline has (or has not) passed when cancelled."""
    protocol = GopherClientProtocol(b"/x\r\n", 1024, menu, keep_partial=lambda: passed)
    transport = StringTransport()
    protocol.makeConnection(transport)
    return protocol, transport


class SynchronousAbort(StringTransport):
    """A transport whose abort reports the lost connection at once."""

    def abortConnection(self) -> None:
        super().abortConnection()
        self.protocol.connectionLost(Failure(ConnectionLost()))


class GopherDeadlineTests(SynchronousTestCase):
    def test_deadline_keeps_what_arrived(self) -> None:
        """Cancelled by the deadline after bytes arrived: fires with them, marked deadline."""
        protocol, transport = deadline_connected()
        protocol.dataReceived(b"half a te")
        protocol.finished.cancel()
        self.assertTrue(transport.disconnecting)
        self.assertEqual(
            self.successResultOf(protocol.finished),
            RawResponse(b"half a te", False, False, "deadline"),
        )
        protocol.connectionLost(Failure(ConnectionLost()))  # fires nothing more

    def test_deadline_before_any_byte_is_a_cancellation(self) -> None:
        """Nothing arrived before the deadline: the cancel stands (the fetch says TIMEOUT)."""
        protocol, _ = deadline_connected()
        protocol.finished.cancel()
        self.failureResultOf(protocol.finished, CancelledError)

    def test_cancel_by_a_caller_keeps_nothing(self) -> None:
        """Cancelled while the deadline has not passed (a caller gave up): CancelledError."""
        protocol, _ = deadline_connected(passed=False)
        protocol.dataReceived(b"half")
        protocol.finished.cancel()
        self.failureResultOf(protocol.finished, CancelledError)

    def test_without_keep_partial_cancel_keeps_nothing(self) -> None:
        """A protocol not told about a deadline (a robots.txt probe) never keeps a part."""
        protocol, _ = connected()
        protocol.dataReceived(b"User-agent: *\r\nDisa")
        protocol.finished.cancel()
        self.failureResultOf(protocol.finished, CancelledError)

    def test_cancel_with_a_synchronous_abort(self) -> None:
        """An abort that reports at once still ends as the cancel says, once."""
        for passed in (True, False):
            protocol = GopherClientProtocol(b"/x\r\n", 100, keep_partial=lambda p=passed: p)
            transport = SynchronousAbort()
            transport.protocol = protocol
            protocol.makeConnection(transport)
            protocol.dataReceived(b"abc")
            protocol.finished.cancel()
            if passed:
                response = self.successResultOf(protocol.finished)
                self.assertEqual((response.data, response.incomplete_reason), (b"abc", "deadline"))
            else:
                # Not ConnectionFailed from the abort: the fetch must see a cancel.
                self.failureResultOf(protocol.finished, CancelledError)

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


class OwnershipTests(SynchronousTestCase):
    def test_buffer_handed_over(self) -> None:
        """Once the body is delivered, the protocol holds none of its bytes."""
        protocol, _ = connected(limit=1 << 20)
        protocol.dataReceived(b"x" * 70000)
        protocol.connectionLost(Failure(ConnectionDone()))
        raw = self.successResultOf(protocol.finished)
        self.assertEqual(len(raw.data), 70000)
        self.assertEqual(protocol._buffer.value(), b"")
        self.assertEqual(protocol._buffer.size, 70000)
