# -*- test-case-name: tests.test_testing -*-
"""
Every zope Interface of gophergem: the seams where a real provider and a
memory provider (in L{gophergem.testing}) can be swapped.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address

from twisted.internet.defer import Deferred
from zope.interface import Attribute, Interface

__all__ = ["IAddressPolicy", "IResolver", "IResponseCache"]


class IResolver(Interface):
    """Turns a host name into the addresses it names."""

    def resolve(host: str) -> Deferred[list[IPv4Address | IPv6Address]]:
        """
        Look C{host} up.

        @return: A Deferred firing with every address found (never empty),
            or failing with L{gophergem.errors.DNSError}.
        """


class IAddressPolicy(Interface):
    """Decides which resolved addresses may be dialled (SSRF protection)."""

    def permits(address: IPv4Address | IPv6Address) -> bool:
        """Return whether a connection to C{address} is allowed."""


class IResponseCache(Interface):
    """A bounded store of parsed responses, keyed by normalised URL."""

    ttl = Attribute("Seconds an entry stays fresh; 0 disables the cache.")

    def get(key: str) -> tuple[object, float] | None:
        """Return C{(value, stored_at)} for a fresh entry, or C{None}."""

    def put(key: str, value: object) -> float:
        """Store C{value}; return the time it was stored at."""

    def discard(key: str) -> None:
        """Forget C{key}, if it is stored."""
