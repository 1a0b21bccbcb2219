# -*- test-case-name: tests.test_policy_local -*-
"""
The politeness state of one process: L{LocalPolicy}.

An L{IPolicyBackend} hands each pipeline its pacer, per-host connection
limit, concurrency cap, 44 board, response cache and robots.txt probe.
L{LocalPolicy} keeps them all in this process, with the classes of
L{gophergem.policy.pacing} and L{gophergem.policy.cache}: the default, and
what one daemon or one stdio session needs.  Replicas that must pace a host
together use a shared backend instead (L{gophergem.state.redis}).
"""

from __future__ import annotations

import attrs
from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IReactorTime
from zope.interface import implementer

from gophergem.interfaces import (
    IConcurrencyCap,
    IHostConnectionLimit,
    IHostPacer,
    IPolicyBackend,
    IResponseCache,
    ISlowDownBoard,
)
from gophergem.policy.cache import ResponseCache
from gophergem.policy.pacing import (
    ConcurrencyCap,
    HostConnectionLimit,
    HostPacer,
    PerHost,
    SlowDownBoard,
)
from gophergem.policy.robots import RobotsFetch

__all__ = ["LocalPolicy"]


@implementer(IPolicyBackend)
@attrs.frozen(eq=False)
class LocalPolicy:
    """
    Pacing, caps, the 44 board and the caches, all in this process: each
    factory builds a fresh object, which the pipeline that asked keeps.

    Pacing and the per-host connection limit are per host across every
    scheme: the pacers and limits one policy hands out are views on one
    table per host (L{PerHost}), each with its scheme's interval and limit.
    So every pipeline built with one policy (all of
    L{gophergem.fetcher.Fetcher.from_config}'s) paces and counts a host
    together; a pipeline built without a policy makes its own, and shares
    nothing.  Two policies compare equal only when they are one object.
    """

    _per_host: PerHost = attrs.field(factory=PerHost, init=False, repr=False, eq=False)

    def pacer(self, scheme: str, clock: IReactorTime, requests_per_minute: int) -> IHostPacer:
        """
        A L{HostPacer} spacing starts C{60 / requests_per_minute} apart, on
        the lanes every scheme's pacer on C{clock} shares.
        """
        return HostPacer(clock, requests_per_minute, lanes=self._per_host.lanes(clock))

    def connection_limit(self, scheme: str, limit: int) -> IHostConnectionLimit:
        """A L{HostConnectionLimit} of C{limit}, counting every scheme's connections."""
        return HostConnectionLimit(limit, slots=self._per_host.slots)

    def cap(self, scheme: str, limit: int) -> IConcurrencyCap:
        """A L{ConcurrencyCap} of C{limit} (0: no cap)."""
        return ConcurrencyCap(limit)

    def board(self, scheme: str, clock: IReactorTime) -> ISlowDownBoard:
        """A L{SlowDownBoard} on C{clock}."""
        return SlowDownBoard(clock)

    def cache(
        self, scheme: str, clock: IReactorTime, ttl_seconds: float, max_entries: int
    ) -> IResponseCache | None:
        """A L{ResponseCache}, or C{None} when C{ttl_seconds} is 0."""
        if ttl_seconds <= 0:
            return None
        return ResponseCache(clock, ttl_seconds, max_entries)

    def robots_probe(self, scheme: str, probe: RobotsFetch, ttl_seconds: float) -> RobotsFetch:
        """C{probe} itself: the robots.txt gate already caches in this process."""
        return probe

    def claim(self, name: str, seconds: float) -> Deferred[bool]:
        """Every turn is this process's: nothing else shares it."""
        return succeed(True)

    def health(self) -> Deferred[dict[str, object]]:
        """Always well: there is nothing to reach."""
        return succeed({"ok": True, "detail": "in-process"})

    def close(self) -> Deferred[None]:
        """Nothing to let go of."""
        return succeed(None)
