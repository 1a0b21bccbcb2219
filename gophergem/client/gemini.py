# -*- test-case-name: tests.test_client_gemini -*-
"""
The Gemini client protocol: a thin adapter between a TLS connection and
L{gophergem.wire.gemini}.

The request is written only once the handshake has completed and the trust
decision has been committed (C{on_handshake}, which may answer later with a
Deferred: the request waits for it), so a refused certificate, or a pin
that could not be stored, never sees a request byte.  The header is parsed
as it arrives (with its length capped), the body is buffered up to a byte
cap, and one Deferred fires from C{connectionLost} with a
L{GeminiResponse}.

A body is never passed off as whole when it may not be: one that ended
without TLS close_notify says C{no_close_notify} (a reset looks the same
under TLS), and one whose fetch deadline cancelled the read after body
bytes had arrived says C{deadline}.  A header other than a success has no
body, so the connection is closed as soon as it has arrived.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from OpenSSL import SSL
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import IHandshakeListener, ITCPTransport
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gophergem.errors import ConnectionFailed, GophergemError, TLSError
from gophergem.wire.gemini import HeaderParser, ResponseHeader
from gophergem.wire.gopher import ResponseBuffer

__all__ = [
    "DEADLINE",
    "NO_CLOSE_NOTIFY",
    "GeminiClientProtocol",
    "GeminiResponse",
]

log = Logger()

#: C{incomplete_reason}: the body ended without TLS close_notify (a bare TCP
#: close, or a reset: TLS reports both alike), so it may have been cut.
NO_CLOSE_NOTIFY = "no_close_notify"

#: C{incomplete_reason}: the fetch deadline ended the read while the server
#: was still sending the body (or holding the connection open).
DEADLINE = "deadline"


@attrs.frozen
class GeminiResponse:
    """
    What a Gemini server answered.

    @ivar header: The parsed response header.
    @ivar body: The body bytes, at most the cap.  The protocol hands its
        buffer over (it keeps no copy); whoever decodes the body clears it,
        so that no raw copy of a text outlives its decoding.
    @ivar overflowed: The server sent more than the cap (the connection was cut).
    @ivar clean: The server ended the body with TLS close_notify.
    @ivar incomplete_reason: Why C{body} may not be whole
        (L{NO_CLOSE_NOTIFY} or L{DEADLINE}), or C{None} when it is, when the
        cap cut it (see C{overflowed}) or when the status has no body.
    """

    header: ResponseHeader
    body: bytearray
    overflowed: bool
    clean: bool
    incomplete_reason: str | None = None


def _tls_reason(failure: Failure) -> str:
    value = failure.value
    if isinstance(value, SSL.Error) and value.args and isinstance(value.args[0], list):
        reasons = [str(part[2]) for part in value.args[0] if len(part) > 2 and part[2]]
        if reasons:
            return "; ".join(reasons)
    return value.__class__.__name__


@implementer(IHandshakeListener)
class GeminiClientProtocol(Protocol):
    """
    Send one request line after the handshake and collect the response.

    Cancelling L{finished} aborts the connection.  It then fails with
    C{CancelledError}, unless C{keep_partial} is given, answers true when
    asked (the fetch deadline, not a caller, cancelled it) and a response is
    in hand (a header, and for a success at least one body byte): then it
    fires with that, a success marked L{DEADLINE}.

    @ivar finished: Fires once with a L{GeminiResponse}, or fails with a
        L{GophergemError}.
    """

    # Connected through TLSMemoryBIOProtocol, so abortConnection is there.
    transport: ITCPTransport | None

    def __init__(
        self,
        request: bytes,
        limit: int,
        on_handshake: Callable[[], Deferred[None] | None],
        *,
        keep_partial: Callable[[], bool] | None = None,
    ) -> None:
        self._request = request
        self._on_handshake = on_handshake
        self._keep_partial = keep_partial
        self._parser = HeaderParser()
        self._body = ResponseBuffer(limit)
        self._header: ResponseHeader | None = None
        self._error: GophergemError | None = None
        self._handshake_done = False
        self._cancelled = False
        self._committing: Deferred[None] | None = None
        self.finished: Deferred[GeminiResponse] = Deferred(self._cancel)

    def _cancel(self, _: Deferred[GeminiResponse]) -> None:
        self._cancelled = True
        if self._committing is not None:
            self._committing.cancel()
        if self.transport is not None:
            self.transport.abortConnection()
        if self._keeps_partial() and not self.finished.called:
            self.finished.callback(self._response(clean=False))

    def _has_body(self) -> bool:
        # Any 2x (an undefined 27 too) has a body; 99 and the like have none.
        return self._header is not None and self._header.status // 10 == 2

    def _keeps_partial(self) -> bool:
        """Whether a cancelled read still delivers what it holds."""
        if self._header is None or self._error is not None:
            return False
        if self._keep_partial is None or not self._keep_partial():
            return False
        return not self._has_body() or self._body.size > 0 or self._body.overflowed

    def _response(self, clean: bool) -> GeminiResponse:
        assert self._header is not None
        reason = None
        if self._has_body() and not (clean or self._body.overflowed):
            reason = DEADLINE if self._cancelled else NO_CLOSE_NOTIFY
        return GeminiResponse(self._header, self._body.take(), self._body.overflowed, clean, reason)

    def _fail(self, error: GophergemError) -> None:
        self._error = error
        assert self.transport is not None
        self.transport.abortConnection()

    def handshakeCompleted(self) -> None:
        self._handshake_done = True
        try:
            committed = self._on_handshake()
        except GophergemError as error:
            self._fail(error)
            return
        if committed is None:
            self._send()
            return
        self._committing = committed
        committed.addCallbacks(self._committed, self._not_committed)

    def _committed(self, _: object) -> None:
        self._committing = None
        if not self._cancelled and not self.finished.called:
            self._send()

    def _not_committed(self, failure: Failure) -> None:
        self._committing = None
        if self._cancelled or self.finished.called:
            return
        if isinstance(failure.value, GophergemError):
            self._fail(failure.value)
        else:
            log.failure("committing the trust decision failed", failure)
            self._fail(TLSError(message="The certificate's pin could not be stored."))

    def _send(self) -> None:
        assert self.transport is not None
        self.transport.write(self._request)

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
                # Only a success has a body: the response is whole, so a
                # server that holds the connection open is not waited on.
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
        elif isinstance(reason.value, GophergemError):
            # A refusal raised by the trust decision inside the handshake.
            self.finished.errback(reason.value)
        elif not self._handshake_done:
            if reason.check(SSL.Error):
                self.finished.errback(
                    TLSError(message=f"The TLS handshake failed ({_tls_reason(reason)}).")
                )
            else:
                self.finished.errback(
                    TLSError(message="The connection closed during the TLS handshake.")
                )
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
