# -*- test-case-name: tests.test_client_smolweb -*-
"""
The Titan client protocol: an upload over the Gemini host's TLS, answered
with a Gemini response; a thin adapter between a TLS connection and
L{gophergem.wire.titan}.

Titan's exchange is Gemini's with a body after the request line, so this is
L{GeminiClientProtocol<gophergem.client.gemini.GeminiClientProtocol>}
writing L{encode_request<gophergem.wire.titan.encode_request>}'s bytes:
nothing is sent before the handshake has completed and the trust decision
is committed (C{on_handshake}), so a changed key uploads nothing; the
answer's header is capped and parsed as Gemini's, a redirect is reported
and never followed.
"""

from __future__ import annotations

from collections.abc import Callable

from twisted.internet.defer import Deferred

from gophergem.client.gemini import GeminiClientProtocol, GeminiResponse
from gophergem.wire.titan import TitanURL, encode_request

__all__ = ["GeminiResponse", "TitanClientProtocol"]


class TitanClientProtocol(GeminiClientProtocol):
    """
    Upload C{content} to C{url} once the handshake is done and committed,
    and collect the Gemini answer (its body at most C{limit} bytes).

    @ivar finished: Fires once with a L{GeminiResponse}, or fails with a
        L{GophergemError<gophergem.errors.GophergemError>}.
    """

    def __init__(
        self,
        url: TitanURL,
        content: bytes,
        limit: int,
        on_handshake: Callable[[], Deferred[None] | None],
        *,
        keep_partial: Callable[[], bool] | None = None,
    ) -> None:
        """
        @raise InvalidRequest: If C{url} names another size than
            C{content}'s, or its request line cannot be sent.
        """
        super().__init__(
            encode_request(url, content), limit, on_handshake, keep_partial=keep_partial
        )
