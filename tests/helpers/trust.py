"""
Shared helpers for the trust tests: certificates made at a fixed time,
pins, a lock held on a store file, a second process on the same store.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from cryptography import x509

from gophergem.testing import EPOCH
from gophergem.trust import Pin

NOW = EPOCH

DAY = 86400.0

HOST, PORT = "capsule.example", 1965

FP_A, FP_B = "sha256:" + "a" * 64, "sha256:" + "b" * 64

KEY_1, KEY_2 = "sha256:" + "1" * 64, "sha256:" + "2" * 64


def pinned(
    fingerprint: str = FP_A,
    spki: str = KEY_1,
    *,
    first_seen: float = NOW - 30 * DAY,
    last_seen: float = NOW - DAY,
    expires: float = NOW + 300 * DAY,
) -> Pin:
    return Pin(
        host=HOST,
        port=PORT,
        fingerprint=fingerprint,
        spki=spki,
        first_seen=first_seen,
        last_seen=last_seen,
        not_before=NOW - 60 * DAY,
        expires=expires,
    )


def _cert(pem: bytes) -> x509.Certificate:
    return x509.load_pem_x509_certificate(pem)


SHORT_WAIT = 0.2  # lock timeout for tests that expect a timeout

_HOLDER = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX if sys.argv[2] == "exclusive" else fcntl.LOCK_SH)
print("held", flush=True)
sys.stdin.read()
"""


@contextlib.contextmanager
def hold_lock(lock_path: Path, mode: str = "exclusive") -> Iterator[None]:
    """Hold C{flock} on C{lock_path} from a child process for the block."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(lock_path), mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "held"
        yield
    finally:
        child.stdin.close()
        child.wait(10)
        child.stdout.close()


class LogEvents(list[dict[str, Any]]):
    def text(self) -> str:
        return "\n".join(json.dumps(e, default=str) for e in self)


def go(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


FP = "sha256:" + "ab" * 32


def a_pin(fingerprint: str = FP, port: int = 1965, host: str = "capsule.example") -> Pin:
    return Pin(
        host=host,
        port=port,
        fingerprint=fingerprint,
        spki="sha256:" + "ee" * 32,
        first_seen=EPOCH - 100,
        last_seen=EPOCH - 10,
        not_before=EPOCH - 1000,
        expires=EPOCH + 1000,
    )
