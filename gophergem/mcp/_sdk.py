# -*- test-case-name: tests.test_mcp_sdk -*-
"""
The SDK's private attributes gophergem relies on, in one place.

The official SDK gives no public way to reach the lowlevel server of an
C{MCPServer} (which the stdio transport drives), nor to see or close the
live sessions of its Streamable HTTP session manager (which the session
cap needs).  These helpers are the only code that touches those private
names; C{tests/test_mcp_sdk.py} fails loudly when an SDK release renames or
changes them.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = ["discard_session", "live_sessions", "lowlevel_server"]


def lowlevel_server(server: MCPServer[Any]) -> Server[Any]:
    """The lowlevel C{Server} behind C{server}: what C{Server.run} is called on."""
    lowlevel: Server[Any] = server._lowlevel_server
    return lowlevel


def live_sessions(
    manager: StreamableHTTPSessionManager,
) -> dict[str, StreamableHTTPServerTransport]:
    """The live sessions of C{manager}, by session id (its own dict: do not change it)."""
    live: dict[str, StreamableHTTPServerTransport] = manager._server_instances
    return live


async def discard_session(
    manager: StreamableHTTPSessionManager,
    session_id: str,
    transport: StreamableHTTPServerTransport,
) -> None:
    """
    Close a live session the way C{manager} does itself: it is forgotten at
    once (its id answers 404), then its streams end.
    """
    await manager._discard_session(session_id, transport)
