# -*- test-case-name: tests.test_client_gopher -*-
"""
The Gopher client protocol: a thin adapter between a connection and
L{gophergem.wire.gopher}.

It writes one request line, buffers the response up to a byte cap (cutting
the connection when the cap is reached) and fires one Deferred, from
C{connectionLost}, with a L{RawResponse}.  It holds no policy, no cache and
no URL logic.

A response is never passed off as whole when it may not be: one that ended
by a broken connection says C{connection_reset}, and one whose fetch
deadline cancelled the read after bytes had arrived says C{deadline} (when
the protocol was built to keep partial content; a robots.txt probe is not).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import ITCPTransport
from twisted.internet.protocol import Protocol
from twisted.python.failure import Failure

from gophergem.errors import ConnectionFailed
from gophergem.wire.gopher import ResponseBuffer

__all__ = [
    "CONNECTION_RESET",
    "DEADLINE",
    "GopherClientProtocol",
    "RawResponse",
]

#: C{incomplete_reason}: the connection broke (a reset, or any close other
#: than a clean one) before the server had ended its answer.
CONNECTION_RESET = "connection_reset"

#: C{incomplete_reason}: the fetch deadline ended the read while the server
#: was still sending (or holding the connection open).
DEADLINE = "deadline"


@attrs.frozen
class RawResponse:
    """
    What a server sent.

    @ivar data: The response bytes, at most the cap.  The protocol hands
        its buffer over (it keeps no copy); whoever decodes the body may
        clear it (see L{gophergem.wire.gopher.parse_text}), so that no raw
        copy of a text outlives its decoding.
    @ivar overflowed: Whether the server sent more than the cap (the
        connection was cut there).
    @ivar clean: Whether the server closed the connection normally (or a
        menu ended at its lone C{.} line).
    @ivar incomplete_reason: Why C{data} may not be the whole answer
        (L{CONNECTION_RESET} or L{DEADLINE}), or C{None} when it is whole or
        was cut at the cap by us (see C{overflowed}).
    """

    data: bytearray
    overflowed: bool
    clean: bool
    incomplete_reason: str | None = None


class GopherClientProtocol(Protocol):
    """
    Send one selector and collect the answer.

    Cancelling L{finished} aborts the connection.  It then fails with
    C{CancelledError}, unless C{keep_partial} is given, answers true when
    asked (the fetch deadline, not a caller, cancelled it) and bytes have
    arrived: then it fires with what arrived, marked L{DEADLINE}.

    @ivar finished: Fires once with a L{RawResponse}, or fails with
        L{ConnectionFailed} when the connection broke before any byte arrived.
    """

    # Connected over TCP (or TLS over TCP), so abortConnection is there.
    transport: ITCPTransport | None

    def __init__(
        self,
        request: bytes,
        limit: int,
        menu: bool = False,
        *,
        keep_partial: Callable[[], bool] | None = None,
    ) -> None:
        self._request = request
        self._buffer = ResponseBuffer(limit)
        self._menu = menu
        self._keep_partial = keep_partial
        self._ended_early = False
        self._cancelled = False
        self.finished: Deferred[RawResponse] = Deferred(self._cancel)

    def _cancel(self, _: Deferred[RawResponse]) -> None:
        self._cancelled = True
        if self.transport is not None:
            self.transport.abortConnection()
        if self._keeps_partial() and not self.finished.called:
            self.finished.callback(self._response(clean=self._ended_early))

    def _keeps_partial(self) -> bool:
        """Whether a cancelled read still delivers what it holds."""
        return self._keep_partial is not None and self._keep_partial() and self._buffer.size > 0

    def _response(self, clean: bool) -> RawResponse:
        reason = None
        if not (clean or self._buffer.overflowed):
            reason = DEADLINE if self._cancelled else CONNECTION_RESET
        return RawResponse(self._buffer.take(), self._buffer.overflowed, clean, reason)

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(self._request)

    def dataReceived(self, data: bytes) -> None:
        assert self.transport is not None
        if self._buffer.feed(data):
            self.transport.abortConnection()
        elif self._menu and self._buffer.ends_menu():
            # A menu is complete at its lone "." line; do not wait on a
            # server that forgets to close.
            self._ended_early = True
            self.transport.loseConnection()

    def connectionLost(self, reason: Failure = Failure(ConnectionDone())) -> None:  # noqa: B008
        if self.finished.called:
            return
        clean = self._ended_early or (
            reason.check(ConnectionDone) is not None and not self._cancelled
        )
        if self._cancelled and not clean and not self._keeps_partial():
            return  # cancel() is failing finished with CancelledError right now
        if not self._buffer.size and not clean and not self._buffer.overflowed:
            self.finished.errback(
                ConnectionFailed(message="The connection broke before the server answered.")
            )
            return
        self.finished.callback(self._response(clean))
