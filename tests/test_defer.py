"""Tests for L{gophergem._defer}: turning a store's answer into a Deferred."""

from __future__ import annotations

from twisted.internet.defer import Deferred

from gophergem._defer import settle


def test_a_value_becomes_a_fired_deferred() -> None:
    """A plain value comes back as a Deferred that has fired with it."""
    results: list[object] = []
    settle(7).addCallback(results.append)
    assert results == [7]


def test_a_deferred_passes_through() -> None:
    """A Deferred is returned itself, so it fires when the store answers."""
    d: Deferred[int] = Deferred()
    assert settle(d) is d


def test_none_is_a_value() -> None:
    """C{None} (no pin, say) is a value like any other."""
    results: list[object] = []
    settle(None).addCallback(results.append)
    assert results == [None]
