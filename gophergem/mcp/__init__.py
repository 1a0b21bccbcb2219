"""
The MCP front door, on the official SDK: the tools (L{gophergem.mcp.server},
L{gophergem.mcp.gemini_tools}), the payloads (L{gophergem.mcp.results}), the
policy resource and prompts (L{gophergem.mcp.extras}), discovery
(L{gophergem.mcp.discovery}) and the transports (L{gophergem.mcp.stdio},
L{gophergem.mcp.web}).  Only this package imports the SDK or asyncio;
importing the package itself loads neither.
"""
