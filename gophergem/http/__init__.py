"""
Everything C{twisted.web}: the HTTP side of the daemon.

  - L{gophergem.http.site}: the bounded C{Site} (bounds on request heads,
    bodies and connections; credentials kept out of the access log);
  - L{gophergem.http.origin}: the C{Host}/C{Origin} checks (DNS rebinding);
  - L{gophergem.http.asgi}: the ASGI bridge that hosts the SDK's Streamable
    HTTP app, and its lifespan;
  - L{gophergem.http.endpoint}: the MCP endpoint as a resource to mount,
    behind the session cap of L{gophergem.mcp.sessions}, and the daemon's
    site around it;
  - L{gophergem.http.listen}: where the daemon listens and how clients
    reach it (strports, loopback, the public URL), failing in one line;
  - L{gophergem.http.guard}: the bearer guard and the RFC 9728 protected
    resource metadata;
  - L{gophergem.http.discovery}: C{/health} and C{/.well-known/agent.gopher};
  - L{gophergem.http.secret_page}: the one-time pages that take a capsule's
    secret input, and L{gophergem.http.secret_input}, which offers them to
    the gemini tools.

Importing the package itself loads neither C{twisted.web} nor the SDK.
"""
