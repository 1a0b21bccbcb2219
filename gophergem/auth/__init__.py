# -*- test-case-name: tests.test_auth_tokens -*-
"""
Who may use the HTTP endpoint: credentials and the stores that hold them,
free of MCP (the SDK-facing verifier is L{gophergem.mcp.auth}).

  - L{gophergem.auth.tokens}: the small-team token file (one hashed bearer
    token per principal) and the C{gophergem token} operations;
  - L{gophergem.auth.jwt}: JWT access tokens checked against an issuer's keys;
  - L{gophergem.auth.introspection}: opaque tokens checked at an RFC 7662
    endpoint;
  - L{gophergem.auth.idp}: what those two share (the verified token, the
    unreachable-provider error, one bounded exchange with the provider).
"""
