"""
Tests for L{gophergem.policy.addresses}: the pure SSRF address rules.

These are plain function calls on address values; nothing is resolved or dialled.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv6Address, ip_address

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gophergem.interfaces import IAddressPolicy
from gophergem.policy.addresses import is_public, parse_ip_literal
from gophergem.policy.targets import AddressPolicy

# --- parse_ip_literal -----------------------------------------------------------------

LITERALS = [
    # (spelling, address)
    ("127.0.0.1", "127.0.0.1"),
    ("2130706433", "127.0.0.1"),
    ("0177.0.0.1", "127.0.0.1"),
    ("0177.0.0.01", "127.0.0.1"),
    ("0x7f000001", "127.0.0.1"),
    ("0X7F000001", "127.0.0.1"),
    ("0x7f.0.0.1", "127.0.0.1"),
    ("0x7f.0x0.0x0.0x1", "127.0.0.1"),
    ("017700000001", "127.0.0.1"),
    ("127.1", "127.0.0.1"),
    ("127.0.1", "127.0.0.1"),
    ("10.1", "10.0.0.1"),
    ("0x7f.1", "127.0.0.1"),
    ("1.256", "1.0.1.0"),
    ("1.2.65535", "1.2.255.255"),
    ("1.16777215", "1.255.255.255"),
    ("4294967295", "255.255.255.255"),
    ("0", "0.0.0.0"),
    ("127.0.0.1.", "127.0.0.1"),
    ("2130706433.", "127.0.0.1"),
    (" 127.0.0.1 ", "127.0.0.1"),
    ("169.254.169.254", "169.254.169.254"),
    ("0xa9fea9fe", "169.254.169.254"),
    ("::1", "::1"),
    ("[::1]", "::1"),
    ("[2001:db8::1]", "2001:db8::1"),
    ("fe80::1%eth0", "fe80::1"),
    ("[fe80::1%eth0]", "fe80::1"),
    ("[fe80::1%25eth0]", "fe80::1"),
    ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
    ("[::ffff:7f00:1]", "::ffff:127.0.0.1"),
]


@pytest.mark.parametrize(("spelling", "address"), LITERALS, ids=[s for s, _ in LITERALS])
def test_parse_ip_literal_spellings(spelling: str, address: str) -> None:
    """Every inet_aton spelling of IPv4 and every bracketed or zoned IPv6 form is read."""
    assert parse_ip_literal(spelling) == ip_address(address)


NOT_LITERALS = [
    "example.com",
    "localhost",
    "1.2.3.4.5",
    "256.1.1.1",
    "1.256.1.1",
    "1.1.256.1",
    "1.2.3.256",
    "1.2.65536",
    "1.16777216",
    "4294967296",
    "08.0.0.1",
    "0x7g.0.0.1",
    "127.0.0.1..",
    ".127.0.0.1",
    "127..0.1",
    "",
    "1e3",
    "-1",
    "+1",
    "0x7f.example",
    "\u0661\u0662\u0667.0.0.1",
    "[::1",
    "::g",
    "[]",
    "1.2.3.4:80",
]


@pytest.mark.parametrize("host", NOT_LITERALS, ids=repr)
def test_parse_ip_literal_host_names(host: str) -> None:
    """Host names and spellings inet_aton refuses are not IP literals."""
    assert parse_ip_literal(host) is None


@pytest.mark.parametrize("host", ["0x7_f.0.0.1", "01_77.0.0.1", "0x8_8.8.8.8"], ids=repr)
def test_parse_ip_literal_refuses_underscores(host: str) -> None:
    """A part with an underscore (a legal host-name character) is not an IPv4 literal part."""
    assert parse_ip_literal(host) is None


@settings(max_examples=300, deadline=None)
@given(host=st.text(max_size=40) | st.text(alphabet="0123456789abcdefxX.:[]%", max_size=30))
def test_parse_ip_literal_never_raises(host: str) -> None:
    """parse_ip_literal returns an address or None for any text."""
    result = parse_ip_literal(host)
    assert result is None or isinstance(result, IPv4Address | IPv6Address)


@settings(max_examples=300, deadline=None)
@given(value=st.integers(min_value=0, max_value=2**32 - 1))
def test_parse_ip_literal_ipv4_forms_agree(value: int) -> None:
    """Dotted-quad, decimal, hex and octal spellings of an IPv4 address all parse to it."""
    address = IPv4Address(value)
    octal = ".".join(f"0{int(p):o}" for p in str(address).split("."))
    for spelling in (str(address), str(value), hex(value), f"0{value:o}", octal):
        assert parse_ip_literal(spelling) == address, spelling


@settings(max_examples=200, deadline=None)
@given(value=st.integers(min_value=0, max_value=2**128 - 1))
def test_parse_ip_literal_ipv6_bracketed(value: int) -> None:
    """Any IPv6 address parses back to itself, with or without brackets."""
    address = IPv6Address(value)
    assert parse_ip_literal(str(address)) == address
    assert parse_ip_literal(f"[{address}]") == address


# --- is_public --------------------------------------------------------------------------

REFUSED = [
    ("loopback v4", "127.0.0.1"),
    ("loopback v4 high", "127.255.255.254"),
    ("loopback v6", "::1"),
    ("RFC1918 10/8", "10.0.0.1"),
    ("RFC1918 172.16/12", "172.16.0.1"),
    ("RFC1918 172.31", "172.31.255.255"),
    ("RFC1918 192.168/16", "192.168.1.1"),
    ("link-local metadata", "169.254.169.254"),
    ("link-local v4", "169.254.0.1"),
    ("unspecified v4", "0.0.0.0"),
    ("this network", "0.1.2.3"),
    ("CGNAT", "100.64.0.1"),
    ("CGNAT high", "100.127.255.254"),
    ("IETF protocol assignments", "192.0.0.1"),
    ("TEST-NET-1", "192.0.2.1"),
    ("benchmarking", "198.18.0.1"),
    ("benchmarking high", "198.19.255.254"),
    ("TEST-NET-2", "198.51.100.1"),
    ("TEST-NET-3", "203.0.113.1"),
    ("multicast v4", "224.0.0.1"),
    ("multicast v4 high", "239.255.255.250"),
    ("reserved class E", "240.0.0.1"),
    ("broadcast", "255.255.255.255"),
    ("unspecified v6", "::"),
    ("ULA fc00::/7", "fc00::1"),
    ("ULA fd00", "fd00::1"),
    ("link-local v6", "fe80::1"),
    ("site-local v6", "fec0::1"),
    ("multicast v6", "ff02::1"),
    ("multicast v6 global scope", "ff0e::1"),
    ("IPv4-mapped loopback", "::ffff:127.0.0.1"),
    ("IPv4-mapped private", "::ffff:10.0.0.1"),
    ("IPv4-mapped metadata", "::ffff:169.254.169.254"),
    ("IPv4-compatible loopback", "::127.0.0.1"),
    ("IPv4-compatible private", "::10.0.0.1"),
    ("NAT64 metadata", "64:ff9b::a9fe:a9fe"),
    ("NAT64 loopback", "64:ff9b::7f00:1"),
    ("local-use NAT64 private", "64:ff9b:1::a00:1"),
    ("6to4 loopback", "2002:7f00:1::"),
    ("6to4 private", "2002:a00:1::1"),
    ("documentation v6", "2001:db8::1"),
    ("IPv4-translated (SIIT) loopback", "::ffff:0:7f00:1"),
    ("discard-only", "100::1"),
]


@pytest.mark.parametrize(("name", "address"), REFUSED, ids=[n for n, _ in REFUSED])
def test_is_public_refuses(name: str, address: str) -> None:
    """Loopback, private, link-local, reserved and wrapped forms of them are not public."""
    assert is_public(ip_address(address)) is False


ACCEPTED = [
    ("Cloudflare v4", "1.1.1.1"),
    ("Google v4", "8.8.8.8"),
    ("Quad9 v4", "9.9.9.9"),
    ("just outside CGNAT", "100.128.0.1"),
    ("just outside 172.16/12", "172.32.0.1"),
    ("Cloudflare v6", "2606:4700:4700::1111"),
    ("Google v6", "2001:4860:4860::8888"),
    ("NAT64 of 8.8.8.8", "64:ff9b::808:808"),
    ("IPv4-mapped public", "::ffff:8.8.8.8"),
    ("6to4 of public", "2002:808:808::1"),
]


@pytest.mark.parametrize(("name", "address"), ACCEPTED, ids=[n for n, _ in ACCEPTED])
def test_is_public_accepts(name: str, address: str) -> None:
    """Globally routable unicast addresses, and wrapped forms of them, are public."""
    assert is_public(ip_address(address)) is True


def test_is_public_refuses_scoped_v6() -> None:
    """An IPv6 address carrying a zone is never public, even inside a global prefix."""
    assert is_public(IPv6Address("2606:4700:4700::1111%eth0")) is False


def test_is_public_on_parsed_spellings() -> None:
    """Every odd spelling of loopback, once parsed, is refused."""
    for spelling in ("2130706433", "0177.0.0.1", "0x7f000001", "0x7f.0.0.1", "127.1", "[::1]"):
        address = parse_ip_literal(spelling)
        assert address is not None
        assert is_public(address) is False, spelling


_V4 = st.integers(min_value=0, max_value=2**32 - 1).map(IPv4Address)


@settings(max_examples=300, deadline=None)
@given(v4=_V4)
def test_wrapped_ipv4_judged_as_inner(v4: IPv4Address) -> None:
    """IPv4-mapped, NAT64 and 6to4 forms get the same verdict as the IPv4 address inside."""
    inner = is_public(v4)
    mapped = IPv6Address(f"::ffff:{v4}")
    nat64 = IPv6Address(int(IPv6Address("64:ff9b::")) | int(v4))
    six_to_four = IPv6Address((0x2002 << 112) | (int(v4) << 80) | 1)
    assert is_public(mapped) is inner
    assert is_public(nat64) is inner
    assert is_public(six_to_four) is inner


@settings(max_examples=300, deadline=None)
@given(address=_V4 | st.integers(min_value=0, max_value=2**128 - 1).map(IPv6Address))
def test_is_public_never_raises(address: IPv4Address | IPv6Address) -> None:
    """is_public answers a bool for every address."""
    assert isinstance(is_public(address), bool)


# --- AddressPolicy --------------------------------------------------------------------------

EVERY_ADDRESS = [a for _, a in REFUSED] + [a for _, a in ACCEPTED]


@pytest.mark.parametrize("address", EVERY_ADDRESS)
def test_allow_local_permits_everything(address: str) -> None:
    """AddressPolicy(allow_local=True) permits every address, refused ones included."""
    assert AddressPolicy(allow_local=True).permits(ip_address(address)) is True


@pytest.mark.parametrize("address", EVERY_ADDRESS)
def test_default_policy_is_is_public(address: str) -> None:
    """The default AddressPolicy permits exactly the public addresses."""
    parsed = ip_address(address)
    assert AddressPolicy().permits(parsed) is is_public(parsed)


def test_address_policy_provides_interface() -> None:
    """AddressPolicy provides IAddressPolicy."""
    assert IAddressPolicy.providedBy(AddressPolicy())
