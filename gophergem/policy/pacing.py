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

Pacing and the per-host limit are per host across every scheme: the pacers
and limits of one policy backend share one L{PerHost} (its L{PacingLanes}
and L{ConnectionSlots}), so a machine serving Gopher, Gemini and Spartan is
paced once and its connections are counted together, each scheme with its
own interval and limit.
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

from gophergem.interfaces import (
    IConcurrencyCap,
    IHostConnectionLimit,
    IHostPacer,
    ISlowDownBoard,
)

__all__ = [
    "FORGET_SLOW_DOWN_AFTER",
    "MAX_SLOW_DOWN_SECONDS",
    "MIN_SLOW_DOWN_SECONDS",
    "ConcurrencyCap",
    "ConnectionSlots",
    "HostConnectionLimit",
    "HostPacer",
    "PacingLanes",
    "PerHost",
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
    """One host's queue: who is waiting (with its interval), and when the next start may happen."""

    next_start: float = 0.0
    waiting: deque[tuple[Deferred[None], float]] = attrs.field(factory=deque)
    timer: IDelayedCall | None = None


@attrs.define(eq=False)
class PacingLanes:
    """
    Each host's queue of request starts, on one clock.

    Every L{HostPacer} given the same lanes paces a host once, whatever
    scheme its requests use: a start at time C{t} by a pacer of interval
    C{i} makes C{t + i} the host's next start for whichever pacer comes
    next, and waiters of every pacer keep one order per host.  The key is
    the host name, case folded (not the port: one machine).

    @ivar clock: Where time is read and timers are set.
    """

    clock: IReactorTime
    _lanes: dict[str, _Lane] = attrs.field(factory=dict, init=False)

    def __len__(self) -> int:
        """How many hosts are remembered."""
        return len(self._lanes)

    def turn(self, host: str, interval: float) -> Deferred[None]:
        """
        Wait for a start to C{host} that keeps the host's next start
        C{interval} seconds after it (see L{HostPacer.turn}).  An interval
        of 0 or less is not paced: it fires at once and charges nothing.
        """
        if interval <= 0:
            return succeed(None)
        key = host.lower()
        now = self.clock.seconds()
        lane = self._lanes.get(key)
        if lane is None:
            if len(self._lanes) >= _PRUNE_ABOVE:
                self._prune(now)
            lane = self._lanes[key] = _Lane()
        if not lane.waiting and now >= lane.next_start:
            lane.next_start = now + interval
            return succeed(None)

        def give_up(waiter: Deferred[None]) -> None:
            for place, (queued, _) in enumerate(lane.waiting):
                if queued is waiter:
                    del lane.waiting[place]
                    break
            if not lane.waiting and lane.timer is not None and lane.timer.active():
                lane.timer.cancel()
                lane.timer = None

        waiter: Deferred[None] = Deferred(give_up)
        lane.waiting.append((waiter, interval))
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
        waiter, interval = lane.waiting.popleft()
        lane.next_start = self.clock.seconds() + interval
        waiter.callback(None)
        self._schedule(lane)

    def _prune(self, now: float) -> None:
        """Forget hosts with nobody waiting whose interval has passed."""
        for key in [k for k, v in self._lanes.items() if not v.waiting and v.next_start <= now]:
            del self._lanes[key]


def _same_clock(
    pacer: HostPacer, attribute: attrs.Attribute[PacingLanes], lanes: PacingLanes
) -> None:
    if lanes.clock is not pacer.clock:
        raise ValueError("a pacer's lanes must run on the pacer's own clock")


@implementer(IHostPacer)
@attrs.define
class HostPacer:
    """
    Space request starts to each host C{60 / requests_per_minute} seconds
    apart.

    Requests to one host start in the order they asked; different hosts never
    wait for each other.  Pacers given one L{PacingLanes} (every scheme's,
    from one L{gophergem.policy.local.LocalPolicy}) pace each host together,
    each start keeping the next one its own pacer's interval away; a pacer
    built without lanes keeps its own.

    @ivar clock: Where time is read and timers are set.
    @ivar requests_per_minute: Starts per minute per host; 0 switches pacing off.
    @ivar lanes: The hosts' queues, shared or this pacer's own.
    """

    clock: IReactorTime
    requests_per_minute: float
    lanes: PacingLanes = attrs.field(
        default=attrs.Factory(lambda self: PacingLanes(self.clock), takes_self=True),
        validator=_same_clock,
        kw_only=True,
    )

    @property
    def interval(self) -> float:
        """Seconds between two starts to one host (0 when pacing is off)."""
        return 60.0 / self.requests_per_minute if self.requests_per_minute > 0 else 0.0

    def turn(self, host: str) -> Deferred[None]:
        """
        Wait for this request's turn to start talking to C{host}.

        Fires at once when the host is idle and its last start was at least
        that start's interval ago, otherwise after the requests queued before
        it.  Cancelling the Deferred (a deadline, say) gives the place up:
        the requests behind it move forward and no start is charged for it.
        With pacing off it fires at once and charges the host nothing.
        """
        return self.lanes.turn(host, self.interval)


@attrs.define
class _Slots:
    """One host's connections: how many are open, and who waits for one (with its limit)."""

    open: int = 0
    waiting: deque[tuple[Deferred[None], int]] = attrs.field(factory=deque)


@attrs.define(eq=False)
class ConnectionSlots:
    """
    The operations this process holds open to each host, every scheme's
    together: what every L{HostConnectionLimit} given the same slots counts.

    Each limit admits an operation while the host's count is below its own
    limit.  Waiters of every limit queue in one line per host and are let in
    first come first served: one whose limit is lower than the host's count
    waits, and those behind it wait too, so a scheme with a low limit is
    never starved by one with a higher limit.  With one limit alone this is
    the plain limit.  The key is the host name, case folded.
    """

    _hosts: dict[str, _Slots] = attrs.field(factory=dict, init=False)

    def __len__(self) -> int:
        """How many hosts hold or wait for a place."""
        return len(self._hosts)

    def open(self, host: str) -> int:
        """How many operations hold a place for C{host} now."""
        slots = self._hosts.get(host.lower())
        return 0 if slots is None else slots.open

    def queued(self, host: str) -> int:
        """How many operations wait for a place for C{host}."""
        slots = self._hosts.get(host.lower())
        return 0 if slots is None else len(slots.waiting)

    def acquire(self, key: str, limit: int) -> Deferred[None] | None:
        """
        Take a place for C{key} under C{limit} (C{None}), or a Deferred that
        fires once one is given; cancelling it gives the place in line up.
        """
        slots = self._hosts.get(key)
        if slots is None:
            slots = self._hosts[key] = _Slots()
        if not slots.waiting and slots.open < limit:
            slots.open += 1
            return None

        def give_up(waiter: Deferred[None]) -> None:
            for place, (queued, _) in enumerate(slots.waiting):
                if queued is waiter:
                    del slots.waiting[place]
                    break
            # The one that left may have held back others with higher limits.
            self._admit(key, slots)

        waiter: Deferred[None] = Deferred(give_up)
        slots.waiting.append((waiter, limit))
        return waiter

    def release(self, key: str) -> None:
        """Give back a place C{key} held, and let in whoever may come in now."""
        slots = self._hosts[key]
        slots.open -= 1
        self._admit(key, slots)

    def _admit(self, key: str, slots: _Slots) -> None:
        # A waiter let in may end at once and call release again (which
        # admits the next in line itself): the count is taken before each
        # callback, and the loop reads the line afresh.
        while slots.waiting and slots.open < slots.waiting[0][1]:
            waiter, _ = slots.waiting.popleft()
            slots.open += 1
            waiter.callback(None)
        if slots.open == 0 and not slots.waiting and self._hosts.get(key) is slots:
            del self._hosts[key]


@implementer(IHostConnectionLimit)
@attrs.define
class HostConnectionLimit:
    """
    Hold at most C{limit} operations open at once to each host; the rest
    wait their turn, in order.  Different hosts never wait for each other.

    Limits given one L{ConnectionSlots} (every scheme's, from one policy
    backend) count a host's operations together, each admitting while that
    count is below its own C{limit}; a limit built without slots keeps its
    own.

    Whoever holds a place must not wait on anything that needs another place
    to the same host (the fetch pipeline waits for its robots.txt verdict
    I{before} it asks for a place, so the probe can always get one).

    @ivar limit: Operations open at once to one host, 1 or more.
    @ivar slots: The hosts' counts, shared or this limit's own.
    """

    limit: int = attrs.field(validator=attrs.validators.ge(1))
    slots: ConnectionSlots = attrs.field(factory=ConnectionSlots, kw_only=True)

    def open(self, host: str) -> int:
        """How many operations hold a place for C{host} now (every scheme sharing the slots)."""
        return self.slots.open(host)

    def queued(self, host: str) -> int:
        """How many operations wait for a place for C{host} (every scheme sharing the slots)."""
        return self.slots.queued(host)

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
                self.slots.release(key)
                raise
            return result.addBoth(released)

        def released(outcome: object) -> object:
            self.slots.release(key)
            return outcome

        waiter = self.slots.acquire(key, self.limit)
        if waiter is None:
            # A free place: no Deferred in between, so the caller gets f's own.
            try:
                return holding()
            except Exception:
                return fail()
        return waiter.addCallback(holding)


@attrs.define(eq=False)
class PerHost:
    """
    What the pipelines built from one policy backend share of each host in
    this process: the pacing lanes (one set per clock) and the connection
    slots.  A policy backend holds one and hands every scheme a view on it.
    """

    slots: ConnectionSlots = attrs.field(factory=ConnectionSlots)
    _lanes: list[PacingLanes] = attrs.field(factory=list, init=False)

    def lanes(self, clock: IReactorTime) -> PacingLanes:
        """The lanes on C{clock}, made the first time it is asked for."""
        for lanes in self._lanes:
            if lanes.clock is clock:
                return lanes
        made = PacingLanes(clock)
        self._lanes.append(made)
        return made


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
