"""
The "bare SDK floor" for bench_gopher.py: the smallest MCP server that gives
the same answer gophergem gives.

It is the SDK's own C{MCPServer} on the SDK's own stdio transport
(C{MCPServer.run("stdio")}: anyio, no Twisted), with one tool,
C{gopher_fetch(url)}, that returns a constant C{CallToolResult}: the exact
structured content and text block gophergem returned for the benchmark menu.
The benchmark records that answer and passes its path in C{BENCH_FLOOR_RESPONSE}
(a JSON file: C{{"structured": ..., "text": ..., "output_schema": ...}}).

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


def _load() -> dict[str, Any]:
    path = os.environ.get("BENCH_FLOOR_RESPONSE")
    if not path:
        return {"structured": {"kind": "text", "text": ""}, "text": "{}", "output_schema": None}
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def build() -> MCPServer[Any]:
    recorded = _load()
    structured = recorded["structured"]
    text = recorded["text"]
    is_error = bool(recorded.get("is_error", False))
    server: MCPServer[Any] = MCPServer(name="bench-floor")

    @server.tool(name="gopher_fetch")
    async def gopher_fetch(url: str) -> CallToolResult:
        """Return the recorded gophergem answer for the benchmark menu, whatever the URL."""
        return CallToolResult(
            content=[TextContent(type="text", text=text)],
            structured_content=structured,
            is_error=is_error,
        )

    schema = recorded.get("output_schema")
    if schema is not None:
        server._tool_manager.get_tool("gopher_fetch").fn_metadata.output_schema = schema
    return server


if __name__ == "__main__":
    build().run("stdio")
