"""
Tests for L{gophergem.http.guard}: the SDK's token verifier over ours, the
SDK's bearer authentication around the endpoint's ASGI app, the Protected
Resource Metadata, the discovery guard, and the site's wiring of them
(L{gophergem.http.endpoint.build_site}).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver import MCPServer
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import capturedLogs, formatEvent

from gophergem.auth.idp import IdentityProviderUnavailable
from gophergem.auth.tokens import add_token
from gophergem.auth.verifiers import TokenFileVerifier
from gophergem.fetcher import Fetcher
from gophergem.http.endpoint import build_site
from gophergem.http.guard import (
    BearerVerifier,
    ProtectedResourceMetadataResource,
    auth_settings,
    metadata_path,
    require_token,
)
from gophergem.mcp.server import build_server
from tests.helpers.mcp_auth import OFFLINE, URL, authed_site, bearer, exchange, idp_site
from tests.helpers.mcp_auth import bearer_provider as provider
from tests.helpers.web import request_bytes


@pytest.fixture
def tokens_path(tmp_path: Path) -> Path:
    return tmp_path / "tokens.json"


# --- the SDK's token verifier -------------------------------------------------------------------


def token_file(tokens_path: Path) -> BearerVerifier:
    """The SDK's verifier over the token file at C{tokens_path}."""
    return BearerVerifier(TokenFileVerifier.from_path(str(tokens_path), URL))


def test_bearer_verifier_gives_the_sdk_access_token(tokens_path: Path) -> None:
    """A known token is the SDK's access token of its principal, for the configured resource."""
    token = add_token(tokens_path, "alice")
    verifier = token_file(tokens_path)
    access = asyncio.run(verifier.verify_token(token))
    assert access is not None
    assert (access.client_id, access.subject, access.resource) == ("alice", "alice", URL)
    assert (access.scopes, access.expires_at, access.token, access.claims) == (
        [],
        None,
        token,
        None,
    )
    assert asyncio.run(verifier.verify_token(token + "x")) is None


# --- the SDK's bearer authentication ---------------------------------------------------------


async def asgi_call(app: Any, headers: list[tuple[bytes, bytes]]) -> tuple[int, dict[str, str]]:
    """One POST /mcp through C{app}; the status and headers of its answer."""
    status, answer, _ = await asgi_exchange(app, headers)
    return status, answer


async def asgi_exchange(
    app: Any, headers: list[tuple[bytes, bytes]]
) -> tuple[int, dict[str, str], bytes]:
    """One POST /mcp through C{app}; the status, headers and body of its answer."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "headers": headers,
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 40000),
        "root_path": "",
    }
    await app(scope, receive, send)
    start = sent[0]
    body = b"".join(m.get("body", b"") for m in sent[1:] if m["type"] == "http.response.body")
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


def guarded(tokens_path: Path) -> tuple[Any, list[Any]]:
    """An app behind require_token that records the access token it saw."""
    seen: list[Any] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(get_access_token())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    verifier = token_file(tokens_path)
    server: MCPServer[Any] = MCPServer("t", token_verifier=verifier, auth=auth_settings(URL))
    return require_token(inner, server, verifier), seen


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"authorization", b"Bearer wrong")],
        [(b"authorization", b"Basic YTpi")],
        [(b"authorization", b"Bearer ")],
    ],
    ids=["none", "wrong", "basic", "empty"],
)
def test_refused_without_a_good_token(tokens_path: Path, headers: Any) -> None:
    """No, a wrong or a non-bearer credential gets 401 and the challenge naming the metadata."""
    add_token(tokens_path, "alice")
    app, seen = guarded(tokens_path)
    status, answer = asyncio.run(asgi_call(app, headers))
    assert status == 401
    assert answer["www-authenticate"].startswith("Bearer ")
    assert (
        'resource_metadata="http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"'
        in answer["www-authenticate"]
    )
    assert seen == []
    # Only a request that sent credentials is told they were wrong (RFC 6750 3.1).
    assert ("error=" in answer["www-authenticate"]) == bool(headers)


def test_refusals_are_jsonrpc_errors(tokens_path: Path) -> None:
    """A 401 body is a JSON-RPC error an MCP client can read, sized by content-length."""
    add_token(tokens_path, "alice")
    app, _ = guarded(tokens_path)
    status, answer, body = asyncio.run(asgi_exchange(app, [(b"authorization", b"Bearer no")]))
    assert status == 401
    assert answer["content-type"] == "application/json"
    assert int(answer["content-length"]) == len(body)
    reply = json.loads(body)
    assert reply["jsonrpc"] == "2.0" and reply["id"] is None
    assert reply["error"]["code"] == -32001
    assert "Bearer" in reply["error"]["message"]


def test_a_good_token_reaches_the_app(tokens_path: Path) -> None:
    """A valid token passes, and the handler sees its principal through get_access_token()."""
    token = add_token(tokens_path, "alice")
    app, seen = guarded(tokens_path)
    status, _ = asyncio.run(asgi_call(app, [(b"authorization", f"Bearer {token}".encode())]))
    assert status == 200
    assert seen[0].client_id == "alice"


def test_require_token_needs_auth_settings() -> None:
    """An endpoint without auth settings cannot be guarded by mistake."""
    with pytest.raises(ValueError):
        require_token(lambda *a: None, MCPServer("t"), object())  # type: ignore[arg-type,return-value]


# --- the metadata ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        (URL, "/.well-known/oauth-protected-resource/mcp"),
        ("https://mcp.example.org/team/mcp", "/.well-known/oauth-protected-resource/team/mcp"),
        ("https://mcp.example.org", "/.well-known/oauth-protected-resource"),
    ],
)
def test_metadata_path(url: str, path: str) -> None:
    """The metadata sits at /.well-known/oauth-protected-resource plus the resource's path."""
    assert metadata_path(url) == path


def test_metadata_document() -> None:
    """The document names the resource, itself as authorization server, and header bearer."""
    resource = ProtectedResourceMetadataResource(auth_settings("https://mcp.example.org/mcp"))
    assert json.loads(resource.body) == {
        "resource": "https://mcp.example.org/mcp",
        "authorization_servers": ["https://mcp.example.org/mcp"],
        "bearer_methods_supported": ["header"],
    }


# --- the site ------------------------------------------------------------------------------------


def site_with_auth(tokens_path: Path) -> Any:
    return authed_site(token_file(tokens_path), auth_settings(URL))


def test_site_serves_the_metadata_and_health(tokens_path: Path) -> None:
    """The site serves the metadata where clients look, and /health without a token."""
    site = site_with_auth(tokens_path)
    status, headers, body = exchange(
        site, request_bytes("GET", "/.well-known/oauth-protected-resource/mcp")
    )
    assert status == 200
    assert headers["access-control-allow-origin"] == "*"
    assert json.loads(body)["resource"] == URL
    assert exchange(site, request_bytes("GET", "/health"))[0] == 200


def test_site_without_auth_has_no_metadata() -> None:
    """Without a token file there is no metadata document."""
    site, _ = build_site(
        build_server(Fetcher.from_config(OFFLINE, MemoryReactorClock()), OFFLINE),
        OFFLINE,
        MemoryReactorClock(),
    )
    path = "/.well-known/oauth-protected-resource/mcp"
    assert exchange(site, request_bytes("GET", path))[0] == 404


def test_access_log_has_no_token(tokens_path: Path) -> None:
    """The site's access log records requests but never their Authorization header."""
    token = add_token(tokens_path, "alice")
    site = site_with_auth(tokens_path)
    site.doStart()  # opens the access log
    with capturedLogs() as events:
        for path in ("/health", "/.well-known/oauth-protected-resource/mcp", "/mcp"):
            exchange(
                site,
                request_bytes("GET", path, headers={"Authorization": f"Bearer {token}"}),
            )
    site.doStop()
    lines = [formatEvent(e) for e in events]
    assert any('"GET /health HTTP/1.1" 200' in line for line in lines), lines
    assert not any(token in line for line in lines)


# --- identity providers: JWT, introspection, the combination -----------------------------------

from gophergem.auth.principals import principal_of  # noqa: E402
from tests.helpers.idp import AUDIENCE, ISSUER, RSA_KEY, FakeAgent, idp_routes, jwk_of, mint  # noqa: E402


def test_provider_access_token() -> None:
    """A JWT becomes an access token for this resource whose claims name the issuer."""
    verifier = provider(FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1"))))
    access = asyncio.run(verifier.verify_token(mint()))
    assert access is not None
    assert (access.client_id, access.subject, access.resource) == ("claude", "alice", AUDIENCE)
    assert access.scopes == ["gopher", "gemini"]
    assert access.claims is not None and access.claims["iss"] == ISSUER
    assert principal_of(access) == f"{ISSUER}#alice"


def test_provider_unavailable_is_none_for_the_sdk() -> None:
    """verify_token never raises: an unreachable provider refuses the token there."""
    agent = FakeAgent()
    agent.down = True
    verifier = provider(agent)
    assert asyncio.run(verifier.verify_token(mint())) is None
    with pytest.raises(IdentityProviderUnavailable):
        asyncio.run(verifier.access(mint()))


def test_metadata_names_the_issuer() -> None:
    """With an issuer, the metadata names it as the authorization server, and the scopes."""
    settings = auth_settings(URL, issuer=ISSUER, required_scopes=("gopher",))
    document = json.loads(ProtectedResourceMetadataResource(settings).body)
    assert document["authorization_servers"] == [ISSUER]
    assert document["scopes_supported"] == ["gopher"]


def guarded_by(verifier: Any, scopes: tuple[str, ...] = ()) -> Any:
    async def inner(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    server: MCPServer[Any] = MCPServer(
        "t", token_verifier=verifier, auth=auth_settings(AUDIENCE, required_scopes=scopes)
    )
    return require_token(inner, server, verifier)


def test_unreachable_provider_is_503() -> None:
    """An unreachable provider gives 503 with a JSON-RPC error body, not 401 or 500."""
    agent = FakeAgent()
    agent.down = True
    app = guarded_by(provider(agent))
    status, answer, body = asyncio.run(
        asgi_exchange(app, [(b"authorization", f"Bearer {mint()}".encode())])
    )
    assert status == 503
    assert answer["retry-after"] == "5"
    reply = json.loads(body)
    assert reply["jsonrpc"] == "2.0" and reply["error"]["data"]["code"] == "STATE_UNAVAILABLE"


def test_required_scopes() -> None:
    """A token without a required scope gets 403 insufficient_scope naming the scope."""
    verifier = provider(FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1"))))
    app = guarded_by(verifier, ("gopher", "admin"))
    status, answer, body = asyncio.run(
        asgi_exchange(app, [(b"authorization", f"Bearer {mint()}".encode())])
    )
    assert status == 403
    assert 'error="insufficient_scope"' in answer["www-authenticate"]
    assert 'scope="gopher admin"' in answer["www-authenticate"]
    assert json.loads(body)["error"]["code"] == -32003
    status, answer, _ = asyncio.run(asgi_exchange(app, []))
    assert status == 401 and 'scope="gopher admin"' in answer["www-authenticate"]
    status, _, _ = asyncio.run(
        asgi_exchange(app, [(b"authorization", f"Bearer {mint(scope='gopher admin')}".encode())])
    )
    assert status == 200


# --- the site with an identity provider -----------------------------------------------------------


def test_discovery_drill_down_needs_a_token() -> None:
    """With auth on, the drill-down needs a token; the root card shows only its minimum."""
    agent = FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1")))
    site = idp_site(agent)
    token = mint()
    for path in (
        "/.well-known/agent",
        "/.well-known/agent/tools",
        "/.well-known/agent/tools/gopher_fetch",
        "/.well-known/agent/policy",
    ):
        status, headers, body = exchange(site, request_bytes("GET", path))
        assert status == 401, path
        assert "resource_metadata=" in headers["www-authenticate"]
        assert "error=" not in headers["www-authenticate"]
        assert json.loads(body)["error"]["code"] == -32001
        status, _, _ = exchange(site, request_bytes("GET", path, headers=bearer("nope")))
        assert status == 401, path
        status, _, body = exchange(site, request_bytes("GET", path, headers=bearer(token)))
        assert status == 200, (path, body)
    status, _, body = exchange(site, request_bytes("GET", "/.well-known/agent.gopher"))
    assert status == 200
    assert b"URL:http://127.0.0.1:8000/mcp" in body
    assert b"gopher_fetch" not in body and b"Policy" not in body
    assert exchange(site, request_bytes("GET", "/health"))[0] == 200


def test_discovery_drill_down_provider_down() -> None:
    """The drill-down answers 503 with a JSON-RPC body when the provider is unreachable."""
    agent = FakeAgent()
    agent.down = True
    site = idp_site(agent)
    status, _, body = exchange(
        site, request_bytes("GET", "/.well-known/agent/tools", headers=bearer(mint()))
    )
    assert status == 503
    assert json.loads(body)["error"]["data"]["code"] == "STATE_UNAVAILABLE"


def test_no_token_in_any_log(tokens_path: Path) -> None:
    """Across refused, accepted and 503 requests, no token text reaches a log event."""
    file_token = add_token(tokens_path, "alice")
    agent = FakeAgent(idp_routes(jwk_of(RSA_KEY, "k1")))
    site = idp_site(agent, tokens_path)
    good, bad = mint(), mint(aud="https://other.example.org/mcp")
    site.doStart()
    with capturedLogs() as events:
        for token in (good, bad, file_token, "opaque-nonsense"):
            for path in ("/mcp", "/.well-known/agent/tools"):
                exchange(site, request_bytes("GET", path, headers=bearer(token)))
        agent.down = True
        late = mint(kid="k-new", sub="late")
        exchange(site, request_bytes("GET", "/mcp", headers=bearer(late)))
    site.doStop()
    text = "\n".join(formatEvent(e) for e in events)
    assert "GET /mcp" in text
    for token in (good, bad, file_token, "opaque-nonsense", late):
        assert token not in text
