# -*- test-case-name: tests.test_client_gemini -*-
"""
The Gemini client protocol: a thin adapter between a TLS connection and
L{gophergem.wire.gemini}.

The request is written only once the handshake has completed and the trust
decision has been committed (C{on_handshake}), so a refused certificate never
sees a request byte.  The header is parsed as it arrives (with its length
capped), the body is buffered up to a byte cap, and one Deferred fires from
C{connectionLost} with a L{GeminiResponse}.  Whether the server closed with
TLS close_notify is recorded: a body cut without it may be incomplete.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
from OpenSSL import SSL
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import IHandshakeListener, ITCPTransport
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure
from zope.interface import implementer

from gophergem.errors import ConnectionFailed, GophergemError, TLSError
from gophergem.wire.gemini import HeaderParser, ResponseHeader
from gophergem.wire.gopher import ResponseBuffer

__all__ = ["GeminiClientFactory", "GeminiClientProtocol", "GeminiResponse"]


@attrs.frozen
class GeminiResponse:
    """
    What a Gemini server answered.

    @ivar header: The parsed response header.
    @ivar body: The body bytes, at most the cap.
    @ivar overflowed: The server sent more than the cap (the connection was cut).
    @ivar clean: The server ended the body with TLS close_notify.
    """

    header: ResponseHeader
    body: bytes
    overflowed: bool
    clean: bool


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

    @ivar finished: Fires once with a L{GeminiResponse}, or fails with a
        L{GophergemError}.
    """

    # Connected through TLSMemoryBIOProtocol, so abortConnection is there.
    transport: ITCPTransport | None

    def __init__(self, request: bytes, limit: int, on_handshake: Callable[[], None]) -> None:
        self._request = request
        self._on_handshake = on_handshake
        self._parser = HeaderParser()
        self._body = ResponseBuffer(limit)
        self._header: ResponseHeader | None = None
        self._error: GophergemError | None = None
        self._handshake_done = False
        self.finished: Deferred[GeminiResponse] = Deferred(self._cancel)

    def _cancel(self, _: Deferred[GeminiResponse]) -> None:
        if self.transport is not None:
            self.transport.abortConnection()

    def _fail(self, error: GophergemError) -> None:
        self._error = error
        assert self.transport is not None
        self.transport.abortConnection()

    def handshakeCompleted(self) -> None:
        self._handshake_done = True
        try:
            self._on_handshake()
        except GophergemError as error:
            self._fail(error)
            return
        assert self.transport is not None
        self.transport.write(self._request)

    def dataReceived(self, data: bytes) -> None:
        if self._error is not None:
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
            data = self._parser.rest
        if self._body.feed(data):
            assert self.transport is not None
            self.transport.abortConnection()

    def connectionLost(self, reason: Failure = Failure(ConnectionDone())) -> None:  # noqa: B008
        if self.finished.called:
            return
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
            self.finished.callback(
                GeminiResponse(
                    self._header,
                    self._body.value(),
                    self._body.overflowed,
                    reason.check(ConnectionDone) is not None,
                )
            )


class GeminiClientFactory(Factory):
    """Builds one L{GeminiClientProtocol} for one request."""

    noisy = False  # one factory per fetch: no "Starting factory" log lines

    def __init__(self, request: bytes, limit: int, on_handshake: Callable[[], None]) -> None:
        self.protocol_instance = GeminiClientProtocol(request, limit, on_handshake)

    def buildProtocol(self, addr: object) -> GeminiClientProtocol:
        self.protocol_instance.factory = self
        return self.protocol_instance
