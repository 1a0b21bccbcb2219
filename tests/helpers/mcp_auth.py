"""
Shared helpers for the bearer-guard tests: a guarded site, a token file,
an identity provider's site, and one HTTP exchange with a bearer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from twisted.internet.testing import MemoryReactorClock

from gophergem.auth.jwt import JWTVerifier
from gophergem.auth.verifiers import CombinedVerifier, ProviderVerifier, TokenFileVerifier
from gophergem.config import Config
from gophergem.fetcher import Fetcher
from gophergem.http.endpoint import build_site
from gophergem.http.guard import BearerVerifier, auth_settings
from gophergem.http.listen import endpoint_security
from gophergem.mcp.server import build_server
from tests.helpers.idp import AUDIENCE, ISSUER, FakeAgent
from tests.helpers.web import Wire, run, until

URL = "http://127.0.0.1:8000/mcp"

OFFLINE = Config()


def authed_site(verifier: Any, auth: Any) -> Any:
    """An offline server behind C{verifier}, as the daemon's site on loopback port 8000."""
    server = build_server(
        Fetcher.from_config(OFFLINE, MemoryReactorClock()),
        OFFLINE,
        token_verifier=verifier,
        auth=auth,
    )
    site, _ = build_site(
        server,
        OFFLINE,
        MemoryReactorClock(),
        security=endpoint_security("tcp:8000:interface=127.0.0.1"),
        token_verifier=verifier,
    )
    return site


def exchange(site: Any, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    async def body() -> tuple[int, dict[str, str], bytes]:
        wire = Wire(site)
        wire.send(raw)
        await until(lambda: b"\r\n\r\n" in wire.value())
        status, headers = wire.head()
        return status, headers, wire.body()

    return run(body)


def provider(agent: FakeAgent) -> ProviderVerifier:
    import time

    from twisted.internet.task import Clock

    clock = Clock()
    clock.advance(time.time())
    check = JWTVerifier(
        issuer=ISSUER, audiences=(AUDIENCE,), algorithms=("RS256",), agent=agent, clock=clock
    )
    return ProviderVerifier(check, AUDIENCE)


def bearer_provider(agent: FakeAgent) -> BearerVerifier:
    """The SDK's verifier over a JWT issuer's (L{provider})."""
    return BearerVerifier(provider(agent))


def idp_site(agent: FakeAgent, tokens_path: Path | None = None) -> Any:
    verifier = CombinedVerifier(
        TokenFileVerifier.from_path(str(tokens_path), URL) if tokens_path else None,
        provider(agent),
    )
    return authed_site(BearerVerifier(verifier), auth_settings(URL, issuer=ISSUER))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}
