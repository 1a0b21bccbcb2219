# -*- test-case-name: tests.test_plural -*-
"""Counts in messages, with the noun agreeing: C{1 entry}, C{2 entries}."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: float, singular: str, plural: str | None = None) -> str:
    """
    C{count} and its noun: C{singular} for exactly one, else C{plural}
    (C{singular} + C{"s"} unless given).  A float is written as C{:g} writes it
    (C{1.5}, C{60}).
    """
    noun = singular if count == 1 else plural or f"{singular}s"
    return f"{count if isinstance(count, int) else format(count, 'g')} {noun}"
