"""
Tests for L{gophergem.fetcher._pipeline}: the steps both protocols share,
on a fake clock (no network: an exchange here is a Deferred the test fires).
"""

from __future__ import annotations

from typing import Any

import pytest
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.task import Clock

from gophergem.config import GeminiConfig, GopherConfig
from gophergem.errors import BlockedError, FetchTimeout, InvalidRequest
from gophergem.fetcher._pipeline import (
    Deadline,
    Steps,
    check_end,
    check_offset,
    keep_partial,
    window_for,
    within_deadline,
)
from gophergem.policy.cache import ResponseCache
from gophergem.policy.robots import RobotsGate
from gophergem.wire.robots import MAX_ROBOTS_BYTES


def no_probe(host: str, port: int) -> Deferred[bytes | None]:
    return succeed(None)


def done(work: Any) -> Any:
    """What a coroutine that waits on nothing returns (a store that answers at once)."""
    d = Deferred.fromCoroutine(work)
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "the coroutine waited"
    return box[0]


def steps(clock: Clock | None = None, **options: Any) -> Steps[GopherConfig]:
    config = GopherConfig(**{"requests_per_minute": 0, "respect_robots_txt": False, **options})
    clock = clock or Clock()
    cache = ResponseCache(clock, config.cache_ttl_seconds, config.max_cache_entries)
    return Steps.start(clock, config, cache, RobotsGate.for_gopher, no_probe)


# --- requests and windows -------------------------------------------------------------


@pytest.mark.parametrize("offset", [-1, 1.5, True, "3", None])
def test_offset_must_be_a_whole_number(offset: Any) -> None:
    """An offset that is not a whole number, 0 or more, is INVALID_REQUEST."""
    with pytest.raises(InvalidRequest):
        check_offset(offset)


def test_offsets_in_range_pass() -> None:
    """0 is always a valid start; any offset before the end is too."""
    check_offset(0)
    check_end(0, 0, "the body has 0 characters")
    check_end(4, 5, "the body has 5 characters")


@pytest.mark.parametrize(("offset", "total"), [(5, 5), (6, 5), (1, 0)])
def test_offset_past_the_end(offset: int, total: int) -> None:
    """An offset at or past the end of a non-empty resource is refused, saying its size."""
    with pytest.raises(InvalidRequest) as caught:
        check_end(offset, total, f"the resource has {total} items")
    assert caught.value.message == (
        f"offset {offset} is past the end; the resource has {total} items."
    )


def test_window_for() -> None:
    """A window says where the rest starts, or that nothing is left."""
    window = window_for(10, 20, 30, False)
    assert (window.offset, window.next_offset, window.total) == (10, 20, 30)
    assert window.truncated
    whole = window_for(0, 30, 30, False)
    assert whole.next_offset is None and not whole.truncated
    assert window_for(0, 30, 30, True).truncated  # the cap cut it


# --- the deadline -----------------------------------------------------------------------


def test_deadline_cancels_and_times_out() -> None:
    """Work still pending at the deadline is cancelled; the fetch fails FetchTimeout."""
    clock = Clock()
    pending: Deferred[int] = Deferred()
    mark = Deadline()

    async def work() -> int:
        return await pending

    d = Deferred.fromCoroutine(within_deadline(work(), 3, clock, mark))
    clock.advance(3)
    assert mark.passed
    errors: list[Any] = []
    d.addErrback(errors.append)
    assert errors and errors[0].check(FetchTimeout)
    assert "3 seconds" in errors[0].value.message


def test_caller_cancel_is_not_a_timeout() -> None:
    """A caller giving up is a cancellation, not a TIMEOUT."""
    clock = Clock()
    pending: Deferred[int] = Deferred()

    async def work() -> int:
        return await pending

    d = Deferred.fromCoroutine(within_deadline(work(), 3, clock))
    d.cancel()
    errors: list[Any] = []
    d.addErrback(errors.append)
    assert errors and errors[0].check(CancelledError)
    assert clock.getDelayedCalls() == []  # the timer went with it


def test_work_done_at_once_sets_no_timer() -> None:
    """Work that finishes without waiting (a cache hit) gives its value and leaves no timer."""
    clock = Clock()
    scheduled: list[Any] = []
    real = clock.callLater
    clock.callLater = lambda *a, **k: scheduled.append(a) or real(*a, **k)  # type: ignore[method-assign]

    async def work() -> int:
        return 7

    d = Deferred.fromCoroutine(within_deadline(work(), 3, clock))
    assert d.called and d.result == 7
    assert scheduled == [] and clock.getDelayedCalls() == []


def test_steps_deadline_uses_the_configured_seconds() -> None:
    """Steps.within_deadline gives the work its Deadline and the config's seconds."""
    clock = Clock()
    given: list[Deadline] = []

    async def work(deadline: Deadline) -> int:
        given.append(deadline)
        return await Deferred()

    d = Deferred.fromCoroutine(steps(clock, timeout_seconds=7).within_deadline(work))
    clock.advance(6.9)
    assert not given[0].passed
    clock.advance(0.1)
    assert given[0].passed
    errors: list[Any] = []
    d.addErrback(errors.append)
    assert errors and errors[0].check(FetchTimeout)


def test_keep_partial_only_with_a_deadline() -> None:
    """A read keeps partial content only when it was given the fetch's deadline."""
    assert keep_partial(None) is None
    mark = Deadline()
    asks = keep_partial(mark)
    assert asks is not None and asks() is False
    mark.passed = True
    assert asks() is True


# --- allowlists, cache, robots ----------------------------------------------------------


def test_allowlists() -> None:
    """A host or port off the allowlists is BLOCKED; none set means no limit."""
    steps().check_allowlists("anywhere.example", 7070)
    limited = steps(allowed_hosts=frozenset({"a.example"}), allowed_ports=frozenset({70}))
    limited.check_allowlists("a.example", 70)
    with pytest.raises(BlockedError):
        limited.check_allowlists("b.example", 70)
    with pytest.raises(BlockedError):
        limited.check_allowlists("a.example", 71)


class _Download:
    def __init__(self, incomplete_reason: str | None = None) -> None:
        self.incomplete_reason = incomplete_reason
        self.weight = 1


def test_cache_keeps_only_whole_downloads() -> None:
    """A whole download is kept and found; one cut short is never kept."""
    shared = steps()
    cache = shared.cache_for()
    whole, cut = _Download(), _Download("deadline")
    done(shared.store(cache, "k", whole))
    done(shared.store(cache, "cut", cut))
    assert done(shared.lookup(cache, "k", refresh=False)) is whole
    assert done(shared.lookup(cache, "cut", refresh=False)) is None


def test_refresh_forgets_the_cached_copy() -> None:
    """A refresh misses and forgets what was kept, so the fresh download replaces it."""
    shared = steps()
    cache = shared.cache_for()
    done(shared.store(cache, "k", _Download()))
    assert done(shared.lookup(cache, "k", refresh=True)) is None
    assert done(shared.lookup(cache, "k", refresh=False)) is None


def test_no_cache_when_off_or_not_cacheable() -> None:
    """The cache is skipped when caching is off, or when the fetch says it may not be used."""
    assert steps(cache_enabled=False).cache_for() is None
    assert steps().cache_for(cacheable=False) is None
    assert done(steps().lookup(None, "k", refresh=False)) is None


def test_cache_info_ages() -> None:
    """cache_info says where a result came from and how old its download is."""
    clock = Clock()
    clock.advance(100)
    info = steps(clock).cache_info(40.0, from_cache=True)
    assert (info.cached, info.cache_age_seconds) == (True, 60)


def test_robots_gate_only_when_respected() -> None:
    """A gate exists only when robots.txt is respected; its probe reads a bounded size."""
    assert steps().robots is None
    gemini = Steps.start(Clock(), GeminiConfig(), None, RobotsGate.for_gemini, no_probe)
    assert gemini.robots is not None
    assert gemini.probe_limit() == min(GeminiConfig().max_response_size, MAX_ROBOTS_BYTES)


def test_exchange_runs_under_the_cap() -> None:
    """An exchange waits for a place under the concurrency cap."""
    shared = steps(max_concurrent_requests=1)
    first: Deferred[str] = Deferred()
    a = shared.exchange("h", lambda: first, paced=False)
    b = shared.exchange("h", lambda: succeed("second"), paced=False)
    assert not b.called  # waiting for the first
    first.callback("first")
    assert (a.result, b.result) == ("first", "second")
