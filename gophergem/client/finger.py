# -*- test-case-name: tests.test_client_smolweb -*-
"""
The Finger client protocol: one query line, then every byte up to the
server's close (RFC 1288), capped; a thin adapter between a connection and
L{gophergem.wire.finger}.

Finger's exchange is Gopher's text exchange exactly (write a line, read to
the close, no terminator to look for), so this is
L{GopherClientProtocol<gophergem.client.gopher.GopherClientProtocol>} with
a finger query: the same cap, the same one Deferred, the same honesty about
an answer cut by a reset (C{connection_reset}) or by the deadline
(C{deadline}).
"""

from __future__ import annotations

from collections.abc import Callable

from gophergem.client.gopher import CONNECTION_RESET, DEADLINE, GopherClientProtocol, RawResponse
from gophergem.wire.finger import FingerURL

__all__ = ["CONNECTION_RESET", "DEADLINE", "FingerClientProtocol", "RawResponse"]


class FingerClientProtocol(GopherClientProtocol):
    """
    Send C{url}'s query line and collect the answer, at most C{limit} bytes.

    @ivar finished: Fires once with a L{RawResponse}, or fails with
        L{ConnectionFailed<gophergem.errors.ConnectionFailed>} when the
        connection broke before any byte arrived.  Cancelling it aborts the
        connection (see L{GopherClientProtocol} for C{keep_partial}).
    """

    def __init__(
        self, url: FingerURL, limit: int, *, keep_partial: Callable[[], bool] | None = None
    ) -> None:
        super().__init__(url.request_line(), limit, keep_partial=keep_partial)
