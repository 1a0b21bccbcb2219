# -*- test-case-name: tests.test_state_keys -*-
"""
Reading the secret keys a team of replicas shares from files.

Replicas behind one load balancer must agree on the keys that seal the
2026-07-28 era's request state (a retry may reach another replica than the
one that asked).  The key file holds one key per line, the first sealing
and every one unsealing, so a key is rotated by adding the new one first
and dropping the old one a TTL later.  Blank lines and lines starting with
C{#} are ignored; a key is at least 32 characters of secret randomness
(C{head -c 32 /dev/urandom | base64}).
"""

from __future__ import annotations

from gophergem.errors import InvalidRequest

__all__ = ["MIN_KEY_CHARS", "read_key_ring"]

MIN_KEY_CHARS = 32
"""The shortest key accepted, in characters."""


def read_key_ring(path: str) -> list[str]:
    """
    The keys in the file at C{path}, in order.

    @raise InvalidRequest: When the file cannot be read, holds no key, or a
        key is shorter than L{MIN_KEY_CHARS}; the message names the file and
        the line, never a key.
    """
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or "not UTF-8 text"
        raise InvalidRequest(message=f"cannot read the key file {path}: {reason}") from None
    keys: list[str] = []
    for number, line in enumerate(lines, 1):
        key = line.strip()
        if not key or key.startswith("#"):
            continue
        if len(key) < MIN_KEY_CHARS:
            raise InvalidRequest(
                message=f"{path}, line {number}: a key needs at least {MIN_KEY_CHARS} characters"
            )
        if key in keys:
            raise InvalidRequest(message=f"{path}, line {number}: the same key twice")
        keys.append(key)
    if not keys:
        raise InvalidRequest(message=f"the key file {path} holds no key")
    return keys
