# -*- test-case-name: tests.test_mcp_auth -*-
"""
Bearer-token authentication of the HTTP endpoint, on the SDK's auth support.

gophergem is an OAuth 2.1 resource server as the MCP specification
describes it; the SDK checks the C{Authorization} header and answers 401
with the C{WWW-Authenticate} challenge, and this module supplies the rest:

  - L{TokenFileVerifier}: the SDK's C{TokenVerifier} over a
    L{gophergem.auth.tokens.TokenFile} (the small-team mode);
  - L{auth_settings}: the SDK's C{AuthSettings} for a public URL;
  - L{require_token}: the SDK's authentication middleware around the
    endpoint's ASGI application, as C{streamable_http_app} would put it
    (our bridge hosts the session manager directly);
  - L{ProtectedResourceMetadataResource}: the RFC 9728 document, at the
    C{/.well-known/oauth-protected-resource/<path>} a client looks for.

Tokens never reach a log: the verifier logs names, not tokens, and neither
the bridge nor the site's access log records request headers.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import BearerAuthBackend, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.middleware.authentication import AuthenticationMiddleware
from twisted.logger import Logger
from twisted.web import server
from twisted.web.resource import Resource

from gophergem.auth.tokens import TokenFile
from gophergem.mcp.discovery import Directory
from gophergem.mcp.web import ASGIApp, foreign_request, refuse

__all__ = [
    "PRM_PREFIX",
    "ProtectedResourceMetadataResource",
    "TokenFileVerifier",
    "auth_settings",
    "metadata_path",
    "mount_metadata",
    "require_token",
]

log = Logger(namespace="gophergem.auth")

PRM_PREFIX = "/.well-known/oauth-protected-resource"
"""Where RFC 9728 metadata lives, before the resource's own path."""


class TokenFileVerifier:
    """
    The SDK's C{TokenVerifier} for a token file: a token found in it is an
    access token of its principal (C{client_id} and C{subject} are the
    name), with no scopes, no expiry, for C{resource}.

    C{verify_token} never raises: whatever goes wrong refuses the token
    (the SDK would turn an exception into a 500).

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

    async def verify_token(self, token: str) -> AccessToken | None:
        """The access token C{token} stands for, or C{None} when it is not known."""
        try:
            name = self.tokens.principal_for(token)
            if name is None:
                return None
            return AccessToken(
                token=token,
                client_id=name,
                scopes=[],
                expires_at=None,
                resource=self.resource,
                subject=name,
            )
        except Exception:  # never a 500 for a bad token
            log.failure("Verifying a bearer token failed; it is refused")
            return None

    def reload(self) -> None:
        """Read the token file again now (the daemon's C{SIGHUP})."""
        self.tokens.reload()


def auth_settings(public_url: str) -> AuthSettings:
    """
    The SDK's settings for a resource server at C{public_url} that is also
    named as its own authorization server (the token file issues no tokens
    over HTTP; the SDK and RFC 9728 want one named).
    """
    return AuthSettings(
        issuer_url=AnyHttpUrl(public_url),
        resource_server_url=AnyHttpUrl(public_url),
        validate_token_resource=True,
    )


def metadata_path(resource_url: str) -> str:
    """The path of C{resource_url}'s metadata: C{https://h/mcp} -> C{/.well-known/…/mcp}."""
    path = urlsplit(resource_url).path.rstrip("/")
    return PRM_PREFIX + path


def require_token(app: ASGIApp, server: MCPServer[Any], verifier: Any) -> ASGIApp:
    """
    C{app} behind the SDK's bearer authentication, configured by
    C{server}'s C{AuthSettings}: requests without a valid token get 401 and
    the challenge naming the metadata; a valid token's principal is what
    the SDK's C{get_access_token()} returns inside the request.
    """
    auth = server.settings.auth
    if auth is None or auth.resource_server_url is None:
        raise ValueError("the server has no resource server settings")
    guarded = RequireAuthMiddleware(
        app,
        auth.required_scopes or [],
        build_resource_metadata_url(auth.resource_server_url),
    )
    backend = BearerAuthBackend(
        verifier,
        resource_server_url=auth.resource_server_url if auth.validate_token_resource else None,
    )
    wrapped: ASGIApp = AuthenticationMiddleware(AuthContextMiddleware(guarded), backend=backend)
    return jsonrpc_refusals(wrapped)


_REFUSALS = {
    401: (-32001, "Authentication required: send Authorization: Bearer <token>."),
    403: (-32003, "Forbidden: the token does not allow this."),
}


def _challenge_without_error(value: bytes) -> bytes:
    """
    The C{WWW-Authenticate} challenge for a request that sent no credentials:
    without C{error} and C{error_description} (RFC 6750 section 3.1).
    """
    scheme, _, params = value.partition(b" ")
    kept = [
        part.strip()
        for part in params.split(b",")
        if part.strip() and not part.strip().startswith((b"error=", b"error_description="))
    ]
    return scheme + (b" " + b", ".join(kept) if kept else b"")


def jsonrpc_refusals(app: ASGIApp) -> ASGIApp:
    """
    C{app} with its 401 and 403 answers given a JSON-RPC error body (what an
    MCP client reads), the challenge header kept; a request that sent no
    credentials at all gets the challenge without an C{error}.
    """

    async def refusing(scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        sent_credentials = any(name.lower() == b"authorization" for name, _ in scope["headers"])
        refused: list[int] = []

        async def rewrite(message: Any) -> None:
            if message["type"] == "http.response.start" and message["status"] in _REFUSALS:
                status = message["status"]
                code, text = _REFUSALS[status]
                body = json.dumps(
                    {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}
                ).encode()
                headers = []
                for name, value in message.get("headers", []):
                    lowered = name.lower()
                    if lowered in (b"content-length", b"content-type"):
                        continue
                    if lowered == b"www-authenticate" and not sent_credentials:
                        value = _challenge_without_error(value)
                    headers.append((name, value))
                headers += [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ]
                refused.append(status)
                await send({**message, "headers": headers})
                await send({"type": "http.response.body", "body": body})
                return
            if refused:
                return  # the original body of a refusal: replaced above
            await send(message)

        await app(scope, receive, rewrite)

    return refusing


class ProtectedResourceMetadataResource(Resource):
    """
    The RFC 9728 Protected Resource Metadata of the endpoint, as the SDK
    words it (C{ProtectedResourceMetadata}): C{resource}, the authorization
    servers, C{bearer_methods_supported}; open to any origin (C{GET},
    C{OPTIONS}), under the site's C{Host} rules.
    """

    isLeaf = True

    def __init__(
        self, auth: AuthSettings, security: TransportSecuritySettings | None = None
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if auth.resource_server_url is None:
            raise ValueError("the settings name no resource server URL")
        metadata = ProtectedResourceMetadata(
            resource=auth.resource_server_url,
            authorization_servers=[auth.issuer_url],
            scopes_supported=auth.required_scopes,
        )
        self.body = metadata.model_dump_json(exclude_none=True).encode("utf-8")
        self._security = security

    def _refused(self, request: server.Request) -> bytes | None:
        if self._security is None:
            return None
        refused = foreign_request(request, self._security)
        return refuse(request, *refused) if refused is not None else None

    def render_GET(self, request: server.Request) -> bytes:
        refused = self._refused(request)
        if refused is not None:
            return refused
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Cache-Control", b"public, max-age=3600")
        request.setHeader(b"Access-Control-Allow-Origin", b"*")
        return self.body

    def render_OPTIONS(self, request: server.Request) -> bytes:
        refused = self._refused(request)
        if refused is not None:
            return refused
        request.setResponseCode(204)
        request.setHeader(b"Access-Control-Allow-Origin", b"*")
        request.setHeader(b"Access-Control-Allow-Methods", b"GET, OPTIONS")
        request.setHeader(b"Access-Control-Allow-Headers", b"mcp-protocol-version")
        return b""


def mount_metadata(
    root: Resource, auth: AuthSettings, security: TransportSecuritySettings | None = None
) -> str:
    """
    Serve the metadata of C{auth}'s resource under C{root} (the site's root)
    at L{metadata_path}, next to what is there; return that path.
    """
    if auth.resource_server_url is None:
        raise ValueError("the settings name no resource server URL")
    path = metadata_path(str(auth.resource_server_url))
    segments = [part.encode("utf-8") for part in path.strip("/").split("/")]
    parent = root
    for segment in segments[:-1]:
        child = parent.getStaticEntity(segment)
        if child is None:
            child = Directory()  # type: ignore[no-untyped-call]  # Twisted: unannotated
            parent.putChild(segment, child)
        parent = child
    parent.putChild(segments[-1], ProtectedResourceMetadataResource(auth, security))
    return path
