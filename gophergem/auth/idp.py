# -*- test-case-name: tests.test_auth_jwt -*-
"""
What the JWT and introspection verifiers share: the value a verified token
becomes (L{VerifiedToken}), the error for an identity provider that cannot
be reached (L{IdentityProviderUnavailable}), and one bounded HTTP exchange
with it over a Twisted C{IAgent} (L{exchange_json}).

Nothing here logs or keeps a token; the provider's answers are read with a
size cap and a deadline on the clock given, so a slow or silent provider
costs a request at most C{timeout} seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import attrs
from twisted.internet.defer import Deferred, ensureDeferred, succeed
from twisted.internet.error import TimeoutError
from twisted.internet.interfaces import IConsumer, IReactorTime
from twisted.internet.protocol import Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure
from twisted.web.client import ResponseDone
from twisted.web.http_headers import Headers
from twisted.web.iweb import IAgent, IBodyProducer, IResponse
from zope.interface import implementer

from gophergem.errors import StateUnavailable

__all__ = [
    "IDP_TIMEOUT",
    "MAX_ANSWER_BYTES",
    "IdentityProviderUnavailable",
    "VerifiedToken",
    "check_provider_url",
    "exchange_json",
    "scopes_of",
    "strings",
]

IDP_TIMEOUT = 5.0
"""Seconds one exchange with the identity provider may take."""

MAX_ANSWER_BYTES = 1024 * 1024
"""The largest answer read from the identity provider."""

log = Logger(namespace="gophergem.auth")


class IdentityProviderUnavailable(StateUnavailable):
    """
    The identity provider could not be asked about a token (unreachable,
    too slow, or an answer that cannot be used): the request is answered
    503, not 401, since the token may well be good.
    """


@attrs.frozen
class VerifiedToken:
    """
    An access token the identity provider vouches for.

    @ivar issuer: Who issued it (C{iss}).
    @ivar subject: Whom it was issued to (C{sub}), if said.
    @ivar client_id: The OAuth client it was issued through (C{client_id},
        C{azp}), or the subject when neither is said.
    @ivar scopes: Its scopes.
    @ivar expires_at: When it expires, in seconds since the epoch, if said.
    @ivar audiences: The audiences it names.
    @ivar claims: The claims or introspection answer it came with.
    """

    issuer: str
    subject: str | None
    client_id: str
    scopes: tuple[str, ...] = ()
    expires_at: int | None = None
    audiences: tuple[str, ...] = ()
    claims: Mapping[str, Any] = attrs.field(factory=dict, repr=False)

    @property
    def principal(self) -> str:
        """The principal, the same on every replica: C{<iss>#<sub>} (the client without sub)."""
        return f"{self.issuer}#{self.subject if self.subject is not None else self.client_id}"


def strings(values: Iterable[str]) -> tuple[str, ...]:
    """C{values} as a tuple (an attrs converter)."""
    return tuple(values)


def scopes_of(claims: Mapping[str, Any]) -> tuple[str, ...]:
    """The scopes of C{claims}: C{scope} (space-separated) or C{scp} (a list or a string)."""
    value = claims.get("scope", claims.get("scp"))
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list | tuple):
        return tuple(s for s in value if isinstance(s, str) and s)
    return ()


def check_provider_url(url: str) -> str:
    """
    Return C{url} if gophergem may ask it about tokens: C{https://}, or
    C{http://} on a loopback host.

    @raise ValueError: Otherwise.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "https" and parts.hostname:
        return url
    if scheme == "http" and parts.hostname in ("127.0.0.1", "::1", "localhost"):
        return url
    raise ValueError("an identity provider URL must be https:// (http:// only on loopback)")


class _CappedBody(Protocol):
    """Collects a response body, giving up past C{limit} bytes."""

    def __init__(self, done: Deferred[bytes], limit: int) -> None:
        self._done = done
        self._limit = limit
        self._parts: list[bytes] = []
        self._size = 0

    def dataReceived(self, data: bytes) -> None:
        self._size += len(data)
        if self._size > self._limit:
            self._parts = []
            if self.transport is not None:
                self.transport.stopProducing()  # type: ignore[attr-defined]
            return
        self._parts.append(data)

    def connectionLost(self, reason: Failure = Failure(ResponseDone())) -> None:  # noqa: B008
        if self._size > self._limit:
            self._done.errback(ValueError("the answer is too large"))
        elif reason.check(ResponseDone):
            self._done.callback(b"".join(self._parts))
        else:
            self._done.errback(reason)


@implementer(IBodyProducer)
class _BytesProducer:
    """A request body already in memory, written at once."""

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.length = len(body)

    def startProducing(self, consumer: IConsumer) -> Deferred[None]:
        consumer.write(self.body)
        return succeed(None)

    def pauseProducing(self) -> None:
        pass

    def resumeProducing(self) -> None:
        pass

    def stopProducing(self) -> None:
        pass


def _read(response: IResponse, limit: int) -> Deferred[bytes]:
    def cancel(d: Deferred[bytes]) -> None:
        transport = getattr(protocol, "transport", None)
        if transport is not None:
            transport.stopProducing()

    done: Deferred[bytes] = Deferred(cancel)
    protocol = _CappedBody(done, limit)
    response.deliverBody(protocol)  # type: ignore[no-untyped-call]  # Twisted: unannotated
    return done


def exchange_json(
    agent: IAgent,
    clock: IReactorTime,
    url: str,
    *,
    method: bytes = b"GET",
    headers: Mapping[str, str] | None = None,
    body: bytes | None = None,
    timeout: float = IDP_TIMEOUT,
    what: str = "the identity provider",
) -> Deferred[tuple[int, Any]]:
    """
    Send one request to the identity provider and read its JSON answer.

    @return: A Deferred firing with the status and the decoded JSON (C{None}
        when the body is not JSON), or failing with
        L{IdentityProviderUnavailable} when there is no answer within
        C{timeout} seconds, the connection fails, or the body is too large.
        Redirects are not followed.
    """
    sent = Headers({b"Accept": [b"application/json"]})
    for name, value in (headers or {}).items():
        sent.setRawHeaders(name.encode("ascii"), [value.encode("latin-1")])
    producer = _BytesProducer(body) if body is not None else None

    async def ask() -> tuple[int, Any]:
        response = await agent.request(method, url.encode("ascii"), sent, producer)
        raw = await _read(response, MAX_ANSWER_BYTES)
        try:
            answer = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            answer = None
        return response.code, answer

    def unavailable(failure: Failure) -> Failure:
        if failure.check(IdentityProviderUnavailable):
            return failure
        why = "no answer in time" if failure.check(TimeoutError) else failure.getErrorMessage()
        log.warn("Could not reach {what}: {why}", what=what, why=why or "failed")
        return Failure(
            IdentityProviderUnavailable(
                message=f"Could not reach {what} to check the access token.",
                next_step="Try again shortly; the server's log says more.",
                temporary=True,
            )
        )

    d = ensureDeferred(ask())
    d.addTimeout(timeout, clock)
    d.addErrback(unavailable)
    return d
