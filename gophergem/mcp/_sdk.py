# -*- test-case-name: tests.test_mcp_sdk -*-
"""
The SDK's private attributes gophergem relies on, in one place.

The official SDK gives no public way to reach the lowlevel server of an
C{MCPServer} (which the stdio transport drives), to see or close the live
sessions of its Streamable HTTP session manager (which the session cap
needs), nor to publish a tool's output schema as data (which spares both
building the output models at start-up and checking each result twice).
These helpers are the only code that touches those private names;
C{tests/test_mcp_sdk.py} fails loudly when an SDK release renames or
changes them.
"""

from __future__ import annotations

from typing import Any

from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = [
    "add_request_handler",
    "connection_of",
    "discard_session",
    "input_schema",
    "live_sessions",
    "lowlevel_server",
    "publish_input_schema",
    "publish_output_schema",
    "sdk_output_schema",
]


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


def add_request_handler(server: MCPServer[Any], method: str, params: Any, handler: Any) -> None:
    """
    Answer C{method} with C{handler} (C{async (ctx, params) -> result}): for
    requests C{MCPServer} has no public hook for, such as
    C{resources/subscribe} (which then shows in the server's capabilities).
    """
    server._lowlevel_server.add_request_handler(method, params, handler)


def connection_of(session: Any) -> Any:
    """
    The client connection behind a request's session handle (each request
    may hand out its own handle for the same connection); the handle itself
    when it has none.
    """
    return getattr(session, "_connection", session)


def publish_output_schema(
    server: MCPServer[Any], name: str, schema: dict[str, Any], model: Any = None
) -> None:
    """
    Publish C{schema} as the C{outputSchema} of the tool C{name}.

    Without a C{model}, the SDK advertises the schema and does not check
    results against it: gophergem's payloads are checked against their
    models by its own tests (see L{gophergem.mcp.schemas}), so each call is
    not validated twice.  With a C{model}, every result is validated against
    it, as for a tool annotated with that model.
    """
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(name)
    tool.fn_metadata.output_schema = schema
    tool.fn_metadata.output_model = model


def input_schema(server: MCPServer[Any], name: str) -> dict[str, Any]:
    """The C{inputSchema} the tool C{name} publishes (the SDK derives it from its parameters)."""
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(name)
    return tool.parameters


def publish_input_schema(server: MCPServer[Any], name: str, schema: dict[str, Any]) -> None:
    """
    Publish C{schema} as the C{inputSchema} of the tool C{name}.  Only what
    C{tools/list} shows changes: the SDK still checks every call's arguments
    against the tool's parameters (its argument model).
    """
    tool = server._tool_manager.get_tool(name)
    if tool is None:
        raise KeyError(name)
    tool.parameters = schema


def sdk_output_schema(model: Any) -> dict[str, Any]:
    """The output schema the SDK publishes for a tool annotated to return C{model}."""
    schema = FuncMetadata(arg_model=ArgModelBase, output_model=model).output_schema
    assert schema is not None
    return schema
