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
from twisted.internet.interfaces import IHandshakeListener
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gophergem.client.headed import DEADLINE, HeadedResponseProtocol
from gophergem.errors import GophergemError, TLSError
from gophergem.wire.gemini import HeaderParser, ResponseHeader

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
class GeminiClientProtocol(HeadedResponseProtocol[ResponseHeader, GeminiResponse]):
    """
    Send one request line after the handshake and collect the response.

    Cancelling L{finished} aborts the connection (see
    L{HeadedResponseProtocol} for C{keep_partial}).

    @ivar finished: Fires once with a L{GeminiResponse}, or fails with a
        L{GophergemError}.
    """

    def __init__(
        self,
        request: bytes,
        limit: int,
        on_handshake: Callable[[], Deferred[None] | None],
        *,
        keep_partial: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(HeaderParser(), limit, GeminiResponse, NO_CLOSE_NOTIFY, keep_partial)
        self._request = request
        self._on_handshake = on_handshake
        self._handshake_done = False
        self._committing: Deferred[None] | None = None

    def _cancel(self, finished: Deferred[GeminiResponse]) -> None:
        self._cancelled = True
        if self._committing is not None:
            self._committing.cancel()
        super()._cancel(finished)

    def _has_body(self) -> bool:
        # Any 2x (an undefined 27 too) has a body; 99 and the like have none.
        return self._header is not None and self._header.status // 10 == 2

    def _refusal(self, reason: Failure) -> GophergemError | None:
        if isinstance(reason.value, GophergemError):
            # A refusal raised by the trust decision inside the handshake.
            return reason.value
        if self._handshake_done:
            return None
        if reason.check(SSL.Error):
            return TLSError(message=f"The TLS handshake failed ({_tls_reason(reason)}).")
        return TLSError(message="The connection closed during the TLS handshake.")

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
