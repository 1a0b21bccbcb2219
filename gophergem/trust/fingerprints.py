# -*- test-case-name: tests.test_trust_decision -*-
"""
SHA-256 fingerprints as gophergem writes them (C{sha256:<lowercase hex>}):
computing one from DER bytes, and reading one as users type it.
"""

from __future__ import annotations

import hashlib

__all__ = ["normalise_fingerprint", "sha256_fingerprint"]


def sha256_fingerprint(der: bytes) -> str:
    """C{sha256:<lowercase hex>} of C{der} (a certificate or a public key, DER)."""
    return "sha256:" + hashlib.sha256(der).hexdigest()


def normalise_fingerprint(text: str) -> str | None:
    """
    Read a SHA-256 fingerprint as users write it: hex with or without colons,
    any case, with an optional C{sha256:} prefix.

    @return: C{sha256:<lowercase hex>}, or C{None} if C{text} is not one.
    """
    if not isinstance(text, str):
        return None
    value = text.strip()
    if value.lower().startswith("sha256:"):
        value = value[len("sha256:") :]
    value = value.replace(":", "").replace(" ", "").lower()
    if len(value) != 64 or any(c not in "0123456789abcdef" for c in value):
        return None
    return "sha256:" + value
