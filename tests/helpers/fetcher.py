"""
Shared helpers for the fetcher tests: a Gopher host and its menu, the
fingerprint of a certificate.
"""

from __future__ import annotations

import hashlib
from typing import Any

from cryptography.hazmat.primitives.serialization import Encoding

HOST_IP = "192.0.2.10"  # never dialled: the memory reactor only records it

MENU = (
    b"iWelcome\tfake\t(NULL)\t0\r\n"
    b"1Sub menu\t/sub\tg.example\t70\r\n"
    b"0About\t/about.txt\tg.example\t70\r\n"
    b"9Latin\t/caf\xe9.bin\tg.example\t70\r\n"
    b"7Search\t/search\tg.example\t70\r\n"
    b".\r\n"
)


def fingerprint_of(pem_or_x509: Any) -> str:
    if isinstance(pem_or_x509, bytes):
        from cryptography import x509

        der = x509.load_pem_x509_certificate(pem_or_x509).public_bytes(Encoding.DER)
    else:
        der = pem_or_x509.to_cryptography().public_bytes(Encoding.DER)
    return "sha256:" + hashlib.sha256(der).hexdigest()


# Every spelling of a non-public address: refused with no lookup and no connection.
REFUSED_LITERALS = [
    "127.0.0.1", "127.1", "127.0.1", "2130706433", "0x7f000001", "0x7f.0.0.1", "0177.0.0.1",
    "0177.0.0.01", "017700000001", "127.255.255.254", "0.0.0.0", "0", "10.0.0.1", "10.1",
    "167772161", "172.16.0.1", "172.31.255.255", "192.168.1.1", "0xc0a80101", "169.254.169.254",
    "2852039166", "100.64.0.1", "192.0.0.1", "192.0.2.1", "198.18.0.1", "198.51.100.7",
    "203.0.113.9", "224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
    "[::1]", "[::]", "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::ffff:10.0.0.1]",
    "[::ffff:169.254.169.254]", "[64:ff9b::a9fe:a9fe]", "[64:ff9b::7f00:1]", "[2002:7f00:1::]",
    "[2002:a9fe:a9fe::]", "[fc00::1]", "[fd12:3456::1]", "[fe80::1]", "[fe80::1%25eth0]",
    "[ff02::1]", "[2001:db8::1]", "[::127.0.0.1]",
]  # fmt: skip

# Names whose (fake) answers are refused, alone or mixed with a public address.
REFUSED_ANSWERS = {
    "metadata.example": ["169.254.169.254"],
    "lan.example": ["192.168.0.10"],
    "mixed.example": ["93.184.216.34", "10.0.0.7"],
    "mixed6.example": ["2606:4700:4700::1111", "fd00::7"],
    "mapped.example": ["::ffff:192.168.0.1"],
}
