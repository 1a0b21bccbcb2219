"""
Tests for L{gophergem.mcp._sdk}: the SDK's private names gophergem uses
still exist and still mean what they meant.  When one of these fails after
an SDK upgrade, fix L{gophergem.mcp._sdk}, the only code that uses them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp_types import CallToolResult
from pydantic import BaseModel

from gophergem.mcp._sdk import (
    connection_of,
    discard_session,
    input_schema,
    live_sessions,
    lowlevel_server,
    publish_input_schema,
    publish_output_schema,
    sdk_output_schema,
)


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


class _Probe(BaseModel):
    n: int


def _probe_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(name="probe")

    def probe(bad: bool = False) -> CallToolResult:
        data = {"n": "not a number"} if bad else {"n": 1}
        return CallToolResult(content=[], structured_content=data)

    server.add_tool(probe, name="probe")
    return server


def _call(server: MCPServer[Any], bad: bool) -> CallToolResult:
    async def body() -> CallToolResult:
        result = await server.call_tool("probe", {"bad": bad})
        assert isinstance(result, CallToolResult)
        return result

    return asyncio.run(body())


def test_published_schema_is_advertised_and_not_checked() -> None:
    """
    A schema published without a model is what tools/list shows, and the
    SDK passes results on unchecked (one validation per call: ours, in tests).
    """
    server = _probe_server()
    schema = sdk_output_schema(_Probe)
    publish_output_schema(server, "probe", schema)
    (tool,) = asyncio.run(server.list_tools())
    assert (
        tool.output_schema
        == schema
        == {
            "properties": {"n": {"title": "N", "type": "integer"}},
            "required": ["n"],
            "title": "_Probe",
            "type": "object",
        }
    )
    assert _call(server, bad=True).structured_content == {"n": "not a number"}


def test_published_schema_with_a_model_is_checked() -> None:
    """With its model, every result is validated against it, as for an annotated tool."""
    server = _probe_server()
    publish_output_schema(server, "probe", sdk_output_schema(_Probe), _Probe)
    assert _call(server, bad=False).structured_content == {"n": 1}
    with pytest.raises(Exception, match="n"):
        _call(server, bad=True)


def test_publish_output_schema_unknown_tool() -> None:
    with pytest.raises(KeyError):
        publish_output_schema(_probe_server(), "nope", {})


def test_connection_of_sees_through_session_handles() -> None:
    """A session handle still carries its connection under the private name used."""
    import inspect

    from mcp.server.session import ServerSession

    assert "self._connection" in inspect.getsource(ServerSession)
    marker = object()
    assert connection_of(marker) is marker


def test_published_input_schema_is_advertised_and_arguments_still_checked() -> None:
    """
    The input schema a tool publishes can be replaced; the SDK still checks
    the arguments against the tool's parameters.
    """
    server = _probe_server()
    assert input_schema(server, "probe")["properties"]["bad"]["type"] == "boolean"
    publish_input_schema(server, "probe", {"type": "object", "properties": {}})
    (tool,) = asyncio.run(server.list_tools())
    assert tool.input_schema == {"type": "object", "properties": {}}
    with pytest.raises(Exception, match="bad"):
        _call_with(server, {"bad": "not a boolean"})
    with pytest.raises(KeyError):
        publish_input_schema(server, "nope", {})
    with pytest.raises(KeyError):
        input_schema(server, "nope")


def _call_with(server: MCPServer[Any], arguments: dict[str, Any]) -> Any:
    return asyncio.run(server.call_tool("probe", arguments))
