"""
The MCP front door, on the official SDK.

  - L{gophergem.mcp.server}: builds the SDK server from the rest;
  - L{gophergem.mcp.tools}: the tools, one module per concern (gopher,
    gemini, smolweb, titan, trust, feeds, search), and what they share;
  - L{gophergem.mcp.resources} and L{gophergem.mcp.prompts}: the policy
    resource and the prompts; L{gophergem.mcp.completions}: what the
    prompts' arguments complete to;
  - L{gophergem.mcp.schemas}: the tools' output models (the payloads
    themselves are built by L{gophergem.render}, for the CLI too);
  - L{gophergem.mcp.prebuilt}: records the output schemas and the early
    answers (C{output_schemas.json}, C{ready_answers.json});
  - L{gophergem.mcp.stdio}: the stdio transport; L{gophergem.mcp.early}:
    the answers it gives while the SDK is still loading;
  - L{gophergem.mcp.sessions}: the session cap in front of the SDK's
    Streamable HTTP app (served by L{gophergem.http}, with C{/health} and
    C{/.well-known/agent.gopher});
  - L{gophergem.mcp.caller}: the principal of the request being served
    (who is calling is L{gophergem.auth.principals});
  - L{gophergem.mcp._sdk}: the SDK's private names, used nowhere else.

Only this package and L{gophergem.http} import the SDK or asyncio; importing
the package itself loads neither.
"""
