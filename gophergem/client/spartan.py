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

from gophergem.client.headed import DEADLINE, HeadedResponseProtocol
from gophergem.wire.spartan import HeaderParser, ResponseHeader, SpartanStatus, SpartanURL

__all__ = [
    "CONNECTION_RESET",
    "DEADLINE",
    "SpartanClientProtocol",
    "SpartanResponse",
]

#: C{incomplete_reason}: the connection broke before the server had ended the body.
CONNECTION_RESET = "connection_reset"


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


class SpartanClientProtocol(HeadedResponseProtocol[ResponseHeader, SpartanResponse]):
    """
    Send one request and collect the response.

    Cancelling L{finished} aborts the connection (see
    L{HeadedResponseProtocol} for C{keep_partial}).

    @ivar finished: Fires once with a L{SpartanResponse}, or fails with a
        L{GophergemError}: L{ProtocolError<gophergem.errors.ProtocolError>}
        or L{InvalidStatus<gophergem.errors.InvalidStatus>} for a header
        that is not Spartan's (or none at all).
    """

    def __init__(
        self,
        request: bytes,
        limit: int,
        *,
        keep_partial: Callable[[], bool] | None = None,
    ) -> None:
        super().__init__(HeaderParser(), limit, SpartanResponse, CONNECTION_RESET, keep_partial)
        self._request = request

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

    def _has_body(self) -> bool:
        return self._header is not None and self._header.status is SpartanStatus.SUCCESS

    def connectionMade(self) -> None:
        assert self.transport is not None
        self.transport.write(self._request)
