# -*- test-case-name: tests.test_state_pins -*-
"""
The memory stores: the contract of the file stores without files, for tests
and for library users who keep nothing between runs.

Each applies the same rules as its file store (L{gophergem.trust.pins},
L{gophergem.trust.identities}, L{gophergem.feeds.subscriptions}), so the
contract test of each interface runs against both and against PostgreSQL.
"""

from __future__ import annotations

import attrs
from zope.interface import implementer

from gophergem.interfaces import IPinStore
from gophergem.trust import Pin
from gophergem.trust.pins import encode_pin, sorted_pins

__all__ = ["MemoryPinStore"]


@implementer(IPinStore)
@attrs.define
class MemoryPinStore:
    """
    Pins in a dictionary, for tests: the same contract as
    L{FilePinStore<gophergem.state.files.FilePinStore>},
    without files.

    @ivar pins: The pins by C{(host, port)}; tests may read it directly.
    """

    pins: dict[tuple[str, int], Pin] = attrs.field(factory=dict)

    def get(self, host: str, port: int) -> Pin | None:
        """Return the pin for C{host}:C{port}, or C{None}."""
        return self.pins.get((host, port))

    def put(self, pin: Pin) -> None:
        """Insert or replace the pin for C{pin.host}:C{pin.port}."""
        encode_pin(pin)  # the same validation as every pin store
        assert isinstance(pin, Pin)
        self.pins[pin.host, pin.port] = pin

    def put_new(self, pin: Pin) -> Pin | None:
        """Store C{pin} unless its host and port are pinned; else return that pin."""
        encode_pin(pin)
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
        return sorted_pins([pin for pin in self.pins.values() if host is None or pin.host == host])
