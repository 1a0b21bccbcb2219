# -*- test-case-name: tests.test_client_gemini,tests.test_client_smolweb -*-
"""
The part of a client protocol that Gemini, Titan and Spartan share: read a
one-line response header (its length capped), then, for a status that has
one, a body up to a byte cap, and fire one Deferred from
C{connectionLost}.

A header other than one with a body ends the response, so the connection
is closed as soon as it has arrived: a server that holds it open is not
waited on.  A body is never passed off as whole when it may not be: one
ended by anything but a clean close is marked with the protocol's own
reason, one whose fetch deadline cancelled the read after body bytes had
arrived says C{deadline}.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import ITCPTransport
from twisted.internet.protocol import Protocol
from twisted.python.failure import Failure

from gophergem.errors import ConnectionFailed, GophergemError
from gophergem.wire.gopher import ResponseBuffer
from gophergem.wire.headerline import HeaderLineParser

__all__ = ["DEADLINE", "HeadedResponseProtocol"]

#: C{incomplete_reason}: the fetch deadline ended the read while the server
#: was still sending the body (or holding the connection open).
DEADLINE = "deadline"

_Header = TypeVar("_Header")
_Response = TypeVar("_Response")


class HeadedResponseProtocol(Protocol, Generic[_Header, _Response]):
    """
    Collect one response: a header, then the body of a status that has one.

    A subclass says which statuses have a body (L{_has_body}), writes the
    request itself, and may refuse a connection lost before the header for
    a reason of its own (L{_refusal}).

    Cancelling L{finished} aborts the connection.  It then fails with
    C{CancelledError}, unless C{keep_partial} is given, answers true when
    asked (the fetch deadline, not a caller, cancelled it) and a response is
    in hand (a header, and for a success at least one body byte): then it
    fires with that, a body marked L{DEADLINE}.

    @ivar finished: Fires once with the response, or fails with a
        L{GophergemError}.
    """

    # Connected over TCP (or TLS over TCP), so abortConnection is there.
    transport: ITCPTransport | None

    def __init__(
        self,
        parser: HeaderLineParser[_Header],
        limit: int,
        respond: Callable[[_Header, bytearray, bool, bool, str | None], _Response],
        unclean: str,
        keep_partial: Callable[[], bool] | None,
    ) -> None:
        """
        @param parser: Reads the header.
        @param limit: The most body bytes kept; more cut the connection.
        @param respond: Makes the response of a header, the body, whether it
            overflowed, whether the connection closed cleanly and why the
            body may not be whole.
        @param unclean: The C{incomplete_reason} of a body ended by a close
            that was not clean.
        """
        self._parser = parser
        self._body = ResponseBuffer(limit)
        self._respond = respond
        self._unclean = unclean
        self._keep_partial = keep_partial
        self._header: _Header | None = None
        self._error: GophergemError | None = None
        self._cancelled = False
        self.finished: Deferred[_Response] = Deferred(self._cancel)

    def _has_body(self) -> bool:
        """Whether the header has arrived and its status has a body."""
        raise NotImplementedError

    def _refusal(self, reason: Failure) -> GophergemError | None:
        """The error a connection lost for C{reason} before the header ends with, if any."""
        return None

    def _cancel(self, _: Deferred[_Response]) -> None:
        self._cancelled = True
        if self.transport is not None:
            self.transport.abortConnection()
        if self._keeps_partial() and not self.finished.called:
            self.finished.callback(self._response(clean=False))

    def _keeps_partial(self) -> bool:
        """Whether a cancelled read still delivers what it holds."""
        if self._header is None or self._error is not None:
            return False
        if self._keep_partial is None or not self._keep_partial():
            return False
        return not self._has_body() or self._body.size > 0 or self._body.overflowed

    def _response(self, clean: bool) -> _Response:
        assert self._header is not None
        reason = None
        if self._has_body() and not (clean or self._body.overflowed):
            reason = DEADLINE if self._cancelled else self._unclean
        return self._respond(self._header, self._body.take(), self._body.overflowed, clean, reason)

    def _fail(self, error: GophergemError) -> None:
        self._error = error
        assert self.transport is not None
        self.transport.abortConnection()

    def dataReceived(self, data: bytes) -> None:
        if self._error is not None or (self._header is not None and not self._has_body()):
            return
        if self._header is None:
            try:
                header = self._parser.feed(data)
            except GophergemError as error:
                self._fail(error)
                return
            if header is None:
                return
            self._header = header
            if not self._has_body():
                assert self.transport is not None
                self.transport.loseConnection()
                return
            data = self._parser.rest
        if self._body.feed(data):
            assert self.transport is not None
            self.transport.abortConnection()

    def connectionLost(self, reason: Failure = Failure(ConnectionDone())) -> None:  # noqa: B008
        if self.finished.called:
            return
        if self._cancelled and not self._keeps_partial():
            return  # cancel() is failing finished with CancelledError right now
        if self._error is not None:
            self.finished.errback(self._error)
            return
        refusal = self._refusal(reason)
        if refusal is not None:
            self.finished.errback(refusal)
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
