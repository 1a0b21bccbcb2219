"""
The MCP front door, on the official SDK: the server's tools
(L{gophergem.mcp.server}), the payloads (L{gophergem.mcp.results}) and the
transports (L{gophergem.mcp.stdio}).  Only this package imports the SDK or
asyncio; importing the package itself loads neither.
"""
