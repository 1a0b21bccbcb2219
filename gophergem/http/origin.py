# -*- test-case-name: tests.test_http_origin -*-
"""
DNS-rebinding protection for every resource of the site: the C{Host} and
C{Origin} values accepted (L{transport_security}, the SDK's own settings),
and the same check for the resources the SDK does not serve
(L{foreign_request}).
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp.server.transport_security import TransportSecuritySettings
from twisted.web import server

__all__ = ["foreign_request", "transport_security"]

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def transport_security(
    port: int | None = None, allowed_hosts: Iterable[str] = ()
) -> TransportSecuritySettings:
    """
    DNS-rebinding protection: the C{Host} and C{Origin} values accepted.

    Loopback names (C{127.0.0.1}, C{localhost}, C{[::1]}) are always accepted,
    on C{port} when it is given and on any port otherwise.  Each name of
    C{allowed_hosts} (a host name or address, optionally with C{:port}) is
    accepted as well, on any port unless it names one; browsers may then send
    it as an C{http://} or C{https://} origin.
    """
    suffix = f":{port}" if port else ":*"
    hosts = [name + suffix for name in LOOPBACK_HOSTS]
    origins = [f"http://{name}{suffix}" for name in LOOPBACK_HOSTS]
    if not port:
        # No fixed port (a Unix socket, or port 0): a bare loopback name is
        # what curl --unix-socket and most clients send there.
        hosts.extend(LOOPBACK_HOSTS)
        origins.extend(f"http://{name}" for name in LOOPBACK_HOSTS)
    for name in allowed_hosts:
        with_port = [name] if _has_port(name) else [name, f"{name}:*"]
        hosts.extend(with_port)
        origins.extend(f"{scheme}://{h}" for h in with_port for scheme in ("http", "https"))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def _has_port(name: str) -> bool:
    tail = name.rpartition("]")[2] if name.startswith("[") else name
    return ":" in tail


def _matches(value: str, allowed: Iterable[str]) -> bool:
    """Whether C{value} is one of C{allowed}, where C{name:*} stands for any port."""
    return any(
        value == pattern or (pattern.endswith(":*") and value.startswith(pattern[:-1]))
        for pattern in allowed
    )


def foreign_request(
    request: server.Request, security: TransportSecuritySettings
) -> tuple[int, str] | None:
    """
    Why C{request} must be refused under C{security}, if it must.

    The same rules the SDK applies on the MCP endpoint, for the other
    resources of the site: a C{Host} that is not accepted gets 421, a
    browser C{Origin} that is not accepted gets 403.

    @return: C{None} when the request may be served; otherwise the status
        and a short reason.
    """
    if not security.enable_dns_rebinding_protection:
        return None
    host = (request.getHeader(b"Host") or b"").decode("latin-1")
    if not host or not _matches(host, security.allowed_hosts):
        return 421, "Invalid Host header."
    origin = (request.getHeader(b"Origin") or b"").decode("latin-1")
    if origin and not _matches(origin, security.allowed_origins):
        return 403, "Invalid Origin header."
    return None
