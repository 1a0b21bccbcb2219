# -*- test-case-name: tests.test_client_smolweb -*-
"""
The Nex client protocol: the path and CRLF, then every byte up to the
server's close, capped; a thin adapter between a connection and
L{gophergem.wire.nex}.

Nex has no status and no terminator: the document is what arrives before
the close, so this is
L{GopherClientProtocol<gophergem.client.gopher.GopherClientProtocol>}
reading a text, with a Nex request: the same cap, the same one Deferred,
the same C{connection_reset} and C{deadline} marks on an answer that may
not be whole.
"""

from __future__ import annotations

from collections.abc import Callable

from gophergem.client.gopher import CONNECTION_RESET, DEADLINE, GopherClientProtocol, RawResponse
from gophergem.wire.nex import NexURL

__all__ = ["CONNECTION_RESET", "DEADLINE", "NexClientProtocol", "RawResponse"]


class NexClientProtocol(GopherClientProtocol):
    """
    Send C{url}'s request line and collect the document, at most C{limit}
    bytes.

    @ivar finished: Fires once with a L{RawResponse}, or fails with
        L{ConnectionFailed<gophergem.errors.ConnectionFailed>} when the
        connection broke before any byte arrived.  Cancelling it aborts the
        connection (see L{GopherClientProtocol} for C{keep_partial}).
    """

    def __init__(
        self, url: NexURL, limit: int, *, keep_partial: Callable[[], bool] | None = None
    ) -> None:
        super().__init__(url.request_line(), limit, keep_partial=keep_partial)
