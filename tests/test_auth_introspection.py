"""
Tests for L{gophergem.auth.introspection}: opaque tokens checked at an RFC
7662 endpoint through a fake C{IAgent} on a fake clock.
"""

from __future__ import annotations

import base64
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.logger import capturedLogs, formatEvent
from twisted.trial.unittest import SynchronousTestCase

from gophergem.auth.idp import IdentityProviderUnavailable, VerifiedToken
from gophergem.auth.introspection import CACHE_SECONDS, IntrospectionVerifier, read_secret
from tests.helpers.idp import AUDIENCE, ISSUER, FakeAgent

URL = "https://idp.example.org/introspect"
TOKEN = "opaque-token-0123456789"


def answer(**extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "active": True,
        "iss": ISSUER,
        "sub": "alice",
        "client_id": "claude",
        "aud": AUDIENCE,
        "scope": "gopher",
        "exp": int(time.time()) + 3600,
    }
    base.update(extra)
    return {k: v for k, v in base.items() if v is not None}


class IntrospectionTests(SynchronousTestCase):
    def setUp(self) -> None:
        self.agent = FakeAgent({URL: (200, answer())})
        self.clock = Clock()
        self.clock.advance(time.time())
        self.verifier = IntrospectionVerifier(
            url=URL,
            audiences=(AUDIENCE,),
            agent=self.agent,
            clock=self.clock,
            client_id="gophergem",
            client_secret="s3cr:et",
            issuer=ISSUER,
        )

    def check(self, token: str = TOKEN) -> VerifiedToken | None:
        result: VerifiedToken | None = self.successResultOf(self.verifier.verify(token))
        return result

    def answering(self, **extra: Any) -> None:
        self.agent.routes[URL] = (200, answer(**extra))

    def test_active_token(self) -> None:
        """An active token is what the answer says; the principal is iss#sub."""
        found = self.check()
        assert found is not None
        assert (found.subject, found.client_id, found.scopes) == ("alice", "claude", ("gopher",))
        assert found.principal == f"{ISSUER}#alice"

    def test_request(self) -> None:
        """The token is POSTed as a form, with HTTP Basic client authentication."""
        self.check()
        [asked] = self.agent.asked
        assert asked.method == b"POST"
        assert parse_qs(asked.body.decode()) == {  # type: ignore[union-attr]
            "token": [TOKEN],
            "token_type_hint": ["access_token"],
        }
        [auth] = asked.headers.getRawHeaders(b"authorization")
        assert auth.startswith(b"Basic ")
        assert base64.b64decode(auth[6:]) == b"gophergem:s3cr%3Aet"
        [kind] = asked.headers.getRawHeaders(b"content-type")
        assert kind == b"application/x-www-form-urlencoded"

    def test_positive_answers_are_kept_a_minute(self) -> None:
        """A positive answer is reused for up to 60 s, then asked again."""
        self.check()
        self.check()
        assert len(self.agent.asked) == 1
        self.clock.advance(CACHE_SECONDS)
        self.check()
        assert len(self.agent.asked) == 2

    def test_kept_no_longer_than_the_token_lives(self) -> None:
        """A token expiring sooner than a minute is asked about again when it expires."""
        self.answering(exp=int(self.clock.seconds()) + 10)
        assert self.check() is not None
        self.clock.advance(11)
        self.answering(active=False)
        assert self.check() is None
        assert len(self.agent.asked) == 2

    def test_inactive_is_not_kept(self) -> None:
        """An inactive token is refused and asked about again next time."""
        self.agent.routes[URL] = (200, {"active": False})
        assert self.check() is None
        assert self.check() is None
        assert len(self.agent.asked) == 2

    def test_refused_answers(self) -> None:
        """Wrong audience or issuer, expired, non-true active, no principal: refused."""
        now = int(self.clock.seconds())
        for extra in (
            {"aud": "https://other.example.org/mcp"},
            {"aud": None},
            {"iss": "https://evil.example.org"},
            {"exp": now - 1},
            {"exp": "soon"},
            {"active": "true"},
            {"sub": None, "client_id": None},
        ):
            self.answering(**extra)
            assert self.check(TOKEN + str(extra)) is None, extra

    def test_client_without_subject(self) -> None:
        """A client-credentials token (no sub) is the client's principal."""
        self.answering(sub=None)
        found = self.check()
        assert found is not None and found.principal == f"{ISSUER}#claude"

    def test_audience_list(self) -> None:
        """An aud list naming this resource is accepted."""
        self.answering(aud=["x", AUDIENCE])
        assert self.check() is not None

    def test_endpoint_refusing_our_credentials(self) -> None:
        """An endpoint answering 401 to gophergem itself is unavailable, not a bad token."""
        self.agent.routes[URL] = (401, {"error": "invalid_client"})
        self.failureResultOf(self.verifier.verify(TOKEN), IdentityProviderUnavailable)

    def test_unreachable(self) -> None:
        """A refused connection is unavailable."""
        self.agent.down = True
        self.failureResultOf(self.verifier.verify(TOKEN), IdentityProviderUnavailable)

    def test_silent_endpoint_times_out(self) -> None:
        """An endpoint that never answers fails the check after the timeout."""
        self.agent.routes[URL] = Deferred
        d = self.verifier.verify(TOKEN)
        self.assertNoResult(d)
        self.clock.advance(self.verifier.timeout)
        self.failureResultOf(d, IdentityProviderUnavailable)

    def test_cache_is_bounded(self) -> None:
        """The cache keeps at most max_entries tokens, and never the tokens themselves."""
        self.verifier.max_entries = 3
        for n in range(5):
            self.check(f"{TOKEN}-{n}")
        cache = self.verifier._cache
        assert len(cache) == 3
        assert not any(TOKEN in key for key in cache)

    def test_no_token_in_logs(self) -> None:
        """Neither the token nor the client secret appears in a log line."""
        with capturedLogs() as events:
            self.check()
            self.agent.routes[URL] = (401, {})
            self.failureResultOf(self.verifier.verify(TOKEN + "x"))
            self.agent.down = True
            self.failureResultOf(self.verifier.verify(TOKEN + "y"))
        text = " ".join(formatEvent(e) for e in events)
        assert TOKEN not in text and "s3cr" not in text
        assert "s3cr" not in repr(self.verifier)


def test_secret_file(tmp_path: Path) -> None:
    """The secret is the file's first line; a missing or empty file is refused in one line."""
    path = tmp_path / "secret"
    path.write_text("hunter2\n")
    assert read_secret(str(path)) == "hunter2"
    path.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        read_secret(str(path))
    with pytest.raises(ValueError, match="cannot be read"):
        read_secret(str(tmp_path / "missing"))


def test_client_id_needs_secret() -> None:
    """A client id without a secret is refused at construction."""
    with pytest.raises(ValueError):
        IntrospectionVerifier(
            url=URL, audiences=(AUDIENCE,), agent=FakeAgent(), clock=Clock(), client_id="x"
        )
