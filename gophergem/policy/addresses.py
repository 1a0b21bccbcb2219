# -*- test-case-name: tests.test_policy_addresses -*-
"""
Which IP addresses a fetch may dial: the pure SSRF rules.

A model can be talked into fetching anything, so by default only globally
routable unicast addresses are permitted.  L{parse_ip_literal} reads every
spelling of an address a URL can carry (decimal, octal, hex and short-form
IPv4; bracketed, zone-scoped IPv6) so that no spelling slips past as a
"host name"; L{is_public} decides, looking through IPv4-mapped, -compatible,
6to4 and NAT64 forms at the IPv4 address inside.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network, ip_address

__all__ = ["IPAddress", "is_public", "parse_ip_literal"]

#: An IPv4 or IPv6 address: what a resolver finds and the policy judges.
IPAddress = IPv4Address | IPv6Address

_EXTRA_V4_BLOCKS = tuple(
    IPv4Network(net)
    for net in (
        "0.0.0.0/8",  # "this network"
        "100.64.0.0/10",  # carrier-grade NAT
        "192.0.0.0/24",  # IETF protocol assignments
        "192.0.2.0/24",  # documentation
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation
        "203.0.113.0/24",  # documentation
        "240.0.0.0/4",  # reserved, and the broadcast address
    )
)
_NAT64 = (IPv6Network("64:ff9b::/96"), IPv6Network("64:ff9b:1::/48"))
_SIX_TO_FOUR = IPv6Network("2002::/16")
_V4_COMPATIBLE = IPv6Network("::/96")


_V4_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*")


def _parse_v4_part(part: str) -> int | None:
    if not part or not _V4_PART.fullmatch(part):
        return None
    try:
        if part.lower().startswith("0x"):
            return int(part[2:], 16) if part[2:] else 0
        if len(part) > 1 and part.startswith("0"):
            return int(part, 8)
        if part.isdigit() and part.isascii():
            return int(part)
    except ValueError:
        return None
    return None


def _parse_inet_aton(host: str) -> IPv4Address | None:
    """Read the forms C{inet_aton} accepts: a, a.b, a.b.c, a.b.c.d in any base."""
    parts = host.split(".")
    if host.endswith(".") and len(parts) > 1:
        parts.pop()
    if not 1 <= len(parts) <= 4:
        return None
    values = [_parse_v4_part(p) for p in parts]
    if any(v is None for v in values):
        return None
    numbers = [v for v in values if v is not None]
    *head, last = numbers
    if any(v > 255 for v in head) or last >= 256 ** (4 - len(head)):
        return None
    value = 0
    for v in head:
        value = value * 256 + v
    value = value * 256 ** (4 - len(head)) + last
    return IPv4Address(value)


def parse_ip_literal(host: str) -> IPAddress | None:
    """
    Return the address C{host} spells, or C{None} when it is a host name.

    Accepts brackets and a zone (C{fe80::1%eth0}) on IPv6, and every
    C{inet_aton} spelling of IPv4 (C{2130706433}, C{0x7f.1}, C{0177.0.0.1}).
    """
    text = host.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    if ":" in text:
        address, _, _zone = text.partition("%")
        try:
            parsed = ip_address(address)
        except ValueError:
            return None
        return parsed
    return _parse_inet_aton(text)


def _embedded_v4(address: IPv6Address) -> IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if any(address in net for net in _NAT64):
        return IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _V4_COMPATIBLE and int(address) > 1:
        return IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def is_public(address: IPAddress) -> bool:
    """
    Return whether C{address} is a globally routable unicast address.

    Refuses loopback, private (RFC 1918, ULA), link-local (169.254/16, which
    holds cloud metadata endpoints, and fe80::/10), unspecified, multicast,
    broadcast, reserved, CGNAT, documentation and benchmarking ranges, and
    any IPv6 form wrapping a refused IPv4 address.
    """
    if isinstance(address, IPv6Address):
        if address.scope_id:
            return False
        inner = _embedded_v4(address)
        if inner is not None:
            return is_public(inner)
        return (
            address.is_global
            and not address.is_multicast
            and not address.is_reserved
            and not address.is_site_local
            and not address.is_link_local
        )
    if any(address in net for net in _EXTRA_V4_BLOCKS):
        return False
    return address.is_global and not address.is_multicast and not address.is_reserved
