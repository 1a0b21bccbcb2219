# -*- test-case-name: tests.test_fetcher_pipeline -*-
"""
What the Gopher and the Gemini pipelines share, written once.

L{Steps} holds the politeness and cache machinery one protocol's pipeline
runs a fetch through, in order: the offset and allowlist checks, the
robots.txt gate (whose probe is itself an exchange through the same
client, never through the gate), the cache, the per-host connection limit,
the concurrency cap and the per-host pacing around each exchange (a probe's
included), and one deadline over all of it.
The module functions cut windows and keep the rule that a fetch never
fails (an unexpected exception becomes a logged C{FETCH_ERROR} result).

The deadline cancels whatever the fetch is waiting on.  A client read that
was given the fetch's L{Deadline} can tell that cancellation from any other
(a caller giving up) and keep what had arrived: the fetch then ends with
that content, marked incomplete, rather than in C{TIMEOUT}.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

import attrs
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.interfaces import IReactorThreads, IReactorTime
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem._defer import settle
from gophergem._plural import counted
from gophergem._time import format_utc
from gophergem.errors import BlockedError, FetchError, FetchTimeout, GophergemError, InvalidRequest
from gophergem.interfaces import (
    IConcurrencyCap,
    IHostConnectionLimit,
    IHostPacer,
    IPolicyBackend,
    IResponseCache,
)
from gophergem.policy.local import LocalPolicy
from gophergem.policy.robots import RobotsFetch, RobotsGate
from gophergem.results import (
    CacheInfo,
    FetchFailure,
    GeminiRequestInfo,
    RequestInfo,
    Window,
)
from gophergem.wire.robots import MAX_ROBOTS_BYTES

__all__ = [
    "OFFLOAD_BYTES",
    "PLAIN_OFFLOAD_BYTES",
    "SMALL_WEIGHT",
    "WINDOW_WEIGHT",
    "Deadline",
    "Download",
    "Offload",
    "Steps",
    "WindowMemo",
    "check_end",
    "check_offset",
    "failure_of",
    "held_by",
    "internal_failure",
    "keep_partial",
    "offloader",
    "parse_off_reactor",
    "run_inline",
    "window_for",
    "within_deadline",
]

log = Logger()
T = TypeVar("T")


#: A response at least this large is parsed off the reactor thread (when the
#: reactor has threads): 1 MiB of tiny menu lines takes about a second to
#: parse, which would stall every other session for as long.
OFFLOAD_BYTES = 64 * 1024


#: A body of plain ASCII text (L{gophergem.wire.text.is_plain_ascii}) at
#: least this large is decoded off the reactor thread; a smaller one is
#: decoded right here.  Decoding it is linear work done in C (about 5 ms per
#: MiB: line ends, dot-stuffing, sanitising), far from the second a 1 MiB
#: menu takes to parse, and a body decoded in a pool thread leaves that
#: thread's malloc arena holding the freed raw and intermediate copies: 50
#: texts of 1 MiB fetched at once peaked at about 1.46 times their size
#: decoded in threads, 1.18 times decoded on the reactor
#: (bench/bench_gopher.py).  Other text (8-bit charsets to guess, control
#: characters to drop) costs up to 150 ms per MiB, and goes at
#: L{OFFLOAD_BYTES}.
PLAIN_OFFLOAD_BYTES = 4 * 1024 * 1024


#: The cache weight of a download that keeps no body (a described binary
#: item, a Gemini response that is not text): next to nothing.
SMALL_WEIGHT = 512


def held_by(text: str | None, toggles: Sequence[int]) -> int:
    """
    About what a download's decoded body (C{None} when it keeps none) and
    its index of preformatting toggles hold in memory.
    """
    if text is None:
        return SMALL_WEIGHT
    return sys.getsizeof(text) + 8 * len(toggles)


#: What one memoised window costs besides its content: the result, its
#: window and cache values, and the memo's slot.
WINDOW_WEIGHT = 512


@attrs.define(eq=False)
class WindowMemo(Generic[T]):
    """
    The windows already cut from one cached download, by offset, so that a
    cache hit costs a dictionary lookup instead of a parse and a cut.

    The memo holds at most C{allowance} bytes (as the callers estimate
    them), and the download counts the whole allowance in its cache
    C{weight} from the start: the cache's byte budget never drifts as
    windows are added.  A window that does not fit is cut again each time.
    Only the reactor thread touches it.
    """

    allowance: int = 0
    _spent: int = 0
    _windows: dict[int, T] = attrs.field(factory=dict)

    @classmethod
    def within(cls, estimate: int, held: int, limit: int) -> WindowMemo[T]:
        """
        A memo allowed what every window together should cost (C{estimate})
        but no more than the larger of what the download already holds
        (C{held}) and about one full window of C{limit} characters.
        """
        return cls(min(estimate, max(held, 16 * limit + WINDOW_WEIGHT)))

    def get(self, offset: int) -> T | None:
        """The window cut at C{offset}, if it is kept."""
        return self._windows.get(offset)

    def keep(self, offset: int, window: T, weight: int) -> None:
        """Keep C{window} for C{offset} when its C{weight} fits what is left."""
        weight += WINDOW_WEIGHT
        if offset in self._windows or self._spent + weight > self.allowance:
            return
        self._windows[offset] = window
        self._spent += weight

    def __len__(self) -> int:
        return len(self._windows)


# --- parsing off the reactor --------------------------------------------------------


class Offload(Protocol):
    """Run pure, CPU-bound C{work} and give its result as a Deferred."""

    def __call__(self, work: Callable[[], T], /) -> Deferred[T]: ...


def run_inline(work: Callable[[], T], /) -> Deferred[T]:
    """L{Offload} on the calling thread: for memory reactors, and so for tests."""
    try:
        return succeed(work())
    except Exception:
        return fail(Failure())


def offloader(reactor: object) -> Offload:
    """
    The L{Offload} for C{reactor}: its thread pool when it has one (the
    parse then holds the GIL only in slices, and the reactor keeps turning),
    else L{run_inline}.  Only pure parsing is offloaded: it touches no
    shared state and calls nothing of Twisted's.
    """
    if not IReactorThreads.providedBy(reactor):
        return run_inline
    threads: Any = reactor  # IReactorThreads, which deferToThreadPool's stubs do not name

    def in_thread(work: Callable[[], T], /) -> Deferred[T]:
        return deferToThreadPool(threads, threads.getThreadPool(), work)

    return in_thread


async def parse_off_reactor(
    offload: Offload, size: int, work: Callable[[], T], *, plain: bool = False
) -> T:
    """
    Run C{work} through C{offload} when C{size} is large, else right here.

    @param plain: C{work} only decodes a body of plain ASCII text (linear
        work in C): it goes at L{PLAIN_OFFLOAD_BYTES}, not at
        L{OFFLOAD_BYTES}.
    """
    if size < (PLAIN_OFFLOAD_BYTES if plain else OFFLOAD_BYTES):
        return work()
    return await offload(work)


# --- the deadline -------------------------------------------------------------------


@attrs.define
class Deadline:
    """
    Whether one fetch's deadline has passed.

    L{within_deadline} sets C{passed} just before it cancels the fetch, so
    a client read asked C{lambda: deadline.passed} when it is cancelled
    knows the deadline (not a caller) stopped it, and may end with what
    arrived instead of failing.
    """

    passed: bool = False


async def within_deadline(
    work: Coroutine[Any, Any, T],
    seconds: float,
    clock: IReactorTime,
    deadline: Deadline | None = None,
) -> T:
    """
    Run C{work} under one overall deadline on C{clock}; cancel it when the
    deadline passes.  If C{work} still ends with a value (a read that keeps
    what arrived), that value is returned.

    @param deadline: Marked as passed just before C{work} is cancelled.
    @raise FetchTimeout: When it did not finish in time.
    """
    mark = deadline if deadline is not None else Deadline()
    attempt = Deferred.fromCoroutine(work)
    if attempt.called:
        # Done without waiting for anything (a cache hit): the clock cannot
        # have moved, so no deadline can have passed, and no timer is needed.
        return await attempt

    def expire() -> None:
        mark.passed = True
        attempt.cancel()

    timer = clock.callLater(seconds, expire)

    def settled(result: object) -> object:
        if timer.active():
            timer.cancel()
        return result

    attempt.addBoth(settled)
    try:
        return await attempt
    except CancelledError:
        if not mark.passed:
            raise  # a caller gave up: not a timeout
        raise FetchTimeout(
            message=f"The fetch did not finish within {counted(seconds, 'second')}.",
            temporary=True,
            next_step="Try again later; the server may be slow or overloaded.",
        ) from None


# --- requests and windows -----------------------------------------------------------


def check_offset(offset: int) -> None:
    """
    Refuse an offset that is not a whole number, 0 or more.

    @raise InvalidRequest: When it is not.
    """
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidRequest(message="offset must be a whole number, 0 or more.")


def check_end(offset: int, total: int, whole: str) -> None:
    """
    Refuse an offset past the end of a resource of C{total} units.

    @param whole: What the resource holds, for the message
        (C{"the resource has 12 items"}).
    @raise InvalidRequest: When C{offset} is past the end.
    """
    if offset > total or (offset == total and total > 0):
        raise InvalidRequest(message=f"offset {offset} is past the end; {whole}.")


def window_for(offset: int, end: int, total: int, capped: bool) -> Window:
    """The L{Window} of units C{offset:end} of C{total}; C{capped} when the cap cut it."""
    return Window(
        offset=offset, next_offset=end if end < total else None, total=total, size_capped=capped
    )


def failure_of(info: RequestInfo | GeminiRequestInfo, error: Exception) -> FetchFailure:
    """
    The result of C{error}, raised while fetching for C{info}: a coded
    error as it is, anything else logged as L{internal_failure} (so call it
    while the exception is handled, and let a C{CancelledError} pass first).
    """
    if isinstance(error, GophergemError):
        return FetchFailure(request_info=info, error=error)
    return internal_failure(info)


def internal_failure(info: RequestInfo | GeminiRequestInfo) -> FetchFailure:
    """Log the exception being handled and turn it into a coded result."""
    log.failure("unexpected failure fetching {url}", url=getattr(info, "url", ""))
    return FetchFailure(
        request_info=info,
        error=FetchError(message="An internal error stopped this fetch; it is logged."),
    )


# --- the steps ----------------------------------------------------------------------


class _Limits(Protocol):
    """What L{Steps} reads of a protocol's configuration (GopherConfig, GeminiConfig)."""

    @property
    def timeout_seconds(self) -> float: ...
    @property
    def max_response_size(self) -> int: ...
    @property
    def cache_enabled(self) -> bool: ...
    @property
    def allowed_hosts(self) -> frozenset[str] | None: ...
    @property
    def allowed_ports(self) -> frozenset[int] | None: ...
    @property
    def requests_per_minute(self) -> int: ...
    @property
    def max_concurrent_requests(self) -> int: ...
    @property
    def max_connections_per_host(self) -> int: ...
    @property
    def respect_robots_txt(self) -> bool: ...
    @property
    def robots_cache_ttl_seconds(self) -> int: ...


C = TypeVar("C", bound=_Limits)


class Download(Protocol):
    """What the cache keeps of a fetch (GopherDownload, GeminiDownload)."""

    @property
    def incomplete_reason(self) -> str | None: ...
    @property
    def weight(self) -> int: ...


@attrs.define
class Steps(Generic[C]):
    """
    The steps of a fetch both protocols take, under one protocol's policy.

    Build it with L{Steps.start}.

    @ivar robots: The robots.txt gate, or C{None} when robots.txt is not
        respected.
    """

    clock: IReactorTime
    config: C
    cache: IResponseCache | None
    robots: RobotsGate | None
    _pacer: IHostPacer
    _cap: IConcurrencyCap
    _hosts: IHostConnectionLimit

    @classmethod
    def start(
        cls,
        clock: IReactorTime,
        config: C,
        cache: IResponseCache | None,
        gate: Callable[[IReactorTime, RobotsFetch, C], RobotsGate],
        probe: RobotsFetch,
        *,
        scheme: str = "gopher",
        policy: IPolicyBackend | None = None,
    ) -> Steps[C]:
        """
        The steps for C{config}: its pacing, per-host connection limit and
        concurrency cap (from C{policy}; the connection limit always counts
        this process's sockets), and (when it respects robots.txt) a gate
        made by C{gate} that reads robots.txt through C{probe}, as C{policy}
        wraps it.

        Pacing and the connection limit are per host across every scheme of
        one C{policy}, with C{config}'s own interval and limit; steps built
        without a policy get a fresh L{LocalPolicy}, and so pace and count
        their hosts alone.

        @param scheme: C{"gopher"}, C{"gemini"} or C{"smolweb"}, for C{policy}.
        """
        policy = LocalPolicy() if policy is None else policy
        robots = None
        if config.respect_robots_txt:
            shared = policy.robots_probe(scheme, probe, config.robots_cache_ttl_seconds)
            robots = gate(clock, shared, config)
        return cls(
            clock,
            config,
            cache,
            robots,
            policy.pacer(scheme, clock, config.requests_per_minute),
            policy.cap(scheme, config.max_concurrent_requests),
            policy.connection_limit(scheme, config.max_connections_per_host),
        )

    def check_allowlists(self, host: str, port: int) -> None:
        """
        Refuse a host or port off the configured allowlists (unset = no limit).

        @raise BlockedError: When either is not allowed.
        """
        config = self.config
        if config.allowed_hosts is not None and host not in config.allowed_hosts:
            raise BlockedError(message="This host is not on the configured allowlist.")
        if config.allowed_ports is not None and port not in config.allowed_ports:
            raise BlockedError(message=f"Port {port} is not on the configured allowlist.")

    async def within_deadline(self, work: Callable[[Deadline], Coroutine[Any, Any, T]]) -> T:
        """
        Run C{work} under the one deadline of a fetch: the robots probe, the
        wait for a turn, DNS, connect, send and read.  A read it cuts short
        keeps what arrived (C{work} is given the L{Deadline} to tell its
        client).
        """
        deadline = Deadline()
        return await within_deadline(
            work(deadline), self.config.timeout_seconds, self.clock, deadline
        )

    async def check_robots(self, host: str, port: int, paths: list[str]) -> None:
        """Let the robots.txt gate decide on C{paths}, when there is one."""
        if self.robots is not None:
            await self.robots.check(host, port, paths)

    def forget_robots(self, host: str, port: int) -> None:
        """Forget what robots.txt said for C{host}:C{port}, when there is a gate."""
        if self.robots is not None:
            self.robots.forget(host, port)

    def cache_for(self, cacheable: bool = True) -> IResponseCache | None:
        """The cache, when it is on and C{cacheable} (a fetch's own rule) allows."""
        return self.cache if self.config.cache_enabled and cacheable else None

    @staticmethod
    async def lookup(cache: IResponseCache | None, key: str, refresh: bool) -> object | None:
        """
        The cached download for C{key}, or C{None}; C{refresh} forgets it
        instead, so that the fresh one replaces it.
        """
        if cache is None:
            return None
        if refresh:
            await settle(cache.discard(key))
            return None
        hit = await settle(cache.get(key))
        return None if hit is None else hit[0]

    @staticmethod
    async def store(cache: IResponseCache | None, key: str, download: Download) -> None:
        """
        Keep C{download} when it arrived whole: one cut by a broken
        connection or the deadline is served, marked, and never replayed as
        if it were whole.
        """
        if cache is not None and download.incomplete_reason is None:
            await settle(cache.put(key, download))

    def cache_info(self, fetched_at: float, from_cache: bool) -> CacheInfo:
        """Where a result came from: the cache or the wire, and how old it is."""
        return CacheInfo(
            cached=from_cache,
            cached_at=format_utc(fetched_at),
            cache_age_seconds=max(0, int(self.clock.seconds() - fetched_at)),
        )

    def exchange(self, host: str, work: Callable[[], Awaitable[T]], *, paced: bool) -> Deferred[T]:
        """
        Run one exchange with C{host}: once the host has a free connection
        place, then under the concurrency cap and, when C{paced}, after this
        host's turn (a robots.txt probe is not paced, but it takes a place).

        The host's place comes first, so operations queued for one busy host
        hold no place under the global cap and never delay other hosts.  The
        caller must not hold a place while it waits for a robots.txt verdict
        (the pipelines check robots.txt before they call this), or a probe
        could wait for a place its own fetch holds.  A host's places and
        turns are counted with those of every other scheme of the same
        policy; since no pipeline holds a place while it waits for a
        verdict, a probe waiting for a place another scheme's fetch holds
        gets it once that exchange ends.
        """

        async def turn() -> T:
            if paced:
                await self._pacer.turn(host)
            return await work()

        def capped() -> Deferred[T]:
            return cast("Deferred[T]", self._cap.run(lambda: Deferred.fromCoroutine(turn())))

        return cast("Deferred[T]", self._hosts.run(host, capped))

    def probe_limit(self) -> int:
        """How many bytes of robots.txt are read."""
        return min(self.config.max_response_size, MAX_ROBOTS_BYTES)


def keep_partial(deadline: Deadline | None) -> Callable[[], bool] | None:
    """
    What a client read asks when cancelled: whether the deadline passed.
    Only the fetch itself keeps a read the deadline cut short; a robots.txt
    probe (no deadline given) never does: half a policy is no policy.
    """
    return None if deadline is None else (lambda: deadline.passed)
