# -*- test-case-name: tests.test_policy_cache -*-
"""
A TTL + LRU response cache on an injected clock.

Entries are parsed documents, keyed by normalised URL.  What may be cached
is the fetcher's decision (errors never are); this module only remembers.
"""

from __future__ import annotations

from collections import OrderedDict

import attrs
from twisted.internet.interfaces import IReactorTime
from zope.interface import implementer

from gophergem.interfaces import IResponseCache

__all__ = ["DEFAULT_MAX_BYTES", "ResponseCache", "weight_of"]

#: The default byte budget of one protocol's cache.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024


def weight_of(value: object) -> int:
    """What C{value} counts for in the byte budget: its C{weight}, else its C{size}, else 0."""
    for name in ("weight", "size"):
        weight = getattr(value, name, None)
        if isinstance(weight, int):
            return weight
    return 0


@implementer(IResponseCache)
@attrs.define
class ResponseCache:
    """
    Keep at most C{max_entries} values and C{max_bytes} of them, each fresh
    for C{ttl} seconds.

    A value's weight is its C{weight} attribute (what it holds in memory,
    roughly) or else its C{size} (the byte size of the response).  Without
    the byte budget, a thousand entries under a 1 MiB response cap could hold
    a gigabyte; weighed by wire size only, a 1 MiB menu of tiny lines (a
    quarter of a million parsed items, about 37 MiB) would count as 1 MiB.

    @ivar clock: Where time is read from.
    @ivar ttl: Seconds an entry stays fresh; 0 disables the cache.
    """

    clock: IReactorTime
    ttl: float = 300
    max_entries: int = 1000
    max_bytes: int = DEFAULT_MAX_BYTES
    _entries: OrderedDict[str, tuple[object, float]] = attrs.field(factory=OrderedDict, init=False)
    _bytes: int = attrs.field(default=0, init=False)

    def get(self, key: str) -> tuple[object, float] | None:
        """Return C{(value, stored_at)} while fresh, else C{None} (and forget it)."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        if self.clock.seconds() - entry[1] >= self.ttl:
            self.discard(key)
            return None
        self._entries.move_to_end(key)
        return entry

    def put(self, key: str, value: object) -> float:
        """Store C{value} under C{key}, evicting the least recently used."""
        now = self.clock.seconds()
        if self.ttl <= 0 or weight_of(value) > self.max_bytes:
            return now
        self.discard(key)
        self._entries[key] = (value, now)
        self._bytes += weight_of(value)
        while len(self._entries) > self.max_entries or self._bytes > self.max_bytes:
            _, (evicted, _) = self._entries.popitem(last=False)
            self._bytes -= weight_of(evicted)
        return now

    def discard(self, key: str) -> None:
        """Forget C{key}."""
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._bytes -= weight_of(entry[0])

    def __len__(self) -> int:
        return len(self._entries)
