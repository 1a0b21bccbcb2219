"""
Tests for the response cache (L{gophergem.policy.cache}): freshness on an
injected clock, least-recently-used eviction, the byte budget and discard.
"""

from __future__ import annotations

import attrs
from twisted.internet.task import Clock
from zope.interface.verify import verifyObject

from gophergem.interfaces import IResponseCache
from gophergem.policy.cache import DEFAULT_MAX_BYTES, ResponseCache


@attrs.frozen
class Sized:
    """A cached value weighed by its C{size}."""

    size: int


@attrs.frozen
class Weighed:
    """A cached value weighed by its C{weight} (what it holds), not its C{size}."""

    size: int
    weight: int


def make_cache(
    *, ttl: float = 300, max_entries: int = 1000, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[ResponseCache, Clock]:
    """A cache on a fresh clock that reads 1000."""
    clock = Clock()
    clock.advance(1_000)
    return ResponseCache(clock, ttl, max_entries, max_bytes), clock


def test_provides_iresponsecache() -> None:
    """ResponseCache provides IResponseCache."""
    cache, _ = make_cache()
    assert verifyObject(IResponseCache, cache)


def test_defaults() -> None:
    """By default entries stay fresh 300 seconds, 1000 of them within 64 MiB."""
    cache, _ = make_cache()
    assert (cache.ttl, cache.max_entries, cache.max_bytes) == (300, 1000, DEFAULT_MAX_BYTES)
    assert DEFAULT_MAX_BYTES == 64 * 1024 * 1024


def test_get_returns_value_and_time_stored() -> None:
    """A stored value comes back with the clock's time when it was stored."""
    cache, clock = make_cache()
    assert cache.put("gopher://a/", "menu") == 1_000
    clock.advance(5)
    assert cache.get("gopher://a/") == ("menu", 1_000)


def test_missing_key() -> None:
    """An unknown key is a miss."""
    cache, _ = make_cache()
    assert cache.get("gopher://nothing/") is None


def test_fresh_until_ttl() -> None:
    """An entry is fresh just before its TTL has passed and gone once it has."""
    cache, clock = make_cache(ttl=60)
    cache.put("k", "v")
    clock.advance(59.9)
    assert cache.get("k") == ("v", 1_000)
    clock.advance(0.1)
    assert cache.get("k") is None
    assert len(cache) == 0


def test_stale_entry_is_forgotten() -> None:
    """Reading a stale entry forgets it, and its bytes with it."""
    cache, clock = make_cache(ttl=10, max_bytes=100)
    cache.put("old", Sized(90))
    clock.advance(10)
    assert cache.get("old") is None
    cache.put("new", Sized(90))
    assert cache.get("new") == (Sized(90), 1_010)


def test_ttl_zero_disables() -> None:
    """With a TTL of 0 nothing is stored, though put still reports the time."""
    cache, _ = make_cache(ttl=0)
    assert cache.put("k", "v") == 1_000
    assert cache.get("k") is None and len(cache) == 0


def test_put_replaces() -> None:
    """Storing a key again replaces its value and its time."""
    cache, clock = make_cache()
    cache.put("k", "one")
    clock.advance(7)
    cache.put("k", "two")
    assert cache.get("k") == ("two", 1_007) and len(cache) == 1


def test_least_recently_used_is_evicted() -> None:
    """Over max_entries, the least recently used entry goes; a get counts as a use."""
    cache, _ = make_cache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") is not None  # b is now the least recently used
    cache.put("c", 3)
    assert cache.get("b") is None
    assert cache.get("a") is not None and cache.get("c") is not None
    assert len(cache) == 2


def test_byte_budget_evicts_oldest() -> None:
    """Over max_bytes, the least recently used entries go until the rest fits."""
    cache, _ = make_cache(max_bytes=100)
    cache.put("a", Sized(40))
    cache.put("b", Sized(40))
    cache.put("c", Sized(40))
    assert cache.get("a") is None
    assert cache.get("b") is not None and cache.get("c") is not None


def test_value_over_budget_is_not_stored() -> None:
    """A value heavier than the whole budget is not stored and evicts nothing."""
    cache, _ = make_cache(max_bytes=100)
    cache.put("small", Sized(10))
    cache.put("huge", Sized(101))
    assert cache.get("huge") is None
    assert cache.get("small") is not None


def test_weight_before_size() -> None:
    """A value's weight (what it holds in memory) counts, not its wire size."""
    cache, _ = make_cache(max_bytes=100)
    cache.put("a", Weighed(size=1, weight=60))
    cache.put("b", Weighed(size=1, weight=60))
    assert cache.get("a") is None and cache.get("b") is not None


def test_weightless_values_count_only_as_entries() -> None:
    """A value with neither weight nor size weighs nothing."""
    cache, _ = make_cache(max_bytes=1, max_entries=3)
    for key in "abc":
        cache.put(key, object())
    assert len(cache) == 3


def test_discard() -> None:
    """Discard forgets a key and gives its bytes back; an unknown key is no error."""
    cache, _ = make_cache(max_bytes=100)
    cache.put("a", Sized(90))
    cache.discard("a")
    cache.discard("never-stored")
    assert cache.get("a") is None and len(cache) == 0
    cache.put("b", Sized(90))
    assert cache.get("b") is not None
