# -*- test-case-name: tests.test_auth_jwt -*-
"""
JWT access tokens from an identity provider, checked against its keys.

L{JWTVerifier} checks a token's signature with PyJWT against the issuer's
JSON Web Key Set, fetched with a Twisted C{IAgent} (never a blocking
client), and its claims:

  - the signature algorithm is one of an allow-list (asymmetric only:
    C{none} and HMAC are never accepted, whatever the token's header says);
  - C{iss} is the configured issuer exactly, C{aud} names one of the
    accepted audiences, C{exp} and C{sub} are present; C{exp}, C{nbf} and
    C{iat} are numbers checked on the verifier's clock with L{LEEWAY}
    seconds of skew allowed either way (a token expired 10 s ago passes,
    one expired a minute ago does not), and the expiry handed on is the
    end of that leeway, so the HTTP layers that compare it with the time
    agree;
  - a C{typ} header, when present, is C{at+jwt} (RFC 9068) or C{JWT}.

The key set's URL is C{GOPHERGEM_AUTH_JWKS_URL} when set, else the
C{jwks_uri} of the issuer's metadata (RFC 8414
C{/.well-known/oauth-authorization-server}, then OpenID Connect
C{/.well-known/openid-configuration}).  Keys are kept and fetched again
when a token names a key id not among them, at most once per
L{REFRESH_INTERVAL}, and when they are older than L{MAX_KEY_AGE}.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import attrs
import jwt
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
    "LEEWAY",
    "MAX_KEY_AGE",
    "REFRESH_INTERVAL",
    "JWTVerifier",
    "metadata_urls",
]

log = Logger(namespace="gophergem.auth")

REFRESH_INTERVAL = 30.0
"""Seconds between two key fetches caused by an unknown key id."""

MAX_KEY_AGE = 3600.0
"""Seconds after which the keys are fetched again before the next check."""

LEEWAY = 30.0
"""Seconds of clock skew allowed on C{exp}, C{nbf} and C{iat}."""

_TYPES = frozenset({"at+jwt", "application/at+jwt", "jwt"})
_ASYMMETRIC = frozenset({"RSA", "EC", "OKP"})


def metadata_urls(issuer: str) -> tuple[str, str]:
    """
    Where the metadata of C{issuer} may be: the RFC 8414 URL (the well-known
    segment before the issuer's path) and the OpenID Connect one (after it).
    """
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    oauth = urlunsplit(
        (parts.scheme, parts.netloc, "/.well-known/oauth-authorization-server" + path, "", "")
    )
    oidc = urlunsplit(
        (parts.scheme, parts.netloc, path + "/.well-known/openid-configuration", "", "")
    )
    return oauth, oidc


def _unavailable(message: str) -> IdentityProviderUnavailable:
    return IdentityProviderUnavailable(
        message=message,
        next_step="Try again shortly; the server's log says more.",
        temporary=True,
    )


@attrs.define
class JWTVerifier:
    """
    Checks JWT access tokens of one issuer (see the module docstring).

    @ivar issuer: The issuer, compared exactly with C{iss}.
    @ivar audiences: A token's C{aud} must name one of these.
    @ivar algorithms: The signature algorithms accepted.
    @ivar agent: How the metadata and keys are fetched.
    @ivar clock: Where time is read (key ages, deadlines).
    @ivar jwks_url: The key set's URL; C{None}: from the issuer's metadata.
    @ivar timeout: Seconds one fetch may take.
    @ivar leeway: Seconds of clock skew allowed on C{exp}, C{nbf} and C{iat}.
    """

    issuer: str
    audiences: tuple[str, ...] = attrs.field(converter=strings)
    algorithms: tuple[str, ...] = attrs.field(converter=strings)
    agent: IAgent
    clock: IReactorTime
    jwks_url: str | None = None
    timeout: float = IDP_TIMEOUT
    leeway: float = LEEWAY
    _keys: tuple[dict[str, Any], ...] | None = attrs.field(default=None, init=False)
    _fetched_at: float | None = attrs.field(default=None, init=False)
    _tried_at: float | None = attrs.field(default=None, init=False)
    _parsed: dict[tuple[int, str], jwt.PyJWK | None] = attrs.field(factory=dict, init=False)
    _pending: list[Deferred[None]] | None = attrs.field(default=None, init=False)

    def __attrs_post_init__(self) -> None:
        if not self.audiences:
            raise ValueError("a JWT verifier needs at least one audience")
        if not self.algorithms:
            raise ValueError("a JWT verifier needs at least one algorithm")
        for name in self.algorithms:
            if name == "none" or name.startswith("HS"):
                raise ValueError(f"{name} is not an asymmetric signature algorithm")
        check_provider_url(self.issuer)
        if self.jwks_url is not None:
            check_provider_url(self.jwks_url)

    def verify(self, token: str) -> Deferred[VerifiedToken | None]:
        """
        What C{token} stands for, or C{None} when it is not a good token of
        this issuer.

        @return: A Deferred failing only with L{IdentityProviderUnavailable},
            when the keys cannot be fetched.
        """
        return ensureDeferred(self._verify(token))

    async def _verify(self, token: str) -> VerifiedToken | None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        except Exception:  # any garbage is a bad token, never an error
            return None
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in self.algorithms:
            return None
        kind = header.get("typ")
        if kind is not None and (not isinstance(kind, str) or kind.lower() not in _TYPES):
            return None
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            return None
        candidates = await self._candidates(kid, algorithm)
        for key in candidates:
            try:
                claims = jwt.decode(
                    token,
                    key=key.key,
                    algorithms=[algorithm],
                    audience=list(self.audiences),
                    issuer=self.issuer,
                    # The times are checked below, on our clock.
                    options={
                        "require": ["exp", "iss", "aud", "sub"],
                        "verify_exp": False,
                        "verify_nbf": False,
                        "verify_iat": False,
                    },
                )
            except jwt.InvalidSignatureError:
                continue  # another key of the set may have signed it (no kid)
            except jwt.PyJWTError:
                return None
            except Exception:
                log.failure("Checking a JWT failed; it is refused")
                return None
            if not self._in_time(claims):
                return None
            return self._verified(claims)
        return None

    def _in_time(self, claims: Mapping[str, Any]) -> bool:
        """
        Whether C{exp} (required), C{nbf} and C{iat} are numbers and the
        token is valid now, give or take L{leeway} seconds.
        """
        now = self.clock.seconds()
        times = {}
        for name in ("exp", "nbf", "iat"):
            value = claims.get(name)
            if value is None and name != "exp":
                continue
            if isinstance(value, bool) or not isinstance(value, int | float):
                return False
            if not math.isfinite(value):
                return False
            times[name] = value
        if times["exp"] <= now - self.leeway:
            return False
        return all(times.get(name, now) <= now + self.leeway for name in ("nbf", "iat"))

    def _verified(self, claims: Mapping[str, Any]) -> VerifiedToken | None:
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            return None
        client = claims.get("client_id", claims.get("azp", subject))
        audience = claims.get("aud")
        audiences = (audience,) if isinstance(audience, str) else tuple(audience or ())
        expires = claims.get("exp")
        return VerifiedToken(
            issuer=self.issuer,
            subject=subject,
            client_id=client if isinstance(client, str) and client else subject,
            scopes=scopes_of(claims),
            # When it stops being accepted (the leeway included): what the
            # SDK's bearer check and ours compare with the time.
            expires_at=int(expires + self.leeway) if isinstance(expires, int | float) else None,
            audiences=tuple(a for a in audiences if isinstance(a, str)),
            claims=dict(claims),
        )

    async def _candidates(self, kid: str | None, algorithm: str) -> list[jwt.PyJWK]:
        if self._keys is None:
            await self._refresh()
        elif self._due(MAX_KEY_AGE):
            # The keys we have stay good until the provider answers again.
            with contextlib.suppress(IdentityProviderUnavailable):
                await self._refresh()
        found = self._matching(kid, algorithm)
        if not found and kid is not None and self._due(REFRESH_INTERVAL):
            await self._refresh()
            found = self._matching(kid, algorithm)
        return found

    def _due(self, age: float) -> bool:
        """Whether the keys are C{age} seconds old and no fetch was tried for 30 s."""
        now = self.clock.seconds()
        fetched = self._fetched_at if self._fetched_at is not None else -age
        tried = self._tried_at if self._tried_at is not None else -REFRESH_INTERVAL
        return now - fetched >= age and now - tried >= REFRESH_INTERVAL

    def _matching(self, kid: str | None, algorithm: str) -> list[jwt.PyJWK]:
        found = []
        for index, jwk in enumerate(self._keys or ()):
            if kid is not None and jwk.get("kid") != kid:
                continue
            if jwk.get("alg") not in (None, algorithm):
                continue
            parsed = self._parse(index, jwk, algorithm)
            if parsed is not None:
                found.append(parsed)
        return found

    def _parse(self, index: int, jwk: dict[str, Any], algorithm: str) -> jwt.PyJWK | None:
        if (index, algorithm) not in self._parsed:
            try:
                self._parsed[index, algorithm] = jwt.PyJWK(jwk, algorithm)
            except Exception:  # a key of another type, or one PyJWT cannot read
                self._parsed[index, algorithm] = None
        return self._parsed[index, algorithm]

    async def _refresh(self) -> None:
        """Fetch the keys once, however many checks are waiting for them."""
        if self._pending is not None:
            waiting: Deferred[None] = Deferred()
            self._pending.append(waiting)
            await waiting
            return
        self._pending = []
        try:
            await self._fetch()
        except BaseException as e:
            waiters, self._pending = self._pending, None
            for waiter in waiters:
                waiter.errback(e)
            raise
        waiters, self._pending = self._pending, None
        for waiter in waiters:
            waiter.callback(None)

    async def _fetch(self) -> None:
        self._tried_at = self.clock.seconds()
        url = self.jwks_url
        if url is None:
            url = await self._discover()
            self.jwks_url = url
        status, answer = await exchange_json(
            self.agent, self.clock, url, timeout=self.timeout, what="the issuer's key set"
        )
        if (
            status != 200
            or not isinstance(answer, dict)
            or not isinstance(answer.get("keys"), list)
        ):
            log.error(
                "The issuer's key set at {url} gave no keys (HTTP {status})", url=url, status=status
            )
            raise _unavailable("The issuer's keys could not be read.")
        keys = tuple(
            key
            for key in answer["keys"]
            if isinstance(key, dict)
            and key.get("kty") in _ASYMMETRIC
            and key.get("use", "sig") == "sig"
        )
        self._keys = keys
        self._parsed = {}
        self._fetched_at = self.clock.seconds()
        log.info("Fetched {count} signing key(s) of {issuer}", count=len(keys), issuer=self.issuer)

    async def _discover(self) -> str:
        """The C{jwks_uri} of the issuer's metadata."""
        for url in metadata_urls(self.issuer):
            status, answer = await exchange_json(
                self.agent, self.clock, url, timeout=self.timeout, what="the issuer's metadata"
            )
            if status != 200 or not isinstance(answer, dict):
                continue
            if answer.get("issuer") != self.issuer:
                log.error("The metadata at {url} names another issuer; it is not used", url=url)
                continue
            found = answer.get("jwks_uri")
            try:
                if not isinstance(found, str):
                    raise ValueError("no jwks_uri")
                return check_provider_url(found)
            except ValueError:
                log.error("The metadata at {url} has an unusable jwks_uri", url=url)
                continue
        log.error("No usable metadata for the issuer {issuer}", issuer=self.issuer)
        raise _unavailable("The issuer's metadata could not be read.")
