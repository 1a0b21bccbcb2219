"""
Results as output: what the MCP tools and the CLI both show.

  - L{gophergem.render.payloads}: result values (and feed, search and error
    answers) as structured payloads, plain dicts;
  - L{gophergem.render.text}: a payload as the compact JSON text a model
    reads;
  - L{gophergem.render.memo}: a cache hit's payload and text, rendered once
    per cached window and filled in on each later hit.

Nothing here imports the MCP SDK, pydantic or L{gophergem.mcp}: the CLI
renders through this package without loading them (C{tests/test_layers.py}
checks it).
"""
