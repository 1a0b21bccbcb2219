# -*- test-case-name: tests.test_auth_verifiers -*-
"""
Whether a bearer token is good, and whose it is: the token file, JWTs and
introspection, and the order they are tried in.

  - L{TokenFileVerifier}: a L{gophergem.auth.tokens.TokenFile} (the
    small-team mode);
  - L{ProviderVerifier}: a JWT or an introspection verifier of
    L{gophergem.auth} (an identity provider);
  - L{CombinedVerifier}: the token file, JWTs and introspection together
    (L{verifier_from_config}).

Each answers C{access(token)} with a Deferred of the L{Access} the token
grants, or C{None} for a token it refuses.  When several ways are
configured, a token is tried against the token file first (a local
lookup), then, when it has the shape of a JWT and an issuer is configured,
against the issuer's keys (which decide: a JWT refused there is not sent to
introspection), else against the introspection endpoint.  An identity
provider that cannot be reached fails the Deferred with
L{IdentityProviderUnavailable} (the endpoint answers 503, never 401 or
500); nothing else does, but a cancelled check.

This module knows neither MCP nor C{twisted.web}'s server: the SDK's
C{TokenVerifier} over these is L{gophergem.http.guard.BearerVerifier}.
Tokens never reach a log: the verifiers log names, not tokens.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs
from twisted.internet.defer import CancelledError, Deferred, ensureDeferred, maybeDeferred, succeed
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem.auth.idp import IdentityProviderUnavailable, VerifiedToken
from gophergem.auth.tokens import TokenFile

if TYPE_CHECKING:
    from gophergem.config import Config

__all__ = [
    "Access",
    "AccessVerifier",
    "CombinedVerifier",
    "ProviderVerifier",
    "TokenFileVerifier",
    "looks_like_jwt",
    "verifier_from_config",
]

log = Logger(namespace="gophergem.auth")


@attrs.frozen
class Access:
    """
    What a good bearer token grants (the fields of the SDK's C{AccessToken}).

    @ivar token: The token itself (never logged).
    @ivar client_id: The client it was issued to (the token file: the name).
    @ivar scopes: Its scopes.
    @ivar expires_at: When it expires, in seconds since the epoch, if said.
    @ivar resource: The resource it is for (RFC 8707), if known.
    @ivar subject: Its subject (the token file: the name).
    @ivar claims: The claims it came with, the issuer's as C{iss}; C{None}
        for the token file.
    """

    token: str = attrs.field(repr=False)
    client_id: str
    scopes: tuple[str, ...] = ()
    expires_at: int | None = None
    resource: str | None = None
    subject: str | None = None
    claims: Mapping[str, Any] | None = attrs.field(default=None, repr=False)


class AccessVerifier(Protocol):
    """What the HTTP guard asks of a verifier."""

    def access(self, token: str) -> Deferred[Access | None]:
        """
        The access C{token} grants, or C{None}; fails with
        L{IdentityProviderUnavailable} only.
        """


def _refused(failure: Failure) -> None:
    log.failure("Verifying a bearer token failed; it is refused", failure)


class TokenFileVerifier:
    """
    A token file's verifier: a token found in it grants access to its
    principal (C{client_id} and C{subject} are the name), with no scopes,
    no expiry, for C{resource}.

    L{access} never fails: whatever goes wrong refuses the token.

    @ivar tokens: The token file.
    @ivar resource: The public URL of the endpoint, reported as the token's
        resource (RFC 8707), or C{None}.
    """

    def __init__(self, tokens: TokenFile, resource: str | None = None) -> None:
        self.tokens = tokens
        self.resource = resource

    @classmethod
    def from_path(cls, path: str, resource: str | None = None) -> TokenFileVerifier:
        """A verifier reading the token file at C{path}."""
        return cls(TokenFile(path), resource)

    def access(self, token: str) -> Deferred[Access | None]:
        """The access C{token} grants, or C{None} when it is not known (never fails)."""
        try:
            name = self.tokens.principal_for(token)
            if name is None:
                return succeed(None)
            return succeed(Access(token, name, resource=self.resource, subject=name))
        except Exception:  # never a 500 for a bad token
            _refused(Failure())
            return succeed(None)

    def reload(self) -> None:
        """Read the token file again now (the daemon's C{SIGHUP})."""
        self.tokens.reload()


class _Checker(Protocol):
    def verify(self, token: str) -> Deferred[VerifiedToken | None]: ...


class ProviderVerifier:
    """
    An identity provider's verifier (L{gophergem.auth.jwt.JWTVerifier},
    L{gophergem.auth.introspection.IntrospectionVerifier}): a token it
    vouches for grants access to C{resource}, whose claims carry the issuer
    (C{iss}) so that L{gophergem.auth.principals.principal_of} and the
    SDK's own principal checks see it.

    @ivar checker: The provider's verifier.
    @ivar resource: The public URL of the endpoint (the token's audience
        was checked against the configured audiences).
    """

    def __init__(self, checker: _Checker, resource: str | None = None) -> None:
        self.checker = checker
        self.resource = resource

    def access(self, token: str) -> Deferred[Access | None]:
        """
        The access C{token} grants, or C{None}; fails with
        L{IdentityProviderUnavailable} when the provider cannot be asked.
        """

        def vouched(verified: VerifiedToken | None) -> Access | None:
            if verified is None:
                return None
            return Access(
                token,
                verified.client_id,
                scopes=tuple(verified.scopes),
                expires_at=verified.expires_at,
                resource=self.resource,
                subject=verified.subject,
                claims={**verified.claims, "iss": verified.issuer},
            )

        def failed(failure: Failure) -> Failure | None:
            # A cancelled check (the request went away) is no refusal to log.
            if failure.check(IdentityProviderUnavailable, CancelledError):
                return failure
            _refused(failure)  # never a 500 for a bad token
            return None

        return maybeDeferred(self.checker.verify, token).addCallbacks(vouched, failed)


def looks_like_jwt(token: str) -> bool:
    """Whether C{token} has the shape of a compact JWS (three base64url parts)."""
    parts = token.split(".")
    return (
        len(parts) == 3
        and all(parts[:2])
        and all(c.isascii() and (c.isalnum() or c in "-_=") for c in token.replace(".", ""))
    )


class CombinedVerifier:
    """
    The token file, JWTs and introspection together, tried in that order
    (see the module docstring); any of them may be missing.

    @ivar token_file: The token-file verifier, if configured.
    @ivar jwt: The JWT verifier, if an issuer is configured.
    @ivar introspection: The introspection verifier, if configured.
    """

    def __init__(
        self,
        token_file: TokenFileVerifier | None = None,
        jwt: ProviderVerifier | None = None,
        introspection: ProviderVerifier | None = None,
    ) -> None:
        self.token_file = token_file
        self.jwt = jwt
        self.introspection = introspection

    def access(self, token: str) -> Deferred[Access | None]:
        """
        The access C{token} grants, or C{None}; fails with
        L{IdentityProviderUnavailable} when the provider that decides cannot
        be asked.
        """
        return ensureDeferred(self._access(token))

    async def _access(self, token: str) -> Access | None:
        if self.token_file is not None:
            found = await self.token_file.access(token)
            if found is not None:
                return found
        if self.jwt is not None and looks_like_jwt(token):
            return await self.jwt.access(token)
        if self.introspection is not None:
            return await self.introspection.access(token)
        return None

    def reload(self) -> None:
        """Read the token file again now, if there is one (the daemon's C{SIGHUP})."""
        if self.token_file is not None:
            self.token_file.reload()


def verifier_from_config(
    config: Config, reactor: Any, resource_url: str
) -> CombinedVerifier | None:
    """
    The endpoint's verifier for C{config}'s authentication settings, or
    C{None} when none is set.  Nothing is fetched until the first token.

    @param reactor: Where the identity provider is reached from (an
        C{IReactorTCP}, C{IReactorTime} provider).
    @param resource_url: The endpoint's public URL (the default audience).
    @raise ValueError: One line, for settings that cannot work together
        (a client id without a secret file, an unreadable secret file, ...).
    """
    if (
        config.auth.tokens_file is None
        and config.auth.issuer is None
        and config.auth.introspection_url is None
    ):
        return None
    token_file = jwt_verifier = introspection = None
    if config.auth.tokens_file is not None:
        token_file = TokenFileVerifier.from_path(config.auth.tokens_file, resource_url)
    audiences = config.auth.audience or (resource_url,)
    agent: Any = None
    if config.auth.issuer is not None or config.auth.introspection_url is not None:
        from twisted.web.client import Agent, HTTPConnectionPool

        # Agent and HTTPConnectionPool are unannotated in Twisted.
        agent = Agent(reactor, pool=HTTPConnectionPool(reactor))  # type: ignore[no-untyped-call]
    if config.auth.issuer is not None:
        from gophergem.auth.jwt import JWTVerifier

        jwt_verifier = ProviderVerifier(
            JWTVerifier(
                issuer=config.auth.issuer,
                audiences=audiences,
                algorithms=config.auth.algorithms,
                agent=agent,
                clock=reactor,
                jwks_url=config.auth.jwks_url,
            ),
            resource_url,
        )
    if config.auth.introspection_url is not None:
        from gophergem.auth.introspection import IntrospectionVerifier, read_secret

        if (config.auth.client_id is None) != (config.auth.client_secret_file is None):
            raise ValueError(
                "GOPHERGEM_AUTH_CLIENT_ID and GOPHERGEM_AUTH_CLIENT_SECRET_FILE go together."
            )
        secret = None
        if config.auth.client_secret_file is not None:
            secret = read_secret(config.auth.client_secret_file)
        introspection = ProviderVerifier(
            IntrospectionVerifier(
                url=config.auth.introspection_url,
                audiences=audiences,
                agent=agent,
                clock=reactor,
                client_id=config.auth.client_id,
                client_secret=secret,
                issuer=config.auth.issuer,
            ),
            resource_url,
        )
    return CombinedVerifier(token_file, jwt_verifier, introspection)
