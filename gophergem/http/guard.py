# -*- test-case-name: tests.test_http_guard -*-
"""
Bearer-token authentication of the HTTP endpoint, on the SDK's auth support.

gophergem is an OAuth 2.1 resource server as the MCP specification
describes it; the SDK checks the C{Authorization} header and answers 401
with the C{WWW-Authenticate} challenge, and this module supplies the rest:

  - L{BearerVerifier}: the SDK's C{TokenVerifier} over a verifier of
    L{gophergem.auth.verifiers} (the token file, JWTs, introspection, and
    the order they are tried in);
  - L{auth_settings}: the SDK's C{AuthSettings} for a public URL;
  - L{require_token}: the SDK's authentication middleware around the
    endpoint's ASGI application, as C{streamable_http_app} would put it
    (our bridge hosts the session manager directly);
  - L{ProtectedResourceMetadataResource}: the RFC 9728 document, at the
    C{/.well-known/oauth-protected-resource/<path>} a client looks for;
  - L{BearerGuardResource}: the same bearer check in front of a
    C{twisted.web} resource (the discovery drill-down);
  - the principal an access token stands for is
    L{gophergem.auth.principals.principal_of}'s.

An identity provider that cannot be reached gives 503 with a JSON-RPC error
body (L{IdentityProviderUnavailable}), never 401 or 500.

Tokens never reach a log: the verifier logs names, not tokens, and neither
the bridge nor the site's access log records request headers.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Sequence
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
from starlette.authentication import AuthenticationError
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.responses import Response
from twisted.logger import Logger
from twisted.web import server
from twisted.web.resource import IResource, Resource

from gophergem.auth.idp import IdentityProviderUnavailable
from gophergem.auth.verifiers import Access, AccessVerifier
from gophergem.http.asgi import ASGIApp
from gophergem.http.discovery import Directory
from gophergem.http.origin import foreign_request
from gophergem.http.site import refuse

__all__ = [
    "PRM_PREFIX",
    "BearerGuardResource",
    "BearerVerifier",
    "ProtectedResourceMetadataResource",
    "access_token",
    "auth_settings",
    "metadata_path",
    "mount_metadata",
    "require_token",
    "unavailable_body",
]

log = Logger(namespace="gophergem.auth")

PRM_PREFIX = "/.well-known/oauth-protected-resource"
"""Where RFC 9728 metadata lives, before the resource's own path."""


def access_token(access: Access) -> AccessToken:
    """The SDK's C{AccessToken} for what a verifier of L{gophergem.auth.verifiers} granted."""
    return AccessToken(
        token=access.token,
        client_id=access.client_id,
        scopes=list(access.scopes),
        expires_at=access.expires_at,
        resource=access.resource,
        subject=access.subject,
        claims=dict(access.claims) if access.claims is not None else None,
    )


class BearerVerifier:
    """
    The SDK's C{TokenVerifier} over a verifier of L{gophergem.auth.verifiers}
    (a L{gophergem.auth.verifiers.CombinedVerifier} in the daemon): what
    the server's auth settings, L{require_token} and L{BearerGuardResource}
    are given.

    C{verify_token} never raises: whatever goes wrong refuses the token
    (the SDK would turn an exception into a 500).

    @ivar verifier: The verifier asked.
    """

    def __init__(self, verifier: AccessVerifier) -> None:
        self.verifier = verifier

    async def access(self, token: str) -> AccessToken | None:
        """
        The access token C{token} stands for, or C{None}.

        @raise IdentityProviderUnavailable: When the provider that decides
            cannot be asked.
        """
        granted = await self.verifier.access(token).asFuture(asyncio.get_running_loop())
        return access_token(granted) if granted is not None else None

    async def verify_token(self, token: str) -> AccessToken | None:
        """L{access}, with an unreachable provider refusing the token (never raises)."""
        try:
            return await self.access(token)
        except IdentityProviderUnavailable:
            return None
        except Exception:
            log.failure("Verifying a bearer token failed; it is refused")
            return None

    def reload(self) -> None:
        """Read the token file again now, if there is one (the daemon's C{SIGHUP})."""
        reload = getattr(self.verifier, "reload", None)
        if reload is not None:
            reload()


def auth_settings(
    public_url: str, *, issuer: str | None = None, required_scopes: Sequence[str] = ()
) -> AuthSettings:
    """
    The SDK's settings for a resource server at C{public_url}.

    @param issuer: The authorization server named in the metadata; C{None}:
        the resource names itself (the token file issues no tokens over
        HTTP, but the SDK and RFC 9728 want one named).
    @param required_scopes: Scopes every token must carry (else 403).
    """
    return AuthSettings.model_validate(
        {
            # A string, so that the settings keep a path-less issuer without a
            # trailing "/" (issuers are compared exactly).
            "issuer_url": issuer if issuer is not None else public_url,
            "resource_server_url": AnyHttpUrl(public_url),
            "validate_token_resource": True,
            "required_scopes": list(required_scopes) or None,
        }
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
        _Raising(verifier),
        resource_server_url=auth.resource_server_url if auth.validate_token_resource else None,
    )
    wrapped: ASGIApp = AuthenticationMiddleware(
        AuthContextMiddleware(guarded), backend=backend, on_error=_unavailable_response
    )
    return jsonrpc_refusals(wrapped, scopes=auth.required_scopes or ())


class _ProviderDown(AuthenticationError):
    """The identity provider could not be asked (Starlette's one catchable error)."""


class _Raising:
    """A verifier whose unreachable provider raises L{_ProviderDown} (for the 503)."""

    def __init__(self, verifier: Any) -> None:
        self._verifier = verifier

    async def verify_token(self, token: str) -> AccessToken | None:
        check = getattr(self._verifier, "access", self._verifier.verify_token)
        try:
            result: AccessToken | None = await check(token)
        except IdentityProviderUnavailable as e:
            raise _ProviderDown(e.message) from None
        except Exception:  # never a 500 for a bad token
            log.failure("Verifying a bearer token failed; it is refused")
            return None
        return result


_UNAVAILABLE = (
    -32002,
    "The identity provider could not check the access token; try again shortly.",
)


def unavailable_body() -> bytes:
    """The JSON-RPC error body of a 503 for an unreachable identity provider."""
    code, text = _UNAVAILABLE
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": code, "message": text, "data": {"code": "STATE_UNAVAILABLE"}},
        }
    ).encode()


def _unavailable_response(conn: HTTPConnection, exc: Exception) -> Response:
    return Response(
        unavailable_body(),
        status_code=503,
        media_type="application/json",
        headers={"Retry-After": "5", "Cache-Control": "no-store"},
    )


_REFUSALS = {
    401: (-32001, "Authentication required: send Authorization: Bearer <token>."),
    403: (-32003, "Forbidden: the token does not allow this."),
}


def _with_scope(value: bytes, scopes: Sequence[str]) -> bytes:
    """The challenge C{value} with C{scope="…"} (the scopes a token needs), when there are some."""
    if not scopes or b"scope=" in value.replace(b"_scope", b""):
        return value
    scheme, _, params = value.partition(b" ")
    scope = b'scope="' + " ".join(scopes).encode("ascii", "replace") + b'"'
    return scheme + b" " + (params + b", " + scope if params else scope)


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


def jsonrpc_refusals(app: ASGIApp, *, scopes: Sequence[str] = ()) -> ASGIApp:
    """
    C{app} with its 401 and 403 answers given a JSON-RPC error body (what an
    MCP client reads), the challenge header kept; a request that sent no
    credentials at all gets the challenge without an C{error}.

    @param scopes: The scopes every token needs, named in the challenge
        (C{scope="…"}) so that a client asks for them.
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
                    if lowered == b"www-authenticate":
                        if not sent_credentials:
                            value = _challenge_without_error(value)
                        value = _with_scope(value, scopes)
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


def _challenge(
    metadata_url: str,
    *,
    error: str | None = None,
    description: str | None = None,
    scopes: Sequence[str] = (),
) -> bytes:
    """A C{WWW-Authenticate} value in the SDK's words (RFC 6750, RFC 9728)."""
    parts = []
    if error is not None:
        parts.append(f'error="{error}"')
        if description is not None:
            parts.append(f'error_description="{description}"')
    parts.append(f'resource_metadata="{metadata_url}"')
    if scopes:
        parts.append(f'scope="{" ".join(scopes)}"')
    return ("Bearer " + ", ".join(parts)).encode("ascii", "replace")


class BearerGuardResource(Resource):
    """
    A C{twisted.web} leaf resource that needs a bearer token: the same check
    and answers as L{require_token} (401 with the challenge, 403 for a
    missing scope, 503 when the identity provider cannot be asked, each
    with a JSON-RPC error body), then C{inner} renders the request.

    @param inner: A leaf resource (it sees the request's C{postpath}).
    @param verifier: A verifier with C{access(token)} (or C{verify_token}).
    @param auth: The endpoint's settings (metadata URL, required scopes).
    @param security: The accepted C{Host}/C{Origin} values, checked first.
    """

    isLeaf = True

    def __init__(
        self,
        inner: IResource,
        verifier: Any,
        auth: AuthSettings,
        security: TransportSecuritySettings | None = None,
    ) -> None:
        super().__init__()  # type: ignore[no-untyped-call]  # Twisted: unannotated
        if auth.resource_server_url is None:
            raise ValueError("the settings name no resource server URL")
        self._inner = inner
        self._verifier = _Raising(verifier)
        self._metadata_url = str(build_resource_metadata_url(auth.resource_server_url))
        self._scopes = tuple(auth.required_scopes or ())
        self._security = security
        self._tasks: set[asyncio.Task[None]] = set()

    def render(self, request: server.Request) -> bytes | int:
        if self._security is not None:
            refused = foreign_request(request, self._security)
            if refused is not None:
                return refuse(request, *refused)
        header = (request.getHeader(b"Authorization") or b"").decode("latin-1")
        if not header.lower().startswith("bearer ") or not header[7:]:
            return self._refuse(request, 401, credentials=bool(header))
        gone: list[bool] = []
        request.notifyFinish().addErrback(lambda _: gone.append(True))

        async def check() -> None:
            try:
                access = await self._verifier.verify_token(header[7:])
            except _ProviderDown:
                if not gone:
                    body = unavailable_body()
                    request.setResponseCode(503)
                    request.setHeader(b"Retry-After", b"5")
                    request.setHeader(b"Cache-Control", b"no-store")
                    request.setHeader(b"Content-Type", b"application/json")
                    request.setHeader(b"Content-Length", b"%d" % len(body))
                    self._finish(request, body)
                return
            if gone:
                return
            if access is None or (
                access.expires_at is not None and access.expires_at < time.time()
            ):
                self._finish(request, self._refuse(request, 401, credentials=True))
                return
            missing = [s for s in self._scopes if s not in access.scopes]
            if missing:
                self._finish(request, self._refuse(request, 403, credentials=True))
                return
            try:
                rendered = self._inner.render(request)  # type: ignore[no-untyped-call]
            except Exception:
                log.failure("Rendering a guarded resource failed")
                self._finish(request, refuse(request, 500, "Internal server error."))
                return
            if rendered != server.NOT_DONE_YET:
                self._finish(request, rendered)

        task = asyncio.ensure_future(check())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return server.NOT_DONE_YET

    @staticmethod
    def _finish(request: server.Request, body: Any) -> None:
        if isinstance(body, bytes):
            request.write(body)
        request.finish()

    def _refuse(self, request: server.Request, status: int, *, credentials: bool) -> bytes:
        code, text = _REFUSALS[status]
        if status == 403:
            challenge = _challenge(
                self._metadata_url,
                error="insufficient_scope",
                description="Required scope: " + " ".join(self._scopes),
                scopes=self._scopes,
            )
        elif credentials:
            challenge = _challenge(
                self._metadata_url,
                error="invalid_token",
                description="Authentication required",
                scopes=self._scopes,
            )
        else:
            challenge = _challenge(self._metadata_url, scopes=self._scopes)
        body = json.dumps(
            {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": text}}
        ).encode()
        request.setResponseCode(status)
        request.setHeader(b"WWW-Authenticate", challenge)
        request.setHeader(b"Cache-Control", b"no-store")
        request.setHeader(b"Content-Type", b"application/json")
        request.setHeader(b"Content-Length", b"%d" % len(body))
        return body
