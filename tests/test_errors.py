"""
Tests for L{gophergem.errors}: every error's code is one the tools' output
schemas list.
"""

from __future__ import annotations

import pytest

from gophergem import errors
from gophergem.render.payloads import ERROR_CODES


def all_errors() -> list[type[errors.GophergemError]]:
    return [getattr(errors, name) for name in errors.__all__]


@pytest.mark.parametrize("cls", all_errors(), ids=lambda cls: cls.__name__)
def test_every_code_is_in_the_schema(cls: type[errors.GophergemError]) -> None:
    """Each error class's stable code appears in ERROR_CODES, so results validate."""
    assert cls.code in ERROR_CODES


def test_pin_exists_fields() -> None:
    """PIN_EXISTS carries the current fingerprint as a structured field."""
    error = errors.PinExists(message="m", next_step="n", pinned_fingerprint="sha256:" + "a" * 64)
    assert error.fields() == {
        "code": "PIN_EXISTS",
        "message": "m",
        "next_step": "n",
        "pinned_fingerprint": "sha256:" + "a" * 64,
    }
