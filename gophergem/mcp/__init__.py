"""
The MCP front door, on the official SDK.

  - L{gophergem.mcp.server}: builds the SDK server from the rest;
  - L{gophergem.mcp.gopher_tools}, L{gophergem.mcp.gemini_tools},
    L{gophergem.mcp.trust_tools}: the tools, by concern;
  - L{gophergem.mcp.payloads}: the output models, where results become
    MCP payloads;
  - L{gophergem.mcp.policy} and L{gophergem.mcp.prompts}: the policy
    resource and the prompts;
  - L{gophergem.mcp.stdio}: the stdio transport; Streamable HTTP, C{/health}
    and C{/.well-known/agent.gopher} are served by L{gophergem.http}.

Only this package and L{gophergem.http} import the SDK or asyncio; importing
the package itself loads neither.
"""
