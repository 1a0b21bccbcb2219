"""
Tests for L{gophergem._plural}: counts in messages agree with their nouns
("1 entry", "2 entries", "1 second", "1.5 seconds").
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gophergem._plural import counted


@pytest.mark.parametrize(
    ("count", "nouns", "said"),
    [
        (1, ("entry", "entries"), "1 entry"),
        (0, ("entry", "entries"), "0 entries"),
        (2, ("subscription",), "2 subscriptions"),
        (1, ("subscription",), "1 subscription"),
        (1.0, ("second",), "1 second"),
        (1.5, ("second",), "1.5 seconds"),
        (60, ("second",), "60 seconds"),
    ],
)
def test_counted(count: float, nouns: tuple[str, ...], said: str) -> None:
    assert counted(count, *nouns) == said


@given(st.integers(min_value=0, max_value=10**9))
def test_only_one_is_singular(count: int) -> None:
    """Every count but 1 takes the plural."""
    said = counted(count, "item")
    assert said == (f"{count} item" if count == 1 else f"{count} items")
