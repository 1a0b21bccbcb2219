# -*- test-case-name: tests.test_policy_pacing -*-
"""
How often, and how many at once: per-host pacing, a per-host connection
limit, a concurrency cap, and the Gemini 44 (SLOW DOWN) board.

Gopher and Gemini servers are mostly run by individuals on small machines,
and a model in a loop can fetch far faster than any person.  Four rules keep
gophergem polite, each on the injected clock:

  - L{HostPacer}: request starts to one host are spaced C{60 / rpm} seconds
    apart, first come first served (C{*_REQUESTS_PER_MINUTE}).
  - L{HostConnectionLimit}: at most C{n} connections open at once to one
    host, always on (C{*_MAX_CONNECTIONS_PER_HOST}).  A small server's listen
    backlog overflows when fifty connects arrive together, and every connect
    beyond it waits for a SYN retry: the limit is politeness and speed.
  - L{ConcurrencyCap}: at most C{n} operations in flight at once, whatever
    their hosts (C{*_MAX_CONCURRENT_REQUESTS}; 0 means no global cap, never
    no per-host limit).
  - L{SlowDownBoard}: a host that answered 44 is left alone for as long as it
    asked, or, when it did not say, for a doubling wait.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar, overload

import attrs
from twisted.internet.defer import Deferred, DeferredSemaphore, fail, maybeDeferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from zope.interface import implementer

from gophergem.interfaces import IConcurrencyCap, IHostPacer, ISlowDownBoard

__all__ = [
    "FORGET_SLOW_DOWN_AFTER",
    "MAX_SLOW_DOWN_SECONDS",
    "MIN_SLOW_DOWN_SECONDS",
    "ConcurrencyCap",
    "HostConnectionLimit",
    "HostPacer",
    "SlowDownBoard",
    "slow_down_seconds",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")

MIN_SLOW_DOWN_SECONDS = 1.0
"""The shortest wait a 44 imposes (a META of C{0} still waits this long)."""

MAX_SLOW_DOWN_SECONDS = 3600.0
"""The longest wait a 44 imposes: a larger number in META, or a long run of
44s, is cut to one hour so that a typo or a hostile capsule cannot shut a
host off for days."""

FORGET_SLOW_DOWN_AFTER = 3600.0
"""A host's run of 44s is forgotten this many seconds after its last wait ended
(the shared board of L{gophergem.state.redis} forgets alike)."""

_PRUNE_ABOVE = 1024


@attrs.define
class _Lane:
    """One host's queue: who is waiting, and when the next start may happen."""

    next_start: float = 0.0
    waiting: deque[Deferred[None]] = attrs.field(factory=deque)
    timer: IDelayedCall | None = None


@implementer(IHostPacer)
@attrs.define
class HostPacer:
    """
    Space request starts to each host C{60 / requests_per_minute} seconds
    apart.

    Requests to one host start in the order they asked; different hosts never
    wait for each other.

    @ivar clock: Where time is read and timers are set.
    @ivar requests_per_minute: Starts per minute per host; 0 switches pacing off.
    """

    clock: IReactorTime
    requests_per_minute: float
    _lanes: dict[str, _Lane] = attrs.field(factory=dict, init=False)

    @property
    def interval(self) -> float:
        """Seconds between two starts to one host (0 when pacing is off)."""
        return 60.0 / self.requests_per_minute if self.requests_per_minute > 0 else 0.0

    def turn(self, host: str) -> Deferred[None]:
        """
        Wait for this request's turn to start talking to C{host}.

        Fires at once when the host is idle and its last start was at least
        an interval ago, otherwise after the requests queued before it.
        Cancelling the Deferred (a deadline, say) gives the place up: the
        requests behind it move forward and no start is charged for it.
        """
        if self.interval <= 0:
            return succeed(None)
        key = host.lower()
        now = self.clock.seconds()
        lane = self._lanes.get(key)
        if lane is None:
            if len(self._lanes) >= _PRUNE_ABOVE:
                self._prune(now)
            lane = self._lanes[key] = _Lane()
        if not lane.waiting and now >= lane.next_start:
            lane.next_start = now + self.interval
            return succeed(None)

        def give_up(waiter: Deferred[None]) -> None:
            if waiter in lane.waiting:
                lane.waiting.remove(waiter)
            if not lane.waiting and lane.timer is not None and lane.timer.active():
                lane.timer.cancel()
                lane.timer = None

        waiter: Deferred[None] = Deferred(give_up)
        lane.waiting.append(waiter)
        self._schedule(lane)
        return waiter

    def _schedule(self, lane: _Lane) -> None:
        if not lane.waiting or (lane.timer is not None and lane.timer.active()):
            return
        delay = max(0.0, lane.next_start - self.clock.seconds())
        lane.timer = self.clock.callLater(delay, self._release, lane)

    def _release(self, lane: _Lane) -> None:
        lane.timer = None
        if not lane.waiting:
            return
        waiter = lane.waiting.popleft()
        lane.next_start = self.clock.seconds() + self.interval
        waiter.callback(None)
        self._schedule(lane)

    def _prune(self, now: float) -> None:
        """Forget hosts with nobody waiting whose interval has passed."""
        for key in [k for k, v in self._lanes.items() if not v.waiting and v.next_start <= now]:
            del self._lanes[key]


@attrs.define
class _Slots:
    """One host's connections: how many are open, and who waits for one."""

    open: int = 0
    waiting: deque[Deferred[None]] = attrs.field(factory=deque)


@attrs.define
class HostConnectionLimit:
    """
    Hold at most C{limit} operations open at once to each host; the rest
    wait their turn, in order.  Different hosts never wait for each other.

    Whoever holds a place must not wait on anything that needs another place
    to the same host (the fetch pipeline waits for its robots.txt verdict
    I{before} it asks for a place, so the probe can always get one).

    @ivar limit: Operations open at once to one host, 1 or more.
    """

    limit: int = attrs.field(validator=attrs.validators.ge(1))
    _hosts: dict[str, _Slots] = attrs.field(factory=dict, init=False)

    def open(self, host: str) -> int:
        """How many operations hold a place for C{host} now."""
        slots = self._hosts.get(host.lower())
        return 0 if slots is None else slots.open

    def queued(self, host: str) -> int:
        """How many operations wait for a place for C{host}."""
        slots = self._hosts.get(host.lower())
        return 0 if slots is None else len(slots.waiting)

    def run(self, host: str, f: Callable[[], Deferred[_T]]) -> Deferred[_T]:
        """
        Call C{f()} once C{host} has a free place; the place is held until
        C{f}'s Deferred ends (however it ends).

        Cancelling the returned Deferred while it waits gives the place up
        without calling C{f}: the operations behind it move forward.  Once
        C{f} runs, the cancellation goes to C{f}'s Deferred.
        """
        key = host.lower()

        def holding(_: object = None) -> Deferred[_T]:
            try:
                result = f()
            except BaseException:
                self._release(key)
                raise
            return result.addBoth(released)

        def released(outcome: object) -> object:
            self._release(key)
            return outcome

        waiter = self._acquire(key)
        if waiter is None:
            # A free place: no Deferred in between, so the caller gets f's own.
            try:
                return holding()
            except Exception:
                return fail()
        return waiter.addCallback(holding)

    def _acquire(self, key: str) -> Deferred[None] | None:
        """Take a place for C{key} (C{None}), or a Deferred that fires once one is given."""
        slots = self._hosts.get(key)
        if slots is None:
            slots = self._hosts[key] = _Slots()
        if slots.open < self.limit:
            slots.open += 1
            return None

        def give_up(waiter: Deferred[None]) -> None:
            if waiter in slots.waiting:
                slots.waiting.remove(waiter)

        waiter: Deferred[None] = Deferred(give_up)
        slots.waiting.append(waiter)
        return waiter

    def _release(self, key: str) -> None:
        slots = self._hosts[key]
        if slots.waiting:
            # The place passes straight to the next in line: C{open} stays.
            slots.waiting.popleft().callback(None)
            return
        slots.open -= 1
        if slots.open == 0:
            del self._hosts[key]


@implementer(IConcurrencyCap)
@attrs.define
class ConcurrencyCap:
    """
    Run at most C{limit} operations at once; the rest wait their turn, in
    order.

    @ivar limit: Operations in flight at once; 0 means no cap.
    """

    limit: int
    _semaphore: DeferredSemaphore | None = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._semaphore = DeferredSemaphore(self.limit) if self.limit > 0 else None

    @property
    def in_flight(self) -> int:
        """How many operations hold a place now (0 when uncapped)."""
        if self._semaphore is None:
            return 0
        return self.limit - self._semaphore.tokens

    @property
    def queued(self) -> int:
        """How many operations wait for a place."""
        return 0 if self._semaphore is None else len(self._semaphore.waiting)

    # The same three overloads as Twisted's DeferredSemaphore.run: with one
    # union signature, a callable returning Deferred[X] would infer _T = Never.
    @overload
    def run(
        self, f: Callable[_P, Deferred[_T]], *args: _P.args, **kwargs: _P.kwargs
    ) -> Deferred[_T]: ...

    @overload
    def run(
        self,
        f: Callable[_P, Coroutine[Deferred[Any], Any, _T]],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> Deferred[_T]: ...

    @overload
    def run(self, f: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> Deferred[_T]: ...

    def run(
        self,
        f: Callable[_P, Deferred[_T] | Coroutine[Deferred[Any], Any, _T] | _T],
        *args: _P.args,
        **kwargs: _P.kwargs,
    ) -> Deferred[_T]:
        """
        Call C{f(*args, **kwargs)} once a place is free; the place is held
        until its result (a Deferred or coroutine is awaited) is ready.

        Cancelling the returned Deferred while it waits gives the place up
        without calling C{f}; once C{f} runs, the cancellation goes to C{f}'s
        Deferred and the place is freed when that one ends.
        """
        # Twisted's overloads accept one member of the union at a time.
        if self._semaphore is None:
            return maybeDeferred(f, *args, **kwargs)  # type: ignore[arg-type]
        return self._semaphore.run(f, *args, **kwargs)  # type: ignore[arg-type]


@attrs.define
class _Backoff:
    until: float
    streak: int


@implementer(ISlowDownBoard)
@attrs.define
class SlowDownBoard:
    """
    Remember which hosts said 44 (SLOW DOWN), and for how long to leave them
    alone.

    A META that is a whole number of seconds (servers written for older
    versions of the specification) is obeyed, clamped to
    L{MIN_SLOW_DOWN_SECONDS}..L{MAX_SLOW_DOWN_SECONDS}.  Any other META
    (free text, as the current specification has it) gets exponential
    backoff: 1 s, then 2 s, 4 s, ... for each further 44 from that host, up to
    L{MAX_SLOW_DOWN_SECONDS}.  L{clear} after a successful response starts the
    doubling afresh, and so does an hour without a 44.

    @ivar clock: Where time is read.
    """

    clock: IReactorTime
    _hosts: dict[tuple[str, int], _Backoff] = attrs.field(factory=dict, init=False)

    def note(self, host: str, port: int, meta: str) -> float:
        """
        Record a 44 from C{host}:C{port} with its C{meta}.

        @return: The seconds to wait from now, for the result's
            C{retry_after_seconds}.
        """
        now = self.clock.seconds()
        key = (host.lower(), port)
        entry = self._hosts.get(key)
        if entry is not None and now - entry.until >= FORGET_SLOW_DOWN_AFTER:
            entry = None
        streak = 1 if entry is None else entry.streak + 1
        wait = slow_down_seconds(meta)
        if wait is None:
            wait = min(MIN_SLOW_DOWN_SECONDS * 2 ** min(streak - 1, 32), MAX_SLOW_DOWN_SECONDS)
        until = max(now + wait, entry.until if entry is not None else now)
        self._hosts[key] = _Backoff(until, streak)
        if len(self._hosts) > _PRUNE_ABOVE:
            self._prune(now)
        return until - now

    def retry_after(self, host: str, port: int) -> float | None:
        """
        Return the seconds left before C{host}:C{port} may be asked again, or
        C{None} when no wait is in force.  While it is not C{None}, send
        nothing and answer C{SLOW_DOWN}.
        """
        entry = self._hosts.get((host.lower(), port))
        if entry is None:
            return None
        left = entry.until - self.clock.seconds()
        return left if left > 0 else None

    def clear(self, host: str, port: int) -> None:
        """Forget C{host}:C{port}'s 44s after it answered normally."""
        self._hosts.pop((host.lower(), port), None)

    def _prune(self, now: float) -> None:
        for key in [k for k, v in self._hosts.items() if now - v.until >= FORGET_SLOW_DOWN_AFTER]:
            del self._hosts[key]


def slow_down_seconds(meta: str) -> float | None:
    """
    The wait a 44's numeric META asks for, in seconds, clamped to
    L{MIN_SLOW_DOWN_SECONDS}..L{MAX_SLOW_DOWN_SECONDS}; C{None} for free text.
    Every 44 board reads META this way.
    """
    text = meta.strip() if isinstance(meta, str) else ""
    if not text or not text.isascii() or not text.isdigit():
        return None
    if len(text) > 12:
        return MAX_SLOW_DOWN_SECONDS
    return float(min(max(int(text), math.ceil(MIN_SLOW_DOWN_SECONDS)), MAX_SLOW_DOWN_SECONDS))
