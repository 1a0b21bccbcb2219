# -*- test-case-name: tests.test_state_pins -*-
"""
L{FilePinStore}: server certificate pins (L{IPinStore}) in one JSON file
shared safely by several processes.

It keeps one L{Pin} per host and port and validates pins by the rules of
L{gophergem.trust.pins}, like every other pin store, so one contract test
(C{tests/test_state_pins.py}) runs against them all.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import attrs
from zope.interface import implementer

from gophergem.interfaces import IPinStore
from gophergem.state.documents import LOCK_TIMEOUT, DocumentFile
from gophergem.trust import Pin
from gophergem.trust.pins import check_pin_entry, decode_pin, encode_pin, sorted_pins

__all__ = ["FilePinStore"]

_KIND = "gophergem-pins"
_NOUN = "certificate pin store"


def _key(host: str, port: int) -> str:
    return f"{host}:{port}"


def _check_entries(entries: dict[str, Any]) -> None:
    for key, entry in entries.items():
        check_pin_entry(entry)
        if key != _key(entry["host"], entry["port"]):
            raise ValueError(f"key {key!r} does not match its pin")


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
        return self._file.view(lambda entries: decode_pin(entries[key]) if key in entries else None)

    def put(self, pin: Pin) -> None:
        """Insert or replace the pin for C{pin.host}:C{pin.port}; durable on return."""
        entry = encode_pin(pin)
        key = _key(entry["host"], entry["port"])
        self._file.update(lambda entries: entries.__setitem__(key, entry))

    def put_new(self, pin: Pin) -> Pin | None:
        """
        Store C{pin} unless its host and port are pinned already, under one
        lock; return C{None} when stored, else the existing pin, unchanged.
        """
        entry = encode_pin(pin)
        key = _key(entry["host"], entry["port"])

        def change(entries: dict[str, Any]) -> Pin | None:
            if key in entries:
                return decode_pin(entries[key])
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
            lambda entries: sorted_pins(
                [
                    decode_pin(entry)
                    for entry in entries.values()
                    if host is None or entry["host"] == host
                ]
            )
        )
