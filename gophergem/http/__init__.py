"""
Everything C{twisted.web}: the HTTP side of the daemon.

  - L{gophergem.http.site}: the bounded C{Site}, the ASGI bridge that hosts
    the SDK's Streamable HTTP app, its lifespan, and the session cap;
  - L{gophergem.http.discovery}: C{/health} and C{/.well-known/agent.gopher};
  - L{gophergem.http.secret_page}: the one-time pages that take a capsule's
    secret input.

Importing the package itself loads neither C{twisted.web} nor the SDK.
"""
