"""
The MCP front door, on the official SDK.

  - L{gophergem.mcp.server}: builds the SDK server from the rest;
  - L{gophergem.mcp.tools}: the tools, one module per concern, and what
    they share;
  - L{gophergem.mcp.schemas}: the output models of the payloads (which
    L{gophergem.render} builds, for the CLI too);
  - L{gophergem.mcp.policy} and L{gophergem.mcp.prompts}: the policy
    resource and the prompts;
  - L{gophergem.mcp.stdio}, L{gophergem.mcp.web}: the transports;
    L{gophergem.mcp.discovery}: C{/health} and C{/.well-known/agent.gopher}.

Only this package imports the SDK or asyncio; importing the package itself
loads neither.
"""
