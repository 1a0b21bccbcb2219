# -*- test-case-name: tests.test_auth_principals -*-
"""
Who is calling: the principal of the MCP request being served.

The SDK keeps the access token of an authenticated request in a context
variable of its own (C{auth_context_var}, set by its
C{AuthContextMiddleware}, which L{gophergem.http.guard.require_token} puts
around the endpoint) and hands it out through C{get_access_token()}; the
SDK carries that context into the handlers of the request's messages.
L{current_principal} is the one reader of it: the tools, the server's
subscriptions and its announcements all ask here.  The principal's name is
L{gophergem.auth.principals.principal_of}'s.
"""

from __future__ import annotations

from mcp.server.auth.middleware.auth_context import get_access_token

from gophergem.auth.principals import principal_of

__all__ = ["current_principal"]


def current_principal() -> str | None:
    """
    The principal of the request being served, or C{None} when it carried
    no access token (stdio, or no authentication configured).
    """
    access = get_access_token()
    return principal_of(access) if access is not None else None
