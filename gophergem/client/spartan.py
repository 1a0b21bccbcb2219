# -*- test-case-name: tests.test_client_smolweb -*-
"""
The Spartan client protocol: a thin adapter between a plain TCP connection
and L{gophergem.wire.spartan}.

It writes the request (line and data block) on connect, parses the header
as it arrives (its length capped), buffers a success's body up to a byte
cap (cutting the connection there), and fires one Deferred, from
C{connectionLost}, with a L{SpartanResponse}.  A header other than a
success has no body, so the connection is closed as soon as it has
arrived: a server that holds it open is not waited on.

A body is never passed off as whole when it may not be: one ended by a
broken connection says C{connection_reset}, one whose fetch deadline
cancelled the read after body bytes had arrived says C{deadline}.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import ITCPTransport
from twisted.internet.protocol import Protocol
from twisted.python.failure import Failure

from gophergem.errors import ConnectionFailed, GophergemError
from gophergem.wire.gopher import ResponseBuffer
from gophergem.wire.spartan import HeaderParser, ResponseHeader, SpartanStatus, SpartanURL

__all__ = [
    "CONNECTION_RESET",
    "DEADLINE",
    "SpartanClientProtocol",
    "SpartanResponse",
]

#: C{incomplete_reason}: the connection broke before the server had ended the body.
CONNECTION_RESET = "connection_reset"

#: C{incomplete_reason}: the fetch deadline ended the read while the server
#: was still sending the body (or holding the connection open).
DEADLINE = "deadline"


@attrs.frozen
class SpartanResponse:
    """
    What a Spartan server answered.

    @ivar header: The parsed response header.
    @ivar body: The body bytes of a success, at most the cap (handed over:
        whoever decodes it may clear it).
    @ivar overflowed: The server sent more than the cap (the connection was cut).
    @ivar clean: The server closed the connection normally.
    @ivar incomplete_reason: Why C{body} may not be whole
        (L{CONNECTION_RESET} or L{DEADLINE}), or C{None} when it is, when
        the cap cut it (see C{overflowed}) or when the status has no body.
    """

    header: ResponseHeader
    body: bytearray
    overflowed: bool
    clean: bool
    incomplete_reason: str | None = None


class SpartanClientProtocol(Protocol):
    """
    Send one request and collect the response.

    Cancelling L{finished} aborts the connection.  It then fails with
    C{CancelledError}, unless C{keep_partial} is given, answers true when
    asked (the fetch deadline, not a caller, cancelled it) and a response is
    in hand (a header, and for a success at least one body byte): then it
    fires with that, a success marked L{DEADLINE}.

    @ivar finished: Fires once with a L{SpartanResponse}, or fails with a
        L{GophergemError}: L{ProtocolError<gophergem.errors.ProtocolError>}
        or L{InvalidStatus<gophergem.errors.InvalidStatus>} for a header
        that is not Spartan's (or none at all).
    """

    # Connected over TCP, so abortConnection is there.
    transport: ITCPTransport | None

    def __init__(
        self,
        request: bytes,
        limit: int,
        *,
        keep_partial: Callable[[], bool] | None = None,
    ) -> None:
        self._request = request
        self._keep_partial = keep_partial
        self._parser = HeaderParser()
        self._body = ResponseBuffer(limit)
        self._header: ResponseHeader | None = None
        self._error: GophergemError | None = None
        self._cancelled = False
        self.finished: Deferred[SpartanResponse] = Deferred(self._cancel)

    @classmethod
    def for_url(
        cls,
        url: SpartanURL,
        limit: int,
        data: bytes | None = None,
        *,
        keep_partial: Callable[[], bool] | None = None,
    ) -> SpartanClientProtocol:
        """The protocol that asks for C{url}, sending C{data} (else the URL's query)."""
        return cls(url.request(data), limit, keep_partial=keep_partial)

    def _cancel(self, _: Deferred[SpartanResponse]) -> None:
        self._cancelled = True
        if self.transport is not None:
            self.transport.abortConnection()
        if self._keeps_partial() and not self.finished.called:
            self.finished.callback(self._response(clean=False))

    def _has_body(self) -> bool:
        return self._header is not None and self._header.status is SpartanStatus.SUCCESS

    def _keeps_partial(self) -> bool:
        """Whether a cancelled read still delivers what it holds."""
        if self._header is None or self._error is not None:
            return False
        if self._keep_partial is None or not self._keep_partial():
            return False
        return not self._has_body() or self._body.size > 0 or self._body.overflowed

    def _response(self, clean: bool) -> SpartanResponse:
        assert self._header is not None
        reason = None
        if self._has_body() and not (clean or self._body.overflowed):
            reason = DEADLINE if self._cancelled else CONNECTION_RESET
        return SpartanResponse(
            self._header, self._body.take(), self._body.overflowed, clean, reason
        )

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(self._request)

    def dataReceived(self, data: bytes) -> None:
        if self._error is not None or (self._header is not None and not self._has_body()):
            return
        assert self.transport is not None
        if self._header is None:
            try:
                header = self._parser.feed(data)
            except GophergemError as error:
                self._error = error
                self.transport.abortConnection()
                return
            if header is None:
                return
            self._header = header
            if not self._has_body():
                self.transport.loseConnection()
                return
            data = self._parser.rest
        if self._body.feed(data):
            self.transport.abortConnection()

    def connectionLost(self, reason: Failure = Failure(ConnectionDone())) -> None:  # noqa: B008
        if self.finished.called:
            return
        if self._cancelled and not self._keeps_partial():
            return  # cancel() is failing finished with CancelledError right now
        if self._error is not None:
            self.finished.errback(self._error)
        elif self._header is None:
            try:
                self._parser.eof()
            except GophergemError as error:
                self.finished.errback(error)
            else:  # pragma: no cover - eof() always raises without a header
                self.finished.errback(ConnectionFailed(message="The server did not answer."))
        else:
            clean = reason.check(ConnectionDone) is not None and not self._cancelled
            self.finished.callback(self._response(clean or not self._has_body()))
