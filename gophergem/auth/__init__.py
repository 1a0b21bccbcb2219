# -*- test-case-name: tests.test_auth_tokens -*-
"""
Who may use the HTTP endpoint, and who is calling: credentials, the stores
that hold them and the order they are checked in, free of MCP and of
C{twisted.web}'s server (the SDK-facing verifier and the bearer guard are
L{gophergem.http.guard}).

  - L{gophergem.auth.tokens}: the small-team token file (one hashed bearer
    token per principal) and the C{gophergem token} operations;
  - L{gophergem.auth.jwt}: JWT access tokens checked against an issuer's keys;
  - L{gophergem.auth.introspection}: opaque tokens checked at an RFC 7662
    endpoint;
  - L{gophergem.auth.idp}: what those two share (the verified token, the
    unreachable-provider error, one bounded exchange with the provider);
  - L{gophergem.auth.verifiers}: the token file, JWTs and introspection
    together, and the order they are tried in;
  - L{gophergem.auth.principals}: the principal a token stands for, and
    each principal's view of the fetcher and follower;
  - L{gophergem.auth.reload}: the daemon's service that reads the token
    file again on C{SIGHUP}.
"""
