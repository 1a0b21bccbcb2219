"""
Tests for L{gophergem.search} itself: the curated names it offers, loaded
lazily from their home modules, so that the pure engines load without
Twisted.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import gophergem.search
from gophergem.search import engines, operation


@pytest.mark.parametrize("name", gophergem.search.__all__)
def test_every_public_name_resolves(name: str) -> None:
    """Each name of __all__ is the object its home module defines."""
    value = getattr(gophergem.search, name)
    home = getattr(operation, name) if name in operation.__all__ else getattr(engines, name)
    assert value is home
    assert name in dir(gophergem.search)


def test_unknown_name_is_an_attribute_error() -> None:
    """A name the package does not offer is an AttributeError, as for any module."""
    with pytest.raises(AttributeError, match="no_such_thing"):
        gophergem.search.no_such_thing  # type: ignore[attr-defined]  # noqa: B018


def test_operation_names() -> None:
    """The package offers the search operation beside the engines."""
    assert {"search", "SearchOutcome", "DEFAULT_LIMIT", "MAX_LIMIT"} <= set(
        gophergem.search.__all__
    )


def test_engines_are_pure() -> None:
    """Importing the engines (as the configuration does) loads no Twisted."""
    code = (
        "import sys, gophergem.search.engines; "
        "print(sorted(m for m in ('twisted', 'zope', 'gophergem.search.operation') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
