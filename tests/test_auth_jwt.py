"""
Tests for L{gophergem.auth.jwt}: JWT access tokens checked against the
issuer's keys, fetched through a fake C{IAgent} on a fake clock (and for
L{gophergem.auth.idp}, the bounded exchange they share).
"""

from __future__ import annotations

import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent
from twisted.trial.unittest import SynchronousTestCase

from gophergem.auth.idp import IdentityProviderUnavailable, VerifiedToken, scopes_of
from gophergem.auth.jwt import LEEWAY, REFRESH_INTERVAL, JWTVerifier, metadata_urls
from tests.helpers.idp import (
    AUDIENCE,
    EC_KEY,
    ED_KEY,
    ISSUER,
    OTHER_RSA_KEY,
    RSA_KEY,
    FakeAgent,
    hs256_with_public_key,
    idp_routes,
    jwk_of,
    mint,
    unsigned,
)

ALGORITHMS = ("RS256", "ES256", "EdDSA")


def now_clock() -> Clock:
    clock = Clock()
    clock.advance(time.time())
    return clock


def verifier(agent: FakeAgent, clock: Clock | None = None, **kw: Any) -> JWTVerifier:
    settings: dict[str, Any] = {"audiences": (AUDIENCE,), "algorithms": ALGORITHMS}
    settings.update(kw)
    return JWTVerifier(
        issuer=settings.pop("issuer", ISSUER),
        agent=agent,
        clock=clock if clock is not None else now_clock(),
        **settings,
    )


class JWTVerifierTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.agent = FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1"), jwk_of(EC_KEY, "k2")))
        self.clock = now_clock()
        self.verifier = verifier(self.agent, self.clock)

    def check(self, token: str) -> VerifiedToken | None:
        result: VerifiedToken | None = self.successResultOf(self.verifier.verify(token))
        return result

    def test_good_token(self) -> None:
        """A good token is what its claims say; the principal is iss#sub."""
        found = self.check(mint())
        assert found is not None
        assert (found.issuer, found.subject, found.client_id) == (ISSUER, "alice", "claude")
        assert found.scopes == ("gopher", "gemini")
        assert found.audiences == (AUDIENCE,)
        assert found.principal == f"{ISSUER}#alice"

    def test_keys_come_from_the_metadata_once(self) -> None:
        """The metadata and the keys are fetched once, then kept."""
        self.check(mint())
        self.check(mint(sub="bob"))
        assert self.agent.urls() == [
            f"{ISSUER}/.well-known/oauth-authorization-server",
            f"{ISSUER}/jwks.json",
        ]

    def test_openid_configuration_fallback(self) -> None:
        """Without RFC 8414 metadata the OpenID Connect document is read."""
        routes = idp_routes(jwk_of(RSA_KEY, "k1"))
        routes[f"{ISSUER}/.well-known/openid-configuration"] = routes.pop(
            f"{ISSUER}/.well-known/oauth-authorization-server"
        )
        agent = FakeAgent(routes)
        assert self.successResultOf(verifier(agent).verify(mint())) is not None
        assert agent.urls()[1] == f"{ISSUER}/.well-known/openid-configuration"

    def test_configured_jwks_url(self) -> None:
        """A configured key set URL is used as it is, without metadata."""
        agent = FakeAgent({"https://keys.example.org/k": (200, {"keys": [jwk_of(RSA_KEY, "k1")]})})
        check = verifier(agent, jwks_url="https://keys.example.org/k")
        assert self.successResultOf(check.verify(mint())) is not None
        assert agent.urls() == ["https://keys.example.org/k"]

    def test_metadata_of_another_issuer(self) -> None:
        """Metadata naming another issuer is not used: the provider is unavailable."""
        routes = idp_routes(jwk_of(RSA_KEY, "k1"))
        routes[f"{ISSUER}/.well-known/oauth-authorization-server"] = (
            200,
            {"issuer": "https://evil.example.org", "jwks_uri": f"{ISSUER}/jwks.json"},
        )
        failure = self.failureResultOf(verifier(FakeAgent(routes)).verify(mint()))
        failure.trap(IdentityProviderUnavailable)

    def test_other_algorithms(self) -> None:
        """ES256 and EdDSA tokens are checked with their keys."""
        agent = FakeAgent(idp_routes(jwk_of(EC_KEY, "e"), jwk_of(ED_KEY, "d")))
        check = verifier(agent)
        assert self.successResultOf(check.verify(mint(EC_KEY, alg="ES256", kid="e")))
        assert self.successResultOf(check.verify(mint(ED_KEY, alg="EdDSA", kid="d")))

    def test_token_without_kid(self) -> None:
        """A token naming no key is tried against each key of the set."""
        assert self.check(mint(kid=None)) is not None

    def test_scp_claim(self) -> None:
        """Scopes may come as an scp list."""
        found = self.check(mint(scope=None, scp=["a", "b"]))
        assert found is not None and found.scopes == ("a", "b")

    def test_audience_list(self) -> None:
        """An aud list naming this resource among others is accepted."""
        assert self.check(mint(aud=["https://other.example.org", AUDIENCE])) is not None

    def test_typ_at_jwt(self) -> None:
        """typ at+jwt (RFC 9068) and JWT are accepted, anything else is not."""
        assert self.check(mint(headers={"typ": "at+jwt"})) is not None
        assert self.check(mint(headers={"typ": "JWT"})) is not None
        assert self.check(mint(headers={"typ": "dpop+jwt"})) is None

    def test_small_leeway(self) -> None:
        """nbf a few seconds ahead passes (clock skew); a minute ahead does not."""
        now = int(time.time())
        assert self.check(mint(nbf=now + 5)) is not None
        assert self.check(mint(nbf=now + 300)) is None
        assert self.check(mint(iat=now + 300)) is None

    def test_bad_tokens(self) -> None:
        """Every kind of bad token is refused (None), never an error."""
        now = int(time.time())
        public_pem = RSA_KEY.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        bad = {
            "wrong audience": mint(aud="https://other.example.org/mcp"),
            "expired": mint(exp=now - 3600),
            "no exp": mint(exp=None),
            "no sub": mint(sub=None),
            "no aud": mint(aud=None),
            "wrong issuer": mint(iss="https://evil.example.org"),
            "issuer with slash": mint(iss=ISSUER + "/"),
            "other key": mint(OTHER_RSA_KEY),
            "none": unsigned(),
            "not allowed": mint(alg="RS384"),
            "garbage": "not.a.jwt",
            "empty": "",
            "opaque": "abc",
        }
        bad["hs256 keyed with the public key"] = hs256_with_public_key()
        # ... even with HS256 allowed, the public key is no HMAC secret.
        with pytest.raises(jwt.InvalidKeyError):
            jwt.decode(bad["hs256 keyed with the public key"], public_pem, algorithms=["HS256"])
        for name, token in bad.items():
            assert self.check(token) is None, name

    def test_refuses_symmetric_allow_list(self) -> None:
        """An allow-list with none or HMAC is refused at construction."""
        for name in ("none", "HS256"):
            with pytest.raises(ValueError):
                verifier(FakeAgent(), algorithms=("RS256", name))

    def test_unknown_kid_refresh_is_rate_limited(self) -> None:
        """An unknown kid fetches the keys again, at most once per 30 s."""
        self.check(mint())
        fetched = len(self.agent.asked)
        assert self.check(mint(OTHER_RSA_KEY, kid="k9")) is None
        # Keys were fetched less than 30 s ago: no fetch.
        assert len(self.agent.asked) == fetched
        self.agent.routes[f"{ISSUER}/jwks.json"] = (
            200,
            {"keys": [jwk_of(RSA_KEY, "k1"), jwk_of(OTHER_RSA_KEY, "k9")]},
        )
        self.clock.advance(REFRESH_INTERVAL)
        assert self.check(mint(OTHER_RSA_KEY, kid="k9")) is not None
        assert len(self.agent.asked) == fetched + 1
        assert self.check(mint(OTHER_RSA_KEY, kid="k10")) is None
        assert len(self.agent.asked) == fetched + 1

    def test_concurrent_checks_share_one_fetch(self) -> None:
        """Checks waiting for the keys share one fetch."""
        pending: list[Deferred[Any]] = []

        def later() -> Deferred[Any]:
            d: Deferred[Any] = Deferred()
            pending.append(d)
            return d

        self.agent.routes[f"{ISSUER}/jwks.json"] = later
        first, second = self.verifier.verify(mint()), self.verifier.verify(mint(sub="bob"))
        assert len(pending) == 1
        from tests.helpers.idp import FakeResponse

        pending[0].callback(FakeResponse(200, b'{"keys": []}'))
        assert self.successResultOf(first) is None
        assert self.successResultOf(second) is None

    def test_unreachable_provider(self) -> None:
        """A provider refusing connections makes the check fail as unavailable."""
        self.agent.down = True
        self.failureResultOf(self.verifier.verify(mint())).trap(IdentityProviderUnavailable)

    def test_silent_provider_times_out(self) -> None:
        """A provider that never answers fails the check after the timeout, not never."""
        self.agent.routes[f"{ISSUER}/.well-known/oauth-authorization-server"] = Deferred
        d = self.verifier.verify(mint())
        self.assertNoResult(d)
        self.clock.advance(self.verifier.timeout)
        failure = self.failureResultOf(d, IdentityProviderUnavailable)
        assert failure.value.code == "STATE_UNAVAILABLE"

    def test_provider_down_after_keys_known(self) -> None:
        """Known keys keep working while the provider is away, even when they are old."""
        self.check(mint())
        self.agent.down = True
        assert self.check(mint(sub="bob")) is not None
        self.clock.advance(4000)
        asked = len(self.agent.asked)
        later = int(self.clock.seconds()) + 3600  # tokens valid at the verifier's time
        assert self.check(mint(sub="bob", exp=later)) is not None
        assert self.check(mint(sub="carol", exp=later)) is not None
        assert len(self.agent.asked) == asked + 1  # tried once, not at every check

    def test_no_token_in_logs(self) -> None:
        """Neither a refused nor an accepted token appears in a log line."""
        good, bad = mint(), mint(aud="https://other.example.org")
        with capturedLogs() as events:
            self.check(good)
            self.check(bad)
            self.agent.down = True
            self.clock.advance(4000)
            assert self.check(mint(kid="k7")) is None  # tried once, then refused
        text = " ".join(formatEvent(e) for e in events)
        assert good not in text and bad not in text


class LeewayTests(SynchronousTestCase):
    """
    The documented 30 s leeway on C{exp}, C{nbf} and C{iat}, read on the
    verifier's clock (set far from the wall clock: only it counts).
    """

    def setUp(self) -> None:
        self.clock = Clock()
        self.clock.advance(2_000_000_000)
        self.now = int(self.clock.seconds())
        agent = FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1")))
        self.verifier = verifier(agent, self.clock)

    def check(self, **claims: Any) -> VerifiedToken | None:
        token = mint(**{"iat": self.now - 600, "exp": self.now + 600, **claims})
        result: VerifiedToken | None = self.successResultOf(self.verifier.verify(token))
        return result

    def test_expired_within_the_leeway(self) -> None:
        """A token expired 10 s ago is accepted, one expired 60 s ago is not."""
        assert LEEWAY == 30
        assert self.check() is not None
        assert self.check(exp=self.now - 10) is not None
        assert self.check(exp=self.now - 29) is not None
        assert self.check(exp=self.now - 30) is None
        assert self.check(exp=self.now - 60) is None

    def test_not_yet_valid_within_the_leeway(self) -> None:
        """nbf and iat up to 30 s ahead pass; a minute ahead does not."""
        assert self.check(nbf=self.now + 10) is not None
        assert self.check(iat=self.now + 10) is not None
        assert self.check(nbf=self.now + 60) is None
        assert self.check(iat=self.now + 60) is None

    def test_times_must_be_numbers(self) -> None:
        """exp, nbf and iat are JSON numbers (NumericDate), never strings or booleans."""
        assert self.check(exp=str(self.now + 600)) is None
        assert self.check(exp=True) is None
        assert self.check(nbf=str(self.now)) is None
        assert self.check(iat=[self.now]) is None

    def test_reported_expiry_carries_the_leeway(self) -> None:
        """
        The expiry handed on (which the HTTP layers compare with the time)
        is the end of the leeway, so they accept what the verifier accepts.
        """
        found = self.check(exp=self.now - 10)
        assert found is not None
        assert found.expires_at == self.now - 10 + LEEWAY


def test_leeway_holds_through_the_http_checks() -> None:
    """
    The HTTP layers accept what the verifier accepts: a token expired 10 s
    ago is let in, one expired 60 s ago is not, by the SDK's bearer check
    (which guards /mcp) and by ours (the discovery drill-down).
    """
    import asyncio

    from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend
    from starlette.requests import HTTPConnection

    from tests.helpers.mcp_auth import bearer, exchange, idp_site
    from tests.helpers.mcp_auth import bearer_provider as provider
    from tests.helpers.web import request_bytes

    now = int(time.time())
    recent, old = mint(exp=now - 10), mint(exp=now - 60)
    agent = FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1")))
    backend = BearerAuthBackend(provider(agent))

    def sdk_lets_in(token: str) -> bool:
        headers = [(b"authorization", f"Bearer {token}".encode())]
        connection = HTTPConnection({"type": "http", "headers": headers})
        return asyncio.run(backend.authenticate(connection)) is not None

    assert sdk_lets_in(recent)
    assert not sdk_lets_in(old)
    site = idp_site(agent)
    path = "/.well-known/agent/tools"
    assert exchange(site, request_bytes("GET", path, headers=bearer(recent)))[0] == 200
    assert exchange(site, request_bytes("GET", path, headers=bearer(old)))[0] == 401


def test_metadata_urls() -> None:
    """RFC 8414 puts the well-known segment before the issuer's path, OIDC after it."""
    assert metadata_urls("https://idp.example.org/realms/team") == (
        "https://idp.example.org/.well-known/oauth-authorization-server/realms/team",
        "https://idp.example.org/realms/team/.well-known/openid-configuration",
    )
    assert metadata_urls("https://idp.example.org")[0] == (
        "https://idp.example.org/.well-known/oauth-authorization-server"
    )


def test_scopes_of() -> None:
    """scope is space-separated; scp may be a list or a string; anything else is none."""
    assert scopes_of({"scope": "a b"}) == ("a", "b")
    assert scopes_of({"scp": ["a", 3, "b"]}) == ("a", "b")
    assert scopes_of({"scp": "a"}) == ("a",)
    assert scopes_of({"scope": 3}) == ()


def test_provider_urls_must_be_https() -> None:
    """An issuer over plain HTTP is refused unless it is on loopback."""
    with pytest.raises(ValueError):
        verifier(FakeAgent(), issuer="http://idp.example.org")
    verifier(FakeAgent(), issuer="http://127.0.0.1:9000")
