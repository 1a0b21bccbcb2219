# -*- test-case-name: tests.test_client_gopher -*-
"""
The Gopher client protocol: a thin adapter between a connection and
L{gophergem.wire.gopher}.

It writes one request line, buffers the response up to a byte cap (cutting
the connection when the cap is reached) and fires one Deferred, from
C{connectionLost}, with a L{RawResponse}.  It holds no policy, no cache and
no URL logic.
"""

from __future__ import annotations

import attrs
from twisted.internet.defer import Deferred
from twisted.internet.error import ConnectionDone
from twisted.internet.interfaces import ITCPTransport
from twisted.internet.protocol import Factory, Protocol
from twisted.python.failure import Failure

from gophergem.errors import ConnectionFailed
from gophergem.wire.gopher import ResponseBuffer

__all__ = ["GopherClientFactory", "GopherClientProtocol", "RawResponse"]


@attrs.frozen
class RawResponse:
    """
    What a server sent.

    @ivar data: The response bytes, at most the cap.
    @ivar overflowed: Whether the server sent more than the cap (the
        connection was cut there).
    @ivar clean: Whether the server closed the connection normally.
    """

    data: bytes
    overflowed: bool
    clean: bool


class GopherClientProtocol(Protocol):
    """
    Send one selector and collect the answer.

    @ivar finished: Fires once with a L{RawResponse}, or fails with
        L{ConnectionFailed} when the connection broke before any byte arrived.
    """

    # Connected over TCP (or TLS over TCP), so abortConnection is there.
    transport: ITCPTransport | None

    def __init__(self, request: bytes, limit: int, menu: bool = False) -> None:
        self._request = request
        self._buffer = ResponseBuffer(limit)
        self._menu = menu
        self._ended_early = False
        self.finished: Deferred[RawResponse] = Deferred(self._cancel)

    def _cancel(self, _: Deferred[RawResponse]) -> None:
        if self.transport is not None:
            self.transport.abortConnection()

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
        clean = reason.check(ConnectionDone) is not None or self._ended_early
        if not self._buffer.size and not clean and not self._buffer.overflowed:
            self.finished.errback(
                ConnectionFailed(message="The connection broke before the server answered.")
            )
            return
        self.finished.callback(RawResponse(self._buffer.value(), self._buffer.overflowed, clean))


class GopherClientFactory(Factory):
    """Builds one L{GopherClientProtocol} for one request."""

    noisy = False  # one factory per fetch: no "Starting factory" log lines

    def __init__(self, request: bytes, limit: int, menu: bool = False) -> None:
        self.protocol_instance = GopherClientProtocol(request, limit, menu)

    def buildProtocol(self, addr: object) -> GopherClientProtocol:
        self.protocol_instance.factory = self
        return self.protocol_instance
