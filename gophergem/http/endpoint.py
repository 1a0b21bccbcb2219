# -*- test-case-name: tests.test_http_asgi,tests.test_service_http -*-
"""
The MCP endpoint as a resource, and the daemon's site around it.

L{mcp_resource} is the SDK's Streamable HTTP app, behind the session cap
(L{gophergem.mcp.sessions}), hosted by the ASGI bridge
(L{gophergem.http.asgi}).  To serve MCP from your own C{Site}::

    resource = mcp_resource(build_server(fetcher))
    root.putChild(b"mcp", resource)
    LifespanService(resource, reactor).setServiceParent(application)
    site = Site(root, requestFactory=BodyCappedRequest)

L{build_site} is the daemon's own site: the endpoint at C{/mcp}, discovery
and C{/health}, the secret-input pages, and the bearer guard when
authentication is configured.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IReactorTime

from gophergem._defer import settle
from gophergem.config import Config
from gophergem.http.asgi import ASGIApp, ASGIResource
from gophergem.http.discovery import Directory, add_discovery
from gophergem.http.origin import transport_security
from gophergem.http.site import MAX_BODY_SIZE, BoundedSite
from gophergem.mcp.sessions import (
    MAX_SESSIONS,
    SESSION_IDLE_SECONDS,
    SessionLimit,
    hide_refused_session_id,
)

if TYPE_CHECKING:
    from gophergem.http.guard import BearerVerifier

__all__ = ["INPUT_PATH", "build_site", "health_checks", "mcp_resource"]


def mcp_resource(
    server: MCPServer[Any],
    *,
    security: TransportSecuritySettings | None = None,
    max_body_size: int = MAX_BODY_SIZE,
    max_sessions: int | None = MAX_SESSIONS,
    session_idle_seconds: float | None = SESSION_IDLE_SECONDS,
    guard: Callable[[ASGIApp], ASGIApp] | None = None,
    principal_of: Callable[[MutableMapping[str, Any]], str | None] | None = None,
) -> ASGIResource:
    """
    The Streamable HTTP endpoint of C{server}, as a resource to mount anywhere.

    Serve it together with a L{gophergem.http.asgi.LifespanService}.  Build
    one per server: the SDK's session manager it creates runs once.

    @param security: The accepted C{Host}/C{Origin} values; by default
        loopback names on any port (see L{transport_security}).
    @param max_sessions: How many sessions may be open at once (see
        L{SessionLimit}); C{None} for no limit.
    @param session_idle_seconds: How long a session may go without a
        request before it is closed; C{None} to keep it until the client
        ends it.
    @param guard: Wraps the endpoint's ASGI application, outermost (e.g.
        L{gophergem.http.guard.require_token}'s bearer authentication).
    @param principal_of: Whose a request is, for the session cap (see
        L{SessionLimit}); by default L{gophergem.mcp.sessions.scope_principal}.
    """
    server.streamable_http_app(
        transport_security=security if security is not None else transport_security(),
        max_request_body_size=max_body_size,
        session_idle_timeout=session_idle_seconds,
        max_sessions=None,  # SessionLimit decides, closing idle sessions first
    )
    manager = server.session_manager
    app: ASGIApp = hide_refused_session_id(manager.handle_request)
    if max_sessions is not None:
        app = SessionLimit(manager, max_sessions, principal_of)
    if guard is not None:
        app = guard(app)
    return ASGIResource(app, manager.run, max_body_size=max_body_size)


INPUT_PATH = "input"
"""Where the daemon serves the one-time pages for secret input (C{/input/<token>})."""


def build_site(
    server: MCPServer[Any],
    config: Config,
    reactor: IReactorTime,
    *,
    security: TransportSecuritySettings | None = None,
    secret_pages: Any = None,
    token_verifier: BearerVerifier | None = None,
    health_checks: Callable[[], Deferred[list[str]]] | None = None,
) -> tuple[BoundedSite, ASGIResource]:
    """
    The web site of the HTTP transport, and its MCP resource.

    The site serves the MCP endpoint at C{/mcp}, C{/health},
    C{/.well-known/agent.gopher} and C{/.well-known/agent/}, all under the
    same C{Host}/C{Origin} rules (C{security}); the resource needs a
    L{gophergem.http.asgi.LifespanService} running beside it.  The
    configuration bounds sessions, the time to send request headers and
    bodies, and the connections from one address.
    With C{secret_pages} (a L{gophergem.http.secret_page.SecretPages}), the
    one-time pages for a capsule's secret input are served under
    C{/input/}, and no request there is logged.  With a C{token_verifier}
    (and C{server} built with the matching auth settings), C{/mcp} needs a
    bearer token and the site serves the endpoint's Protected Resource
    Metadata; C{/health} stays open, the discovery root shows only its
    minimum and its drill-down needs the token too.
    """
    if security is None:
        security = transport_security()
    auth = server.settings.auth
    guard = principal = None
    if token_verifier is not None:
        from gophergem.auth.principals import principal_of
        from gophergem.http.guard import require_token

        if auth is None:
            raise ValueError("a token verifier needs a server built with auth settings")
        verifier = token_verifier

        def guard(app: Any) -> Any:
            return require_token(app, server, verifier)

        def principal(scope: Any) -> str | None:
            # The session cap counts and closes sessions per principal.
            token = getattr(scope.get("user"), "access_token", None)
            return principal_of(token) if token is not None else None

    resource = mcp_resource(
        server,
        security=security,
        max_sessions=config.http.max_sessions,
        session_idle_seconds=config.http.session_idle_seconds,
        guard=guard,
        principal_of=principal,
    )
    root = Directory()  # type: ignore[no-untyped-call]  # Twisted: unannotated
    root.putChild(b"mcp", resource)
    if secret_pages is not None:
        root.putChild(INPUT_PATH.encode(), secret_pages.resource)
    discovery_guard = None
    if token_verifier is not None and auth is not None:
        from gophergem.http.guard import BearerGuardResource

        checker, settings = token_verifier, auth

        def discovery_guard(inner: Any) -> Any:
            return BearerGuardResource(inner, checker, settings, security)

    add_discovery(
        root,
        server,
        config,
        mcp_path="/mcp",
        security=security,
        guard=discovery_guard,
        health_checks=health_checks,
    )
    if token_verifier is not None and auth is not None:
        from gophergem.http.guard import mount_metadata

        mount_metadata(root, auth, security)
    site = BoundedSite(
        root,
        header_timeout=config.http.header_timeout_seconds,
        body_timeout=config.http.body_timeout_seconds,
        max_connections_per_address=config.http.max_connections_per_address,
        reactor=reactor,
        unlogged=(f"/{INPUT_PATH}/".encode(),),
    )
    return site, resource


def health_checks(state: Any, policy: Any) -> Callable[[], Deferred[list[str]]]:
    """What C{/health} asks: each shared backend, named by kind when it fails."""

    async def failing() -> list[str]:
        failed = []
        for name, backend in (("postgresql", state), ("redis", policy)):
            if backend is None or not hasattr(backend, "health"):
                continue
            try:
                report = await settle(backend.health())
            except Exception:
                report = {"ok": False}
            if not report.get("ok"):
                failed.append(name)
        return failed

    def checks() -> Deferred[list[str]]:
        return Deferred.fromCoroutine(failing())

    return checks
