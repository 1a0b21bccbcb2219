# -*- test-case-name: tests.test_trust_pins -*-
"""
Server certificate pin stores (L{IPinStore}): L{FilePinStore}, one JSON file
shared safely by several processes, and L{MemoryPinStore} for tests.

Both keep one L{Pin} per host and port and validate pins the same way, so
one contract test (C{tests/test_trust_pins.py}) runs against both.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import attrs
from zope.interface import implementer

from gophergem.interfaces import IPinStore
from gophergem.state.documents import LOCK_TIMEOUT, DocumentFile
from gophergem.trust import Pin

__all__ = ["FilePinStore", "MemoryPinStore"]

_KIND = "gophergem-pins"
_NOUN = "certificate pin store"

_TEXT_FIELDS = ("host", "fingerprint", "spki")
_TIME_FIELDS = ("first_seen", "last_seen", "not_before", "expires")


def _key(host: str, port: int) -> str:
    return f"{host}:{port}"


def _encode(pin: object) -> dict[str, Any]:
    """Turn C{pin} into its JSON entry, refusing what could not be read back."""
    if not isinstance(pin, Pin):
        raise TypeError(f"expected a Pin, not {type(pin).__name__}")
    entry = attrs.asdict(pin)
    _check_entry(entry)
    return entry


def _check_entry(entry: Any) -> None:
    if not isinstance(entry, dict):
        raise TypeError("a pin is not an object")
    for name in _TEXT_FIELDS:
        if not isinstance(entry[name], str):
            raise TypeError(f"{name} is not text")
    if not entry["host"]:
        raise ValueError("empty host")
    port = entry["port"]
    if type(port) is not int or not 0 < port < 65536:
        raise ValueError("port is not 1-65535")
    for name in _TIME_FIELDS:
        value = entry[name]
        if type(value) not in (int, float) or not math.isfinite(value):
            raise TypeError(f"{name} is not a finite number")


def _decode(entry: dict[str, Any]) -> Pin:
    return Pin(
        host=entry["host"],
        port=entry["port"],
        fingerprint=entry["fingerprint"],
        spki=entry["spki"],
        **{name: float(entry[name]) for name in _TIME_FIELDS},
    )


def _check_entries(entries: dict[str, Any]) -> None:
    for key, entry in entries.items():
        _check_entry(entry)
        if key != _key(entry["host"], entry["port"]):
            raise ValueError(f"key {key!r} does not match its pin")


def _sorted(pins: list[Pin]) -> list[Pin]:
    return sorted(pins, key=lambda pin: (pin.host, pin.port))


@implementer(IPinStore)
@attrs.define
class FilePinStore:
    """
    Pins in one JSON file, safe for several processes and for crashes.

    Every change is made under a lock and replaces the file whole, so two
    gophergem processes sharing the file see each other's pins at once and
    never lose one; a read takes no lock and creates nothing.  Every method
    raises
    L{CertificateStoreUnavailable<gophergem.errors.CertificateStoreUnavailable>}
    when the file cannot be locked, read or written, or is not a valid pin
    store (which is left as it is; see C{docs/stores.md}).

    @ivar path: The JSON file (C{tofu.json}); its parent directory is created
        with mode 0700 when missing.
    @ivar lock_timeout: Seconds to wait for another process's lock.
    @ivar prepare: Called before the first change creates the store's
        directory (see L{DocumentFile.prepare}).
    """

    path: str | os.PathLike[str]
    lock_timeout: float = LOCK_TIMEOUT
    prepare: Callable[[], None] | None = attrs.field(default=None, kw_only=True)
    _file: DocumentFile = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._file = DocumentFile(
            self.path,
            kind=_KIND,
            noun=_NOUN,
            check=_check_entries,
            lock_timeout=self.lock_timeout,
            prepare=self.prepare,
        )

    def get(self, host: str, port: int) -> Pin | None:
        """Return the pin for C{host}:C{port}, or C{None}."""
        key = _key(host, port)
        return self._file.view(lambda entries: _decode(entries[key]) if key in entries else None)

    def put(self, pin: Pin) -> None:
        """Insert or replace the pin for C{pin.host}:C{pin.port}; durable on return."""
        entry = _encode(pin)
        key = _key(entry["host"], entry["port"])
        self._file.update(lambda entries: entries.__setitem__(key, entry))

    def put_new(self, pin: Pin) -> Pin | None:
        """
        Store C{pin} unless its host and port are pinned already, under one
        lock; return C{None} when stored, else the existing pin, unchanged.
        """
        entry = _encode(pin)
        key = _key(entry["host"], entry["port"])

        def change(entries: dict[str, Any]) -> Pin | None:
            if key in entries:
                return _decode(entries[key])
            entries[key] = entry
            return None

        return self._file.update(change)

    def remove(self, host: str, port: int) -> bool:
        """Forget the pin for C{host}:C{port}; return whether there was one."""
        key = _key(host, port)
        return self._file.update(lambda entries: entries.pop(key, None) is not None)

    def all(self, host: str | None = None) -> list[Pin]:
        """Every pin (for C{host} only, when given), sorted by host then port."""
        return self._file.view(
            lambda entries: _sorted(
                [
                    _decode(entry)
                    for entry in entries.values()
                    if host is None or entry["host"] == host
                ]
            )
        )


@implementer(IPinStore)
@attrs.define
class MemoryPinStore:
    """
    Pins in a dictionary, for tests: the same contract as L{FilePinStore},
    without files.

    @ivar pins: The pins by C{(host, port)}; tests may read it directly.
    """

    pins: dict[tuple[str, int], Pin] = attrs.field(factory=dict)

    def get(self, host: str, port: int) -> Pin | None:
        """Return the pin for C{host}:C{port}, or C{None}."""
        return self.pins.get((host, port))

    def put(self, pin: Pin) -> None:
        """Insert or replace the pin for C{pin.host}:C{pin.port}."""
        _encode(pin)  # the same validation as the file store
        assert isinstance(pin, Pin)
        self.pins[pin.host, pin.port] = pin

    def put_new(self, pin: Pin) -> Pin | None:
        """Store C{pin} unless its host and port are pinned; else return that pin."""
        _encode(pin)
        assert isinstance(pin, Pin)
        existing = self.pins.get((pin.host, pin.port))
        if existing is None:
            self.pins[pin.host, pin.port] = pin
        return existing

    def remove(self, host: str, port: int) -> bool:
        """Forget the pin for C{host}:C{port}; return whether there was one."""
        return self.pins.pop((host, port), None) is not None

    def all(self, host: str | None = None) -> list[Pin]:
        """Every pin (for C{host} only, when given), sorted by host then port."""
        return _sorted([pin for pin in self.pins.values() if host is None or pin.host == host])
