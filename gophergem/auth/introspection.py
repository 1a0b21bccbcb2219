# -*- test-case-name: tests.test_auth_introspection -*-
"""
Opaque access tokens checked by the identity provider (RFC 7662).

L{IntrospectionVerifier} POSTs C{token=…} to the introspection endpoint,
authenticating as a client with HTTP Basic (C{GOPHERGEM_AUTH_CLIENT_ID}
and the secret in C{GOPHERGEM_AUTH_CLIENT_SECRET_FILE}), and accepts a
token only when the answer says C{"active": true}, its C{exp} (if any) is
ahead, its C{iss} (if any, and an issuer is configured) is that issuer and
its C{aud} names one of the accepted audiences.

Positive answers are kept, keyed by the token's SHA-256 (never the token),
until the token expires or L{CACHE_SECONDS} pass, whichever is first, for
at most L{MAX_ENTRIES} tokens; negative answers are not kept.  An endpoint
that cannot be reached, is too slow, or refuses gophergem's own client
credentials makes the check fail with L{IdentityProviderUnavailable}.
"""

from __future__ import annotations

import base64
import hashlib
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

import attrs
from twisted.internet.defer import Deferred, ensureDeferred
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from twisted.web.iweb import IAgent

from gophergem.auth.idp import (
    IDP_TIMEOUT,
    IdentityProviderUnavailable,
    VerifiedToken,
    check_provider_url,
    exchange_json,
    scopes_of,
    strings,
)

__all__ = [
    "CACHE_SECONDS",
    "MAX_ENTRIES",
    "IntrospectionVerifier",
    "read_secret",
]

log = Logger(namespace="gophergem.auth")

CACHE_SECONDS = 60.0
"""The longest a positive answer is kept."""

MAX_ENTRIES = 4096
"""How many tokens' answers are kept at most (the least recently used go first)."""


def read_secret(path: str) -> str:
    """
    The client secret in the file at C{path}: its first line, without the
    line end.

    @raise ValueError: One line saying why it cannot be used (never quoting it).
    """
    try:
        with open(path, encoding="utf-8") as f:
            secret = f.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(
            f"the client secret file {path} cannot be read ({type(e).__name__})"
        ) from None
    if not secret:
        raise ValueError(f"the client secret file {path} is empty")
    return secret


def _basic(client_id: str, secret: str) -> str:
    """The C{Authorization} value of RFC 6749 section 2.3.1 (both parts form-encoded)."""
    pair = f"{quote(client_id, safe='')}:{quote(secret, safe='')}"
    return "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")


@attrs.define
class IntrospectionVerifier:
    """
    Checks tokens at an RFC 7662 introspection endpoint (see the module docstring).

    @ivar url: The introspection endpoint.
    @ivar audiences: The token's C{aud} must name one of these.
    @ivar agent: How the endpoint is reached.
    @ivar clock: Where time is read (expiry, cache, deadlines).
    @ivar client_id: gophergem's client id at the provider; C{None}: no
        client authentication (only for providers that allow it).
    @ivar client_secret: Its secret.
    @ivar issuer: The issuer the answers must name when they name one, and
        the issuer of the principal when they do not; C{None}: the answer's
        C{iss}, else the endpoint's URL.
    """

    url: str = attrs.field(converter=check_provider_url)
    audiences: tuple[str, ...] = attrs.field(converter=strings)
    agent: IAgent
    clock: IReactorTime
    client_id: str | None = None
    client_secret: str | None = attrs.field(default=None, repr=False)
    issuer: str | None = None
    timeout: float = IDP_TIMEOUT
    cache_seconds: float = CACHE_SECONDS
    max_entries: int = MAX_ENTRIES
    _cache: OrderedDict[str, tuple[float, VerifiedToken]] = attrs.field(
        factory=OrderedDict, init=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        if not self.audiences:
            raise ValueError("an introspection verifier needs at least one audience")
        if (self.client_id is None) != (self.client_secret is None):
            raise ValueError("a client id and its secret go together")

    def verify(self, token: str) -> Deferred[VerifiedToken | None]:
        """
        What C{token} stands for, or C{None} when the provider says it is not
        active or it is not for this resource.

        @return: A Deferred failing only with L{IdentityProviderUnavailable}.
        """
        return ensureDeferred(self._verify(token))

    async def _verify(self, token: str) -> VerifiedToken | None:
        if not token or len(token) > 8192:
            return None
        key = hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()
        now = self.clock.seconds()
        kept = self._cache.get(key)
        if kept is not None:
            until, known = kept
            if now < until:
                self._cache.move_to_end(key)
                return known
            del self._cache[key]
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if self.client_id is not None and self.client_secret is not None:
            headers["Authorization"] = _basic(self.client_id, self.client_secret)
        body = urlencode({"token": token, "token_type_hint": "access_token"}).encode("ascii")
        status, answer = await exchange_json(
            self.agent,
            self.clock,
            self.url,
            method=b"POST",
            headers=headers,
            body=body,
            timeout=self.timeout,
            what="the introspection endpoint",
        )
        if status != 200 or not isinstance(answer, dict):
            log.error(
                "The introspection endpoint {url} answered HTTP {status}{detail}",
                url=self.url,
                status=status,
                detail=" (are the client id and secret right?)"
                if status in (400, 401, 403)
                else "",
            )
            raise IdentityProviderUnavailable(
                message="The identity provider did not check the access token.",
                next_step="Try again shortly; the server's log says more.",
                temporary=True,
            )
        verified = self._verified(answer, now)
        if verified is not None:
            until = now + self.cache_seconds
            if verified.expires_at is not None:
                until = min(until, float(verified.expires_at))
            self._cache[key] = (until, verified)
            self._cache.move_to_end(key)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return verified

    def _verified(self, answer: Mapping[str, Any], now: float) -> VerifiedToken | None:
        if answer.get("active") is not True:
            return None
        expires = answer.get("exp")
        if expires is not None:
            if isinstance(expires, bool) or not isinstance(expires, int | float):
                return None
            if expires <= now:
                return None
        issuer = answer.get("iss")
        if issuer is not None and not isinstance(issuer, str):
            return None
        if self.issuer is not None and issuer is not None and issuer != self.issuer:
            return None
        issuer = issuer or self.issuer or self.url
        audience = answer.get("aud")
        audiences = (audience,) if isinstance(audience, str) else audience
        if not isinstance(audiences, list | tuple) or not any(
            a in self.audiences for a in audiences if isinstance(a, str)
        ):
            return None
        subject = answer.get("sub")
        client = answer.get("client_id")
        subject = subject if isinstance(subject, str) and subject else None
        client = client if isinstance(client, str) and client else subject
        if client is None:
            return None  # neither a subject nor a client: no principal
        return VerifiedToken(
            issuer=issuer,
            subject=subject,
            client_id=client,
            scopes=scopes_of(answer),
            expires_at=int(expires) if expires is not None else None,
            audiences=tuple(a for a in audiences if isinstance(a, str)),
            claims=dict(answer),
        )
