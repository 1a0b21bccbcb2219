"""
Tests for L{gophergem._plural}: counts in messages agree with their nouns
("1 entry", "2 entries", "1 second", "1.5 seconds").
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gophergem._plural import counted
from gophergem.errors import StateUnavailable


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


@pytest.mark.parametrize("timeout", [1.0, 2.0])
def test_shared_state_timeouts_agree(timeout: float) -> None:
    """A PostgreSQL or Redis timeout of one second says "1 second", of two "2 seconds"."""
    from gophergem.state.postgres._runner import translate as from_postgres
    from gophergem.state.redis._client import translate as from_redis

    said = counted(timeout, "second")
    for translate, name in ((from_postgres, "PostgreSQL"), (from_redis, "Redis")):
        error = translate(TimeoutError(), timeout)
        assert isinstance(error, StateUnavailable)
        assert error.message == f"{name} did not answer within {said}."
