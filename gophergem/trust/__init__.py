# -*- test-case-name: tests.test_state_pins,tests.test_state_identities -*-
"""
Trust stores for Gemini: server certificate pins (trust on first use) and
client identities.

The values live here, with the rules every store applies to them
(L{gophergem.trust.pins}, L{gophergem.trust.identities}); the stores (files
safe for several processes, memory for tests, PostgreSQL for a team) live in
L{gophergem.state}, and one contract test per interface checks them all.
"""

from __future__ import annotations

import attrs

__all__ = ["Identity", "Pin"]


@attrs.frozen(kw_only=True)
class Pin:
    """
    The certificate a host:port presented when it was first trusted.

    @ivar fingerprint: C{sha256:<hex>} of the certificate (DER), the value
        users compare with operators.
    @ivar spki: C{sha256:<hex>} of the certificate's public key (SPKI DER);
        a reissue with the same key keeps it.  C{""} when unknown (a pin
        imported from gopher-mcp, which hashes only the whole certificate):
        the first connection whose certificate matches C{fingerprint} fills
        it in.
    @ivar first_seen: When this host was first pinned (POSIX seconds).
    @ivar last_seen: When the pin last matched a connection.
    @ivar not_before: The pinned certificate's start of validity; C{0} when
        unknown (imported), like C{spki}.
    @ivar expires: Its end of validity (POSIX seconds); C{0} when unknown.
    """

    host: str
    port: int
    fingerprint: str
    spki: str
    first_seen: float
    last_seen: float
    not_before: float
    expires: float


@attrs.frozen(kw_only=True)
class Identity:
    """
    A client certificate and its scope: one host, one port, one path prefix.

    @ivar path: The scope's path prefix, always ending in C{/}; C{/} covers
        the whole capsule.
    @ivar fingerprint: C{sha256:<hex>} of the certificate (DER).
    @ivar not_before: Start of validity (POSIX seconds).
    @ivar not_after: End of validity (POSIX seconds).
    """

    host: str
    port: int
    path: str
    fingerprint: str
    not_before: float
    not_after: float

    def covers(self, host: str, port: int, path: str) -> bool:
        """Whether a request for C{path} on C{host}:C{port} falls in this scope."""
        if (host, port) != (self.host, self.port):
            return False
        candidate = path if path.endswith("/") else path + "/"
        return candidate.startswith(self.path)
