# -*- test-case-name: tests.test_state_redis -*-
"""
Politeness shared by every replica through one Redis: L{RedisPolicy}.

Each part keeps the observable rule of its in-process twin in
L{gophergem.policy.pacing} and L{gophergem.policy.cache}, but counts every
replica together, reading time from Redis (C{TIME}) so that the replicas'
clocks never have to agree:

  - L{RedisHostPacer}: starts to one host at least C{60 / rpm} seconds
    apart, every scheme's together (one lane per host, each start booked
    with its own scheme's interval).  A Lua script books the next free start
    slot; the caller waits for it on the reactor's clock.
  - L{RedisConcurrencyCap}: at most C{limit} operations at once.  Each holds
    a lease in a sorted set scored by its expiry; a running operation renews
    its lease, so a killed replica's leases lapse within
    L{RedisPolicy.lease_seconds}.
  - L{RedisSlowDownBoard}: the 44 board, with the same clamping and doubling
    as L{gophergem.policy.pacing.SlowDownBoard}.
  - L{RedisResponseCache}: the response cache, values written by
    L{gophergem.state.redis._codec.ValueCodec} (JSON, never pickle) with a
    TTL (C{SET PX}).
  - L{RedisPolicy.robots_probe}: robots.txt answers shared for the gate's TTL.

Every call is bounded by the state timeout and fails with
L{gophergem.errors.StateUnavailable} when Redis is down, slow or refuses.

The per-host connection limit is not shared: it counts this process's
sockets, in one table per L{RedisPolicy} that every scheme's limit shares
(L{gophergem.policy.pacing.ConnectionSlots}).
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import attrs
from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from gophergem.interfaces import (
    IConcurrencyCap,
    IHostConnectionLimit,
    IHostPacer,
    IPolicyBackend,
    IResponseCache,
    ISlowDownBoard,
)
from gophergem.policy.cache import ResponseCache, weight_of
from gophergem.policy.pacing import (
    FORGET_SLOW_DOWN_AFTER,
    MAX_SLOW_DOWN_SECONDS,
    MIN_SLOW_DOWN_SECONDS,
    ConnectionSlots,
    HostConnectionLimit,
    slow_down_seconds,
)
from gophergem.policy.robots import RobotsFetch
from gophergem.state.redis._client import RedisClient, run_bounded
from gophergem.state.redis._codec import Cacheable, Unencodable, Unreadable, ValueCodec
from gophergem.state.redis._events import RedisEvents
from gophergem.state.redis._scripts import ACQUIRE, BOOK, LEFT, NOTE, RENEW, UNBOOK

__all__ = [
    "RedisConcurrencyCap",
    "RedisHostPacer",
    "RedisPolicy",
    "RedisResponseCache",
    "RedisSlowDownBoard",
]

log = Logger(namespace="gophergem.state.redis")

#: Longest a shared cache value may be, encoded; a larger one is not shared.
MAX_VALUE_BYTES = 16 * 1024 * 1024


def _loop_of(reactor: object) -> asyncio.AbstractEventLoop:
    """The asyncio loop under C{reactor}, else the running one."""
    loop = getattr(reactor, "_asyncioEventloop", None)
    if isinstance(loop, asyncio.AbstractEventLoop):
        return loop
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        raise TypeError("the Redis policy needs Twisted's asyncio reactor") from None


@implementer(IPolicyBackend)
@attrs.frozen
class RedisPolicy:
    """
    Pacing, caps, the 44 board and the caches, shared through one Redis by
    every replica that uses the same server and prefix.

    Build it with L{RedisPolicy.connect}.

    @ivar client: The connection and its settings.
    @ivar reactor: Where the waits are timed.
    @ivar codec: What the shared response cache may hold.
    @ivar lease_seconds: How long a concurrency lease lasts unless renewed
        (running operations renew theirs every third of it).
    """

    client: RedisClient
    reactor: IReactorTime
    codec: ValueCodec
    lease_seconds: float = 30.0
    _events: list[RedisEvents] = attrs.field(factory=list, init=False)
    _slots: ConnectionSlots = attrs.field(factory=ConnectionSlots, init=False, eq=False)

    @classmethod
    def connect(
        cls,
        url: str,
        *,
        timeout: float,
        reactor: IReactorTime,
        prefix: str = "gophergem:",
        cacheable: Iterable[type | Cacheable] = (),
        lease_seconds: float = 30.0,
        check: bool = True,
    ) -> Deferred[RedisPolicy]:
        """
        Connect to the Redis at C{url} (C{redis://}, C{rediss://} or
        C{unix://}) on the asyncio loop under C{reactor}, whether it runs
        yet or not (a daemon connects before it starts the reactor).

        @param timeout: Seconds any one call may take (the state timeout).
        @param reactor: Twisted's asyncio reactor (another reactor only when
            called on a running asyncio loop, which is then used).
        @param prefix: Prepended to every key.
        @param cacheable: The types the response caches may share besides
            the wire values (L{gophergem.state.redis._codec.WIRE_TYPES}): the
            pipelines' download types, whose per-process memo fields are
            named transient.  A value of another type is not shared.
        @param check: Send a PING first, failing with L{StateUnavailable}
            when Redis does not answer.
        """
        codec = ValueCodec.of(cacheable)

        async def opened() -> RedisPolicy:
            client = await RedisClient.open(url, timeout, prefix)
            if check:
                await client.redis.ping()
            return cls(client, reactor, codec, lease_seconds)

        return run_bounded(_loop_of(reactor), opened(), timeout)

    def pacer(self, scheme: str, clock: IReactorTime, requests_per_minute: int) -> IHostPacer:
        """
        A L{RedisHostPacer}: starts C{60 / requests_per_minute} apart (0: no
        pacing), on the host's one lane that every scheme and replica books.
        """
        return RedisHostPacer(self.client, clock, requests_per_minute)

    def connection_limit(self, scheme: str, limit: int) -> IHostConnectionLimit:
        """
        A L{HostConnectionLimit} of C{limit} in this process (it counts this
        process's sockets), sharing its per-host counts with every scheme's
        limit from this policy.
        """
        return HostConnectionLimit(limit, slots=self._slots)

    def cap(self, scheme: str, limit: int) -> IConcurrencyCap:
        """A L{RedisConcurrencyCap} of C{limit} (0: no cap)."""
        return RedisConcurrencyCap(self.client, scheme, self.reactor, limit, self.lease_seconds)

    def board(self, scheme: str, clock: IReactorTime) -> ISlowDownBoard:
        """A L{RedisSlowDownBoard} (time is Redis's; C{clock} is not read)."""
        return RedisSlowDownBoard(self.client, scheme)

    def cache(
        self, scheme: str, clock: IReactorTime, ttl_seconds: float, max_entries: int
    ) -> IResponseCache | None:
        """
        A L{RedisResponseCache} behind a L{NearCache}, or C{None} when
        C{ttl_seconds} is 0.  Redis
        keeps no count per cache: C{max_entries} is not enforced there (the
        TTL and the server's C{maxmemory} policy bound it).
        """
        if ttl_seconds <= 0:
            return None
        shared = RedisResponseCache(self.client, scheme, clock, ttl_seconds, self.codec)
        return NearCache(shared, clock, ttl_seconds, max_entries=max_entries)

    def robots_probe(self, scheme: str, probe: RobotsFetch, ttl_seconds: float) -> RobotsFetch:
        """
        Wrap C{probe} so that what one replica learns of a host's robots.txt
        (the file, or that it has none) is read by the others for
        C{ttl_seconds}.  A failed probe is not shared: each gate backs off
        on its own.  Reading Redis fails with L{StateUnavailable}; a probe
        that succeeded but could not be shared is answered all the same.
        """
        if ttl_seconds <= 0:
            return probe
        return _SharedRobots(self.client, scheme, probe, ttl_seconds).fetch

    def claim(self, name: str, seconds: float) -> Deferred[bool]:
        """
        The turn C{name} for the next C{seconds}: the first replica to ask
        gets it (C{SET NX PX}), the others are told C{False} until it lapses.
        """
        key = self.client.key("turn", name)
        milliseconds = max(1, int(seconds * 1000))
        return self.client.call(
            lambda redis: redis.set(key, b"1", nx=True, px=milliseconds)
        ).addCallback(bool)

    def health(self) -> Deferred[dict[str, object]]:
        """Fire with whether Redis answers a PING within a second (never fails)."""
        budget = min(1.0, self.client.timeout)

        def ok(_: object) -> dict[str, object]:
            return {"ok": True, "detail": "Redis answers."}

        def down(reason: Failure) -> dict[str, object]:
            message = getattr(reason.value, "message", "Redis could not be reached.")
            return {"ok": False, "detail": message}

        return run_bounded(self.client.loop, self.client.redis.ping(), budget).addCallbacks(
            ok, down
        )

    def events(self) -> RedisEvents:
        """The channel on which the replicas announce changes to each other."""
        if not self._events:
            self._events.append(RedisEvents(self.client, "events"))
        return self._events[0]

    def close(self) -> Deferred[None]:
        """Stop listening for announcements and close the connections."""
        if not self._events:
            return self.client.close()
        events = self._events.pop()
        return events.stop().addBoth(lambda _: self.client.close())


@implementer(IHostPacer)
@attrs.define
class RedisHostPacer:
    """
    Space request starts to each host C{60 / requests_per_minute} seconds
    apart, counting every replica and every scheme.

    Each host has one lane (C{pace:<host>}, case folded, not the port), which
    the pacers of every scheme book: a slot starts at the lane's next free
    time and ends this pacer's own interval later, so a start keeps the
    next one, whatever its scheme, that interval away.  Requests book their
    slots in the order Redis receives them.  Cancelling a wait gives its slot
    back when no later request booked one; otherwise the slot stays spent
    (the next requests keep the times they were given).

    @ivar clock: Where the waits are timed.
    @ivar requests_per_minute: Starts per minute per host; 0 switches pacing
        off (no slot is booked).
    """

    _client: RedisClient
    clock: IReactorTime
    requests_per_minute: float

    @property
    def interval(self) -> float:
        """Seconds between two starts to one host (0 when pacing is off)."""
        return 60.0 / self.requests_per_minute if self.requests_per_minute > 0 else 0.0

    def turn(self, host: str) -> Deferred[None]:
        """Fire when a request to C{host} may start (see the class docstring)."""
        interval_us = round(self.interval * 1_000_000)
        if interval_us <= 0:
            return succeed(None)
        key = self._client.key("pace", host.lower())
        booking = self._client.run_script("book", BOOK, [key], [interval_us])
        timer: list[IDelayedCall] = []
        slot: list[str] = []

        def give_up(_: Deferred[None]) -> None:
            if not booking.called:
                booking.cancel()
            if timer and timer[0].active():
                timer[0].cancel()
            if slot:
                unbook = self._client.run_script("unbook", UNBOOK, [key], [slot[0], interval_us])
                unbook.addErrback(lambda _: None)  # the slot stays spent: only a gap

        waiter: Deferred[None] = Deferred(give_up)

        def booked(answer: list[bytes]) -> None:
            delay_us, end = int(answer[0]), answer[1].decode("ascii")
            if waiter.called:
                return
            if delay_us <= 0:
                waiter.callback(None)
                return
            slot.append(end)
            timer.append(self.clock.callLater(delay_us / 1_000_000, waiter.callback, None))

        def failed(reason: Failure) -> None:
            if not waiter.called:
                waiter.errback(reason)

        booking.addCallbacks(booked, failed)
        return waiter


@implementer(IConcurrencyCap)
@attrs.define
class RedisConcurrencyCap:
    """
    Run at most C{limit} operations at once across every replica.

    A waiting operation asks again after a short pause (25 ms, growing to
    250 ms), so the order among waiters is not guaranteed.  Cancelling while
    it waits gives the place up without calling C{f}; once C{f} runs, the
    cancellation goes to its Deferred and the lease is released when that
    one ends.

    @ivar limit: Operations in flight at once; 0 means no cap.
    @ivar lease_seconds: How long a lease lasts unless renewed.
    """

    _client: RedisClient
    scheme: str
    clock: IReactorTime
    limit: int
    lease_seconds: float = 30.0

    def run(self, f: Callable[..., Any], *args: Any, **kwargs: Any) -> Deferred[Any]:
        """Call C{f(*args, **kwargs)} once a place is free (see the class docstring)."""
        if self.limit <= 0:
            return maybeDeferred(f, *args, **kwargs)
        key = self._client.key("cap", self.scheme)
        holder = uuid.uuid4().hex
        lease_ms = max(1, round(self.lease_seconds * 1000))
        state: dict[str, Any] = {"asking": None, "timer": None, "running": None, "pause": 0.025}

        def give_up(_: Deferred[Any]) -> None:
            asking, timer, running = state["asking"], state["timer"], state["running"]
            if running is not None:
                running.cancel()
                return
            if timer is not None and timer.active():
                timer.cancel()
            if asking is not None and not asking.called:
                asking.cancel()
                self._release(key, holder)  # the lease may have been taken

        result: Deferred[Any] = Deferred(give_up)

        def ask() -> None:
            state["timer"] = None
            asking = self._client.run_script(
                "acquire", ACQUIRE, [key], [self.limit, lease_ms, holder]
            )
            state["asking"] = asking
            asking.addCallbacks(answered, failed)

        def answered(granted: int) -> None:
            state["asking"] = None
            if result.called:
                self._release(key, holder)
                return
            if not granted:
                pause = state["pause"]
                state["pause"] = min(pause * 2, 0.25)
                state["timer"] = self.clock.callLater(pause, ask)
                return
            renewal = self._renewing(key, holder, lease_ms)
            running = maybeDeferred(f, *args, **kwargs)
            state["running"] = running

            def done(outcome: object) -> None:
                renewal.stop()
                state["running"] = None
                self._release(key, holder).addCallback(lambda _: settle(outcome))

            def settle(outcome: object) -> None:
                # A cancelled result has already failed with CancelledError.
                if result.called:
                    return
                if isinstance(outcome, Failure):
                    result.errback(outcome)
                else:
                    result.callback(outcome)

            running.addBoth(done)

        def failed(reason: Failure) -> None:
            state["asking"] = None
            if not result.called:
                result.errback(reason)

        ask()
        return result

    def _renewing(self, key: str, holder: str, lease_ms: int) -> _Renewal:
        """Renew C{holder}'s lease every third of its length until stopped."""
        renewal = _Renewal(self.clock, self.lease_seconds / 3, self._renewer(key, holder, lease_ms))
        renewal.schedule()
        return renewal

    def _renewer(self, key: str, holder: str, lease_ms: int) -> Callable[[], None]:
        def renew() -> None:
            d = self._client.run_script("renew", RENEW, [key], [lease_ms, holder])
            d.addErrback(lambda _: None)  # the lease lapses by itself if Redis is gone

        return renew

    def _release(self, key: str, holder: str) -> Deferred[None]:
        """Give the lease back; a failure only means it lapses by itself."""

        def lapse(reason: Failure) -> None:
            log.info("a concurrency lease could not be released; it will lapse")

        d = self._client.call(lambda redis: redis.zrem(key, holder))
        return d.addCallbacks(lambda _: None, lapse)


@attrs.define
class _Renewal:
    """Call C{renew} every C{every} seconds until L{stop}."""

    clock: IReactorTime
    every: float
    renew: Callable[[], None]
    _timer: IDelayedCall | None = None
    _stopped: bool = False

    def schedule(self) -> None:
        if not self._stopped:
            self._timer = self.clock.callLater(self.every, self._tick)

    def _tick(self) -> None:
        self._timer = None
        self.renew()
        self.schedule()

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None


@implementer(ISlowDownBoard)
@attrs.frozen
class RedisSlowDownBoard:
    """
    Which hosts answered 44 (SLOW DOWN), seen by every replica: the rules of
    L{gophergem.policy.pacing.SlowDownBoard}, with Redis's clock.
    """

    _client: RedisClient
    scheme: str

    def _key(self, host: str, port: int) -> str:
        return self._client.key("slow", self.scheme, host.lower(), port)

    def note(self, host: str, port: int, meta: str) -> Deferred[float]:
        """Record a 44 with its C{meta}; fire with the seconds to wait from now."""
        asked = slow_down_seconds(meta)
        args = [
            -1 if asked is None else round(asked * 1000),
            round(MIN_SLOW_DOWN_SECONDS * 1000),
            round(MAX_SLOW_DOWN_SECONDS * 1000),
            round(FORGET_SLOW_DOWN_AFTER * 1000),
        ]
        d = self._client.run_script("note", NOTE, [self._key(host, port)], args)
        return d.addCallback(lambda ms: int(ms) / 1000)

    def retry_after(self, host: str, port: int) -> Deferred[float | None]:
        """Fire with the seconds left before C{host}:C{port} may be asked, or C{None}."""
        d = self._client.run_script("left", LEFT, [self._key(host, port)], [])
        return d.addCallback(lambda ms: None if int(ms) <= 0 else int(ms) / 1000)

    def clear(self, host: str, port: int) -> Deferred[None]:
        """Forget C{host}:C{port}'s 44s after it answered normally."""
        key = self._key(host, port)
        return self._client.call(lambda redis: redis.delete(key)).addCallback(lambda _: None)


@implementer(IResponseCache)
@attrs.define
class RedisResponseCache:
    """
    Parsed responses shared by every replica, fresh for C{ttl} seconds.

    A value the codec cannot write, or longer than L{MAX_VALUE_BYTES}
    encoded, is not kept (a later miss); a stored entry that cannot be read
    back (another version wrote it, say) is a miss.

    @ivar clock: Where the stored time is read.
    @ivar ttl: Seconds an entry stays fresh.
    """

    _client: RedisClient
    scheme: str
    clock: IReactorTime
    ttl: float
    codec: ValueCodec

    def _key(self, key: str) -> str:
        return self._client.key("cache", self.scheme, key)

    def get(self, key: str) -> Deferred[tuple[object, float] | None]:
        """Fire with C{(value, stored_at)} while fresh, else C{None}."""
        name = self._key(key)

        def read(data: object) -> tuple[object, float] | None:
            if not isinstance(data, bytes):
                return None
            try:
                return self.codec.decode(data)
            except Unreadable:
                log.info("an unreadable shared cache entry was ignored")
                return None

        return self._client.call(lambda redis: redis.get(name)).addCallback(read)

    def put(self, key: str, value: object) -> Deferred[float]:
        """Store C{value} for C{ttl} seconds; fire with the time it was stored at."""
        now = self.clock.seconds()
        try:
            data = self.codec.encode(value, now)
        except Unencodable as why:
            log.debug("not shared: {why}", why=str(why))
            return succeed(now)
        if len(data) > MAX_VALUE_BYTES:
            return succeed(now)
        name, ttl_ms = self._key(key), max(1, math.ceil(self.ttl * 1000))
        d = self._client.call(lambda redis: redis.set(name, data, px=ttl_ms))
        return d.addCallback(lambda _: now)

    def discard(self, key: str) -> Deferred[None]:
        """Forget C{key}."""
        name = self._key(key)
        return self._client.call(lambda redis: redis.delete(name)).addCallback(lambda _: None)


NEAR_SECONDS = 10.0
"""How long a replica keeps its own copy of a shared cache entry."""


@attrs.frozen
class _Held:
    """A shared entry held near: the value and when it was first stored."""

    value: object
    stored_at: float

    @property
    def weight(self) -> int:
        return weight_of(self.value)


@implementer(IResponseCache)
@attrs.define
class NearCache:
    """
    The shared cache, with a short-lived copy of each entry in this process.

    A hit read from Redis (or a value stored here) is also kept in memory
    for up to L{NEAR_SECONDS}, and never past its freshness in the shared
    cache, so a page read over and over costs one Redis read per few
    seconds, and this process's rendered windows of it (kept with the value
    object) are reused.  A replica may thus answer from its own copy for a
    few seconds after another replica refreshed the page; that copy is still
    within the cache's freshness.

    @ivar shared: The cache every replica shares.
    @ivar ttl: Seconds an entry stays fresh (the shared cache's).
    """

    shared: RedisResponseCache
    clock: IReactorTime
    ttl: float
    near_seconds: float = NEAR_SECONDS
    max_entries: int = 1000
    _near: ResponseCache = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._near = ResponseCache(self.clock, self.near_seconds, self.max_entries)

    def get(self, key: str) -> tuple[object, float] | Deferred[tuple[object, float] | None] | None:
        """C{(value, stored_at)} from the near copy at once, else from Redis."""
        held = self._near.get(key)
        if held is not None:
            entry = held[0]
            assert isinstance(entry, _Held)
            if self.clock.seconds() - entry.stored_at < self.ttl:
                return (entry.value, entry.stored_at)
            self._near.discard(key)

        def remember(found: tuple[object, float] | None) -> tuple[object, float] | None:
            if found is not None:
                self._near.put(key, _Held(*found))
            return found

        return self.shared.get(key).addCallback(remember)

    def put(self, key: str, value: object) -> Deferred[float]:
        """Store C{value} here and in Redis; fire with the time it was stored at."""
        self._near.put(key, _Held(value, self.clock.seconds()))
        return self.shared.put(key, value)

    def discard(self, key: str) -> Deferred[None]:
        """Forget C{key} here and in Redis."""
        self._near.discard(key)
        return self.shared.discard(key)


@attrs.frozen
class _SharedRobots:
    """A robots.txt probe whose answers are shared for C{ttl} seconds."""

    client: RedisClient
    scheme: str
    probe: RobotsFetch
    ttl: float

    def fetch(self, host: str, port: int) -> Deferred[bytes | None]:
        key = self.client.key("robots", self.scheme, host.lower(), port)

        def known(data: object) -> bytes | Deferred[bytes | None] | None:
            if data == b"N":
                return None
            if isinstance(data, bytes) and data[:1] == b"B":
                return data[1:]
            return maybeDeferred(self.probe, host, port).addCallback(learned)

        def learned(found: bytes | None) -> Deferred[bytes | None]:
            data = b"N" if found is None else b"B" + found
            ttl_ms = max(1, math.ceil(self.ttl * 1000))

            def unshared(reason: Failure) -> None:
                log.info(
                    "a robots.txt answer could not be shared: {code}", code="STATE_UNAVAILABLE"
                )

            d = self.client.call(lambda redis: redis.set(key, data, px=ttl_ms))
            return d.addCallbacks(lambda _: None, unshared).addCallback(lambda _: found)

        return self.client.call(lambda redis: redis.get(key)).addCallback(known)
