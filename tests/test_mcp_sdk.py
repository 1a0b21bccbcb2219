"""
Tests for L{gophergem.mcp._sdk}: the SDK's private names gophergem uses
still exist and still mean what they meant.  When one of these fails after
an SDK upgrade, fix L{gophergem.mcp._sdk}, the only code that uses them.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from gophergem.mcp._sdk import discard_session, live_sessions, lowlevel_server


def test_lowlevel_server_is_what_run_is_called_on() -> None:
    """An MCPServer still keeps the lowlevel Server that has run() and the options."""
    server: MCPServer[Any] = MCPServer(name="probe")
    lowlevel = lowlevel_server(server)
    assert isinstance(lowlevel, Server)
    assert callable(lowlevel.run)
    assert lowlevel.create_initialization_options().server_name == "probe"


def test_live_sessions_is_the_managers_own_dict() -> None:
    """The session manager still keeps its live sessions in a dict by id."""
    server: MCPServer[Any] = MCPServer(name="probe")
    server.streamable_http_app()
    manager = server.session_manager
    assert isinstance(manager, StreamableHTTPSessionManager)
    live = live_sessions(manager)
    assert live == {}
    assert live is live_sessions(manager)


class _Transport:
    """Stands in for a session's transport: records that it was ended."""

    is_terminated = False

    async def terminate(self) -> None:
        self.is_terminated = True


def test_discard_session_forgets_then_ends_it() -> None:
    """Discarding a session removes it from the live ones and terminates its transport."""
    server: MCPServer[Any] = MCPServer(name="probe")
    server.streamable_http_app()
    manager = server.session_manager
    transport = _Transport()
    live_sessions(manager)["s1"] = transport  # type: ignore[assignment]
    asyncio.run(discard_session(manager, "s1", transport))  # type: ignore[arg-type]
    assert live_sessions(manager) == {}
    assert transport.is_terminated
