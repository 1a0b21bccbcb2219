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
