# -*- test-case-name: tests.test_state_pins -*-
"""
What a certificate pin must be to be kept, whoever keeps it.

Every pin store (L{gophergem.state.files.FilePinStore},
L{gophergem.state.memory.MemoryPinStore},
L{gophergem.state.postgres.PostgresPinStore}) validates a pin with
L{encode_pin} before it stores it and lists pins in the order of
L{sorted_pins}, so that they answer alike; one contract test
(C{tests/test_state_pins.py}) runs against all of them.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from gophergem.trust import Pin

__all__ = ["check_pin_entry", "decode_pin", "encode_pin", "sorted_pins"]

_TEXT_FIELDS = ("host", "fingerprint", "spki")
_TIME_FIELDS = ("first_seen", "last_seen", "not_before", "expires")


def encode_pin(pin: object) -> dict[str, Any]:
    """
    Turn C{pin} into its JSON entry, refusing what could not be read back.

    @raise TypeError: When C{pin} is no L{Pin}, or a field has the wrong type.
    @raise ValueError: When its host is empty or its port is not 1-65535.
    """
    if not isinstance(pin, Pin):
        raise TypeError(f"expected a Pin, not {type(pin).__name__}")
    entry = attrs.asdict(pin)
    check_pin_entry(entry)
    return entry


def check_pin_entry(entry: Any) -> None:
    """
    Refuse an entry that is not a pin as L{encode_pin} writes it.

    @raise TypeError: When it is not an object or a field has the wrong type.
    @raise ValueError: When its host is empty or its port is not 1-65535.
    @raise KeyError: When a field is missing.
    """
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


def decode_pin(entry: dict[str, Any]) -> Pin:
    """The L{Pin} of an entry that passed L{check_pin_entry}."""
    return Pin(
        host=entry["host"],
        port=entry["port"],
        fingerprint=entry["fingerprint"],
        spki=entry["spki"],
        **{name: float(entry[name]) for name in _TIME_FIELDS},
    )


def sorted_pins(pins: list[Pin]) -> list[Pin]:
    """C{pins} in the order every store lists them: by host, then port."""
    return sorted(pins, key=lambda pin: (pin.host, pin.port))
