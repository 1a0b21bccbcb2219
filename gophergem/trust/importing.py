# -*- test-case-name: tests.test_trust_importing -*-
"""
Import server certificate pins from gopher-mcp, so a user who switches does
not re-arm blind trust on first use (C{gophergem trust import PATH}).

gopher-mcp keeps one JSON object keyed C{"host:port"}; each value is its
C{TOFUEntry}::

    {"example.org:1965": {"host": "example.org", "port": 1965,
                          "fingerprint": "<sha256 hex of the DER certificate>",
                          "first_seen": 1700000000.0, "last_seen": 1700000100.0,
                          "expires": 1731536000.0}}

(C{expires} may be C{null}; old or hand-edited files may spell the
fingerprint C{sha256:AB:CD:...}.)  gopher-mcp pins the whole certificate and
never records its public key, so an imported L{Pin} has C{spki=""} and,
unless the file says otherwise, C{not_before=0} and C{expires=0} (unknown):
the first connection whose certificate matches the imported fingerprint
fills them in.  An existing pin is never replaced.
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

import attrs
from twisted.internet.defer import Deferred

from gophergem._defer import settle
from gophergem.errors import InvalidRequest
from gophergem.interfaces import IPinStore
from gophergem.trust import Pin
from gophergem.url import parse_host

__all__ = ["ImportReport", "SkippedPin", "import_gopher_mcp_pins"]

_HEX64 = re.compile(r"[0-9a-f]{64}")
_LIMIT = 16 * 1024 * 1024  # far beyond any real trust store


@attrs.frozen(kw_only=True)
class SkippedPin:
    """An entry that was understood but deliberately not imported, and why."""

    host: str
    port: int
    reason: str


@attrs.frozen(kw_only=True)
class ImportReport:
    """
    What an import did.

    @ivar imported: The pins added to the store.
    @ivar skipped: Entries left out on purpose (already pinned).
    @ivar problems: Entries that could not be understood, one sentence each.
    """

    imported: tuple[Pin, ...] = ()
    skipped: tuple[SkippedPin, ...] = ()
    problems: tuple[str, ...] = ()


class _BadEntry(ValueError):
    pass


def _fingerprint(value: Any) -> str:
    if not isinstance(value, str):
        raise _BadEntry("its fingerprint is not text")
    text = value.strip().lower()
    text = text.removeprefix("sha256:")
    text = re.sub(r"[\s:]", "", text)
    if not _HEX64.fullmatch(text):
        raise _BadEntry("its fingerprint is not a SHA-256 digest")
    return "sha256:" + text


def _time(entry: dict[str, Any], name: str, default: float) -> float:
    value = entry.get(name)
    if value is None:
        return default
    if type(value) not in (int, float) or not math.isfinite(value):
        raise _BadEntry(f"its {name} is not a number")
    return float(value)


def _pin(key: str, entry: Any, now: float) -> Pin:
    if not isinstance(entry, dict):
        raise _BadEntry("it is not an object")
    host, port = entry.get("host"), entry.get("port")
    if host is None or port is None:
        # Older entries may lack the fields; the key is "host:port".
        key_host, _, key_port = key.rpartition(":")
        host = key_host.strip("[]") if host is None else host
        port = int(key_port) if port is None and key_port.isdigit() else port
    if not isinstance(host, str) or not host:
        raise _BadEntry("it has no host")
    if type(port) is not int or not 0 < port < 65536:
        raise _BadEntry("its port is not 1-65535")
    try:
        host, _ = parse_host(f"[{host}]" if ":" in host else host, port, "gemini")
    except InvalidRequest:
        raise _BadEntry("its host is not a host name") from None
    first_seen = _time(entry, "first_seen", now)
    return Pin(
        host=host,
        port=port,
        fingerprint=_fingerprint(entry.get("fingerprint")),
        spki="",
        first_seen=first_seen,
        last_seen=_time(entry, "last_seen", first_seen),
        not_before=_time(entry, "not_before", 0.0),
        expires=_time(entry, "expires", 0.0),
    )


def _read(path: str | os.PathLike[str]) -> dict[str, Any]:
    try:
        with open(path, "rb") as stream:
            raw = stream.read(_LIMIT + 1)
    except OSError as e:
        reason = os.strerror(e.errno) if e.errno else "unreadable"
        raise InvalidRequest(message=f"The gopher-mcp pin file could not be read: {reason}.") from e
    if len(raw) > _LIMIT:
        raise InvalidRequest(message="The file is too large to be a gopher-mcp pin file.")
    try:
        document = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InvalidRequest(message="The file is not UTF-8 text, so not gopher-mcp's.") from None
    except ValueError as e:
        raise InvalidRequest(message=f"The file is not valid JSON ({e}).") from None
    if not isinstance(document, dict):
        raise InvalidRequest(message="The file is JSON but not a gopher-mcp pin file.")
    if isinstance(document.get("format"), str) and "entries" in document:
        raise InvalidRequest(
            message="The file is a gophergem store, not a gopher-mcp one; point "
            "GEMINI_TOFU_STORAGE_PATH at it instead of importing it."
        )
    return document


def import_gopher_mcp_pins(
    path: str | os.PathLike[str], store: IPinStore, now: float
) -> Deferred[ImportReport]:
    """
    Add the pins of gopher-mcp's C{tofu.json} at C{path} to C{store}.

    The whole file is read and checked first, at once: a file that cannot
    be read, is not JSON, or holds no usable entry at all raises and imports
    nothing.  Otherwise each usable entry is imported unless C{store}
    already has a pin for its host and port (a different fingerprint is
    reported as skipped; the existing pin stays).  Entries that cannot be
    understood are listed in L{ImportReport.problems}.  The store may answer
    later (PostgreSQL): the report comes in a Deferred.

    @param now: The time to record for entries without C{first_seen}.
    @raise InvalidRequest: For a bad file; nothing was imported.
    @return: A Deferred firing with the report, or failing with the store's
        error (L{gophergem.errors.CertificateStoreUnavailable},
        L{gophergem.errors.StateUnavailable}); the pins imported before it
        failed are kept.
    """
    document = _read(path)
    pins: list[Pin] = []
    problems: list[str] = []
    for key, entry in document.items():
        try:
            pins.append(_pin(str(key), entry, now))
        except (_BadEntry, ValueError) as e:
            problems.append(f"Entry {str(key)[:100]!a} was not imported: {e}.")
    if problems and not pins:
        raise InvalidRequest(
            message=f"None of the {len(problems)} entries of the file is a gopher-mcp "
            "pin; nothing was imported.",
        )
    return Deferred.fromCoroutine(_store_all(pins, tuple(problems), store))


async def _store_all(pins: list[Pin], problems: tuple[str, ...], store: IPinStore) -> ImportReport:
    imported: list[Pin] = []
    skipped: list[SkippedPin] = []
    for pin in pins:
        # put_new never replaces a pin, even one another process made meanwhile.
        existing = await settle(store.put_new(pin))
        if existing is None:
            imported.append(pin)
            continue
        if not isinstance(existing, Pin):  # pragma: no cover - a broken store
            raise TypeError(f"the pin store returned {type(existing).__name__}")
        if existing.fingerprint == pin.fingerprint:
            reason = "already pinned to the same certificate"
        else:
            reason = (
                f"already pinned to another certificate ({existing.fingerprint}); "
                f"the file has {pin.fingerprint}, and the existing pin was kept"
            )
        skipped.append(SkippedPin(host=pin.host, port=pin.port, reason=reason))
    return ImportReport(imported=tuple(imported), skipped=tuple(skipped), problems=problems)
