"""
The "bare SDK floor" for bench_gopher.py: the smallest MCP server that gives
the same answer gophergem gives.

It is the SDK's own C{MCPServer} on the SDK's own stdio transport
(C{MCPServer.run("stdio")}: anyio, no Twisted), with one tool per recorded
answer (C{gopher_fetch(url)}, C{gemini_fetch(url)}), each returning a constant
C{CallToolResult}: the exact structured content and text block gophergem
returned for the benchmark menu or gemtext page.  The benchmark records the
answers and passes their path in C{BENCH_FLOOR_RESPONSE}: a JSON file
C{{"tools": {name: {"structured": ..., "text": ..., "output_schema": ...}}}},
or, the older form, one answer for C{gopher_fetch} at the top level.

C{output_schema} (optional) is gophergem's published C{outputSchema} for the
tool; advertising it makes the SDK client do the same C{jsonschema} check of
C{structuredContent} against both servers, so the difference measured is
server-side only.  The schema is advertised but not validated on the server
side (C{FuncMetadata.output_schema} without an C{output_model}, see the SDK's
C{func_metadata.py}); setting it reaches into C{MCPServer._tool_manager}, a
private attribute of mcp 2.3.0, which is acceptable for a benchmark.

Without C{BENCH_FLOOR_RESPONSE} it answers with a tiny placeholder, which is
enough to measure start-up.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent

_PLACEHOLDER = {"structured": {"kind": "text", "text": ""}, "text": "{}", "output_schema": None}


def _load() -> dict[str, dict[str, Any]]:
    """The recorded answers, by tool name."""
    path = os.environ.get("BENCH_FLOOR_RESPONSE")
    if not path:
        return {"gopher_fetch": _PLACEHOLDER}
    with open(path, encoding="utf-8") as f:
        recorded = json.load(f)
    tools: dict[str, dict[str, Any]] = recorded.get("tools", {"gopher_fetch": recorded})
    return tools


def _add_tool(server: MCPServer[Any], name: str, recorded: dict[str, Any]) -> None:
    structured = recorded["structured"]
    text = recorded["text"]
    is_error = bool(recorded.get("is_error", False))

    @server.tool(name=name)
    async def fetch(url: str) -> CallToolResult:
        """Return the recorded gophergem answer, whatever the URL."""
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=structured,
            is_error=is_error,
        )

    schema = recorded.get("output_schema")
    if schema is not None:
        tool = server._tool_manager.get_tool(name)
        assert tool is not None
        tool.fn_metadata.output_schema = schema


def build() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(name="bench-floor")
    for name, recorded in _load().items():
        _add_tool(server, name, recorded)
    return server


if __name__ == "__main__":
    build().run("stdio")
