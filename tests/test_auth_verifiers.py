"""
Tests for L{gophergem.auth.verifiers}: the token-file verifier, an identity
provider's, and the order they are tried in.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import capturedLogs, formatEvent
from twisted.python.failure import Failure

from gophergem.auth.idp import IdentityProviderUnavailable
from gophergem.auth.principals import principal_of
from gophergem.auth.tokens import TokenFile, add_token
from gophergem.auth.verifiers import (
    CombinedVerifier,
    ProviderVerifier,
    TokenFileVerifier,
    looks_like_jwt,
    verifier_from_config,
)
from gophergem.config import AuthConfig, Config
from tests.helpers.idp import AUDIENCE, ISSUER, RSA_KEY, FakeAgent, idp_routes, jwk_of, mint
from tests.helpers.mcp_auth import provider

URL = "http://127.0.0.1:8000/mcp"
OFFLINE = Config()

T = TypeVar("T")


def result_of(d: Deferred[T]) -> T:
    """What the fired C{d} holds (its failure raised)."""
    results: list[T | Failure] = []
    d.addBoth(results.append)
    assert results, "the Deferred has not fired"
    found = results[0]
    if isinstance(found, Failure):
        found.raiseException()
    return found  # type: ignore[return-value]


@pytest.fixture
def tokens_path(tmp_path: Path) -> Path:
    return tmp_path / "tokens.json"


# --- the token file ----------------------------------------------------------------------------


def test_verifier_gives_the_principal(tokens_path: Path) -> None:
    """A known token grants access to its principal, for the configured resource."""
    token = add_token(tokens_path, "alice")
    verifier = TokenFileVerifier.from_path(str(tokens_path), URL)
    access = result_of(verifier.access(token))
    assert access is not None
    assert (access.client_id, access.subject, access.resource) == ("alice", "alice", URL)
    assert (access.scopes, access.expires_at, access.token) == ((), None, token)
    assert result_of(verifier.access(token + "x")) is None


class Exploding(TokenFile):
    def principal_for(self, token: str) -> str | None:
        raise RuntimeError("boom")


def test_verifier_never_raises() -> None:
    """Whatever goes wrong inside, the token is refused, not a 500."""
    verifier = TokenFileVerifier(Exploding("/nonexistent"), URL)
    with capturedLogs() as events:
        assert result_of(verifier.access("whatever-token")) is None
    assert not any("whatever-token" in formatEvent(e) for e in events)


@pytest.fixture(scope="module")
def shared_verifier(tmp_path_factory: pytest.TempPathFactory) -> TokenFileVerifier:
    path = tmp_path_factory.mktemp("tokens") / "tokens.json"
    add_token(path, "alice")
    return TokenFileVerifier.from_path(str(path), URL)


@settings(max_examples=300, deadline=None)
@given(token=st.text(max_size=200))
def test_verifier_any_token(shared_verifier: TokenFileVerifier, token: str) -> None:
    """Any presented string gives None (or the principal), never an exception."""
    assert result_of(shared_verifier.access(token)) is None


def test_principal_of_token_file(tokens_path: Path) -> None:
    """A token-file token's principal is token:NAME."""
    token = add_token(tokens_path, "alice")
    access = result_of(TokenFileVerifier.from_path(str(tokens_path), URL).access(token))
    assert access is not None and principal_of(access) == "token:alice"


# --- identity providers: JWT, introspection, the combination -----------------------------------


def test_provider_access() -> None:
    """A JWT grants access to this resource, with claims that name the issuer."""
    verifier = provider(FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1"))))
    access = result_of(verifier.access(mint()))
    assert access is not None
    assert (access.client_id, access.subject, access.resource) == ("claude", "alice", AUDIENCE)
    assert access.scopes == ("gopher", "gemini")
    assert access.claims is not None and access.claims["iss"] == ISSUER
    assert principal_of(access) == f"{ISSUER}#alice"


def test_provider_unavailable_fails() -> None:
    """An unreachable provider fails the Deferred with IdentityProviderUnavailable."""
    agent = FakeAgent()
    agent.down = True
    with pytest.raises(IdentityProviderUnavailable):
        result_of(provider(agent).access(mint()))


class Waiting:
    """A provider's verifier that has not answered yet."""

    def verify(self, token: str) -> Deferred[Any]:
        return Deferred()


def test_provider_cancelled_is_not_a_refusal() -> None:
    """A check cancelled (the request went away) fails as cancelled and logs nothing."""
    verifier = ProviderVerifier(Waiting(), AUDIENCE)
    with capturedLogs() as events:
        d = verifier.access(mint())
        d.cancel()
        with pytest.raises(CancelledError):
            result_of(d)
    assert events == []


def test_looks_like_jwt() -> None:
    """Three base64url parts look like a JWT; a token-file token does not."""
    assert looks_like_jwt(mint())
    assert not looks_like_jwt("abc")
    assert not looks_like_jwt("a.b")
    assert not looks_like_jwt("a b.c.d")


class Recording:
    def __init__(self, answer: Any = None) -> None:
        self.seen: list[str] = []
        self.answer = answer

    def access(self, token: str) -> Deferred[Any]:
        self.seen.append(token)
        return succeed(self.answer)


def test_combination_order(tokens_path: Path) -> None:
    """Token file first; a JWT goes to the issuer's keys only; an opaque token to introspection."""
    known = add_token(tokens_path, "alice")
    jwt_side, introspection = Recording(), Recording()
    combined = CombinedVerifier(
        TokenFileVerifier.from_path(str(tokens_path), URL),
        jwt_side,  # type: ignore[arg-type]
        introspection,  # type: ignore[arg-type]
    )
    assert result_of(combined.access(known)) is not None
    assert (jwt_side.seen, introspection.seen) == ([], [])
    token = mint()
    assert result_of(combined.access(token)) is None
    assert (jwt_side.seen, introspection.seen) == ([token], [])
    assert result_of(combined.access("opaque")) is None
    assert introspection.seen == ["opaque"]


def test_verifier_from_config(tmp_path: Path) -> None:
    """No auth setting: no verifier; a client id without its secret file: one-line refusal."""
    assert verifier_from_config(OFFLINE, MemoryReactorClock(), URL) is None
    with_issuer = Config(auth=AuthConfig(issuer=ISSUER))
    combined = verifier_from_config(with_issuer, MemoryReactorClock(), URL)
    assert combined is not None and combined.jwt is not None and combined.token_file is None
    assert combined.jwt.checker.audiences == (URL,)  # type: ignore[attr-defined]
    broken = Config(auth=AuthConfig(introspection_url=ISSUER + "/introspect", client_id="x"))
    with pytest.raises(ValueError, match="go together"):
        verifier_from_config(broken, MemoryReactorClock(), URL)
