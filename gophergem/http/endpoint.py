# -*- test-case-name: tests.test_http_asgi -*-
"""
The MCP endpoint as a resource: the SDK's Streamable HTTP app, behind the
session cap (L{gophergem.mcp.sessions}), hosted by the ASGI bridge
(L{gophergem.http.asgi}).  To serve MCP from your own C{Site}::

    resource = mcp_resource(build_server(fetcher))
    root.putChild(b"mcp", resource)
    LifespanService(resource, reactor).setServiceParent(application)
    site = Site(root, requestFactory=BodyCappedRequest)
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings

from gophergem.http.asgi import ASGIApp, ASGIResource
from gophergem.http.origin import transport_security
from gophergem.http.site import MAX_BODY_SIZE
from gophergem.mcp.sessions import (
    MAX_SESSIONS,
    SESSION_IDLE_SECONDS,
    SessionLimit,
    hide_refused_session_id,
)

__all__ = ["mcp_resource"]


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

    Serve it together with a L{LifespanService}.  Build one per server: the
    SDK's session manager it creates runs once.

    @param security: The accepted C{Host}/C{Origin} values; by default
        loopback names on any port (see L{transport_security}).
    @param max_sessions: How many sessions may be open at once (see
        L{SessionLimit}); C{None} for no limit.
    @param session_idle_seconds: How long a session may go without a
        request before it is closed; C{None} to keep it until the client
        ends it.
    @param guard: Wraps the endpoint's ASGI application, outermost (e.g.
        L{gophergem.mcp.auth.require_token}'s bearer authentication).
    @param principal_of: Whose a request is, for the session cap (see
        L{SessionLimit}); by default L{scope_principal}.
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
