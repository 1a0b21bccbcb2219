# -*- test-case-name: tests.test_fetcher -*-
"""
What both pipelines share: the one deadline, the allowlists, parsing large
responses off the reactor thread, and the rule that a fetch never fails (an
unexpected exception becomes a logged C{FETCH_ERROR} result).

The deadline cancels whatever the fetch is waiting on.  A client read that
was given the fetch's L{Deadline} can tell that cancellation from any other
(a caller giving up) and keep what had arrived: the fetch then ends with
that content, marked incomplete, rather than in C{TIMEOUT}.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, Protocol, TypeVar

import attrs
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.interfaces import IReactorThreads, IReactorTime
from twisted.internet.threads import deferToThreadPool
from twisted.logger import Logger
from twisted.python.failure import Failure

from gophergem.errors import BlockedError, FetchError
from gophergem.errors import TimeoutError as FetchTimeout
from gophergem.results import FetchFailure

__all__ = [
    "OFFLOAD_BYTES",
    "SMALL_WEIGHT",
    "Deadline",
    "Offload",
    "check_allowlists",
    "internal_failure",
    "offloader",
    "parse_off_reactor",
    "run_inline",
    "within_deadline",
]

log = Logger()
T = TypeVar("T")


#: A response at least this large is parsed off the reactor thread (when the
#: reactor has threads): 1 MiB of tiny menu lines takes about a second to
#: parse, which would stall every other session for as long.
OFFLOAD_BYTES = 64 * 1024


#: The cache weight of a download that keeps no body (a described binary
#: item, a Gemini response that is not text): next to nothing.
SMALL_WEIGHT = 512


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


async def parse_off_reactor(offload: Offload, size: int, work: Callable[[], T]) -> T:
    """Run C{work} through C{offload} when C{size} is large, else right here."""
    if size < OFFLOAD_BYTES:
        return work()
    return await offload(work)


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
            message=f"The fetch did not finish within {seconds:g} seconds.",
            temporary=True,
            next_step="Try again later; the server may be slow or overloaded.",
        ) from None


def check_allowlists(config: Any, host: str, port: int) -> None:
    """
    Refuse a host or port off the configured allowlists (unset = no limit).

    @raise BlockedError: When either is not allowed.
    """
    if config.allowed_hosts is not None and host not in config.allowed_hosts:
        raise BlockedError(message="This host is not on the configured allowlist.")
    if config.allowed_ports is not None and port not in config.allowed_ports:
        raise BlockedError(message=f"Port {port} is not on the configured allowlist.")


def internal_failure(info: Any) -> FetchFailure:
    """Log the exception being handled and turn it into a coded result."""
    log.failure("unexpected failure fetching {url}", url=getattr(info, "url", ""))
    return FetchFailure(
        request_info=info,
        error=FetchError(message="An internal error stopped this fetch; it is logged."),
    )
