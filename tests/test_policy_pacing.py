"""
Tests for L{gophergem.policy.pacing}: per-host pacing, the per-host
connection limit (alone, and shared by the schemes of one policy), the
concurrency cap and the 44 board, all on a fake clock.
"""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from gophergem.policy.pacing import (
    MAX_SLOW_DOWN_SECONDS,
    ConcurrencyCap,
    ConnectionSlots,
    HostConnectionLimit,
    HostPacer,
    PacingLanes,
    SlowDownBoard,
)


def start_times(clock: Clock, turns: list[Deferred[None]]) -> list[float | None]:
    """Record, for each turn, the fake time at which it fired."""
    started: list[float | None] = [None] * len(turns)
    for index, turn in enumerate(turns):
        turn.addCallback(lambda _, i=index: started.__setitem__(i, clock.seconds()))
    return started


class HostPacerTests(SynchronousTestCase):
    def test_ten_fetches_take_nine_seconds(self) -> None:
        """Ten same-host fetches at 60/min start one second apart: nine seconds in all."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        started = start_times(clock, [pacer.turn("h.example") for _ in range(10)])
        clock.pump([1] * 9)
        self.assertEqual(started, [float(s) for s in range(10)])
        self.assertEqual(clock.getDelayedCalls(), [])

    def test_interval(self) -> None:
        """The spacing is 60/rpm seconds."""
        clock = Clock()
        pacer = HostPacer(clock, 20)
        started = start_times(clock, [pacer.turn("h") for _ in range(3)])
        clock.pump([1] * 6)
        self.assertEqual(started, [0.0, 3.0, 6.0])

    def test_off(self) -> None:
        """At 0 requests per minute every turn fires at once."""
        pacer = HostPacer(Clock(), 0)
        for _ in range(100):
            self.successResultOf(pacer.turn("h"))

    def test_hosts_are_independent(self) -> None:
        """Different hosts are paced in parallel, not behind each other."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        started = start_times(clock, [pacer.turn(h) for h in ("a", "b", "a", "c", "b", "a")])
        clock.pump([1, 1])
        self.assertEqual(started, [0.0, 0.0, 1.0, 0.0, 1.0, 2.0])

    def test_host_names_fold_case(self) -> None:
        """A host is one host whatever its case."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        self.successResultOf(pacer.turn("H.example"))
        self.assertNoResult(pacer.turn("h.EXAMPLE"))

    def test_fifo(self) -> None:
        """Turns for one host fire in the order they were asked for."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        order: list[int] = []
        for i in range(5):
            pacer.turn("h").addCallback(lambda _, i=i: order.append(i))
        clock.pump([1] * 4)
        self.assertEqual(order, [0, 1, 2, 3, 4])

    def test_idle_host_starts_at_once(self) -> None:
        """A host idle for longer than the interval starts at once."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        self.successResultOf(pacer.turn("h"))
        clock.advance(1)
        self.successResultOf(pacer.turn("h"))
        clock.advance(0.5)
        d = pacer.turn("h")
        self.assertNoResult(d)
        clock.advance(0.5)
        self.successResultOf(d)

    def test_cancelled_turn_gives_its_place_up(self) -> None:
        """A cancelled waiter leaves the queue; the one behind takes its slot."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        self.successResultOf(pacer.turn("h"))
        second, third = pacer.turn("h"), pacer.turn("h")
        second.cancel()
        self.failureResultOf(second, CancelledError)
        clock.advance(1)
        self.successResultOf(third)

    def test_cancelling_every_waiter_clears_the_timer(self) -> None:
        """When nobody waits any more, no timer is left on the clock."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        self.successResultOf(pacer.turn("h"))
        waiting = [pacer.turn("h") for _ in range(3)]
        for d in waiting:
            d.cancel()
            self.failureResultOf(d, CancelledError)
        self.assertEqual(clock.getDelayedCalls(), [])
        # The charge of the first start still holds.
        clock.advance(0.5)
        d = pacer.turn("h")
        self.assertNoResult(d)
        clock.advance(0.5)
        self.successResultOf(d)

    def test_deadline_while_waiting(self) -> None:
        """A caller's addTimeout cancels a waiting turn without charging a start."""
        clock = Clock()
        pacer = HostPacer(clock, 6)  # ten seconds apart
        self.successResultOf(pacer.turn("h"))
        doomed = pacer.turn("h").addTimeout(5, clock)
        patient = pacer.turn("h")
        clock.advance(5)
        self.failureResultOf(doomed)
        clock.advance(5)
        self.successResultOf(patient)
        later = pacer.turn("h")
        clock.advance(9.9)
        self.assertNoResult(later)
        clock.advance(0.1)
        self.successResultOf(later)

    def test_turn_asked_from_a_callback(self) -> None:
        """A turn asked for from inside another turn's callback queues behind it."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        self.successResultOf(pacer.turn("h"))
        nested: list[Deferred[None]] = []
        pacer.turn("h").addCallback(lambda _: nested.append(pacer.turn("h")))
        clock.advance(1)
        self.assertNoResult(nested[0])
        clock.advance(1)
        self.successResultOf(nested[0])

    def test_many_hosts_are_forgotten(self) -> None:
        """Idle hosts are pruned so memory stays bounded."""
        clock = Clock()
        pacer = HostPacer(clock, 60)
        for i in range(3000):
            self.successResultOf(pacer.turn(f"h{i}"))
            clock.advance(0.01)
        self.assertLess(len(pacer.lanes), 1200)


class SharedLanesTests(SynchronousTestCase):
    """Pacers of several schemes on one L{PacingLanes}: one pace per host."""

    def pacers(self, *rpms: int) -> tuple[Clock, list[HostPacer]]:
        clock = Clock()
        lanes = PacingLanes(clock)
        return clock, [HostPacer(clock, rpm, lanes=lanes) for rpm in rpms]

    def test_schemes_wait_for_each_other(self) -> None:
        """A start by one scheme's pacer delays the next start of another's to that host."""
        clock, (gopher, gemini) = self.pacers(60, 60)
        self.successResultOf(gopher.turn("h.example"))
        second = gemini.turn("H.Example")  # the key is the host, case folded
        clock.advance(0.999)
        self.assertNoResult(second)
        clock.advance(0.001)
        self.successResultOf(second)

    def test_other_hosts_do_not_wait(self) -> None:
        """Sharing lanes never makes one host wait for another."""
        _clock, (gopher, gemini) = self.pacers(60, 60)
        self.successResultOf(gopher.turn("a.example"))
        self.successResultOf(gemini.turn("b.example"))

    def test_each_start_keeps_its_own_interval(self) -> None:
        """
        A start spaces the next by its own pacer's interval, whoever comes
        next: 10 s after a slow scheme's start, 1 s after a fast one's.
        """
        clock, (slow, fast) = self.pacers(6, 60)
        turns = [slow.turn("h"), fast.turn("h"), slow.turn("h"), fast.turn("h")]
        started = start_times(clock, turns)
        clock.pump([0.5] * 60)
        self.assertEqual(started, [0.0, 10.0, 11.0, 21.0])

    def test_fifo_across_schemes(self) -> None:
        """Waiters of every scheme keep one order per host."""
        clock, pacers = self.pacers(60, 30, 60)
        order: list[int] = []
        turns = [pacers[n % 3].turn("h") for n in range(6)]
        for n, turn in enumerate(turns):
            turn.addCallback(lambda _, n=n: order.append(n))
        clock.pump([1] * 20)
        self.assertEqual(order, [0, 1, 2, 3, 4, 5])

    def test_a_scheme_without_pacing_neither_waits_nor_charges(self) -> None:
        """At 0 requests per minute a turn fires at once and moves nobody's next start."""
        clock, (paced, unpaced) = self.pacers(60, 0)
        self.successResultOf(paced.turn("h"))
        waiting = paced.turn("h")
        for _ in range(3):
            self.successResultOf(unpaced.turn("h"))
        clock.advance(1)
        self.successResultOf(waiting)
        clock.advance(1)
        self.successResultOf(paced.turn("h"))

    def test_cancelling_gives_the_place_to_another_scheme(self) -> None:
        """
        A cancelled waiter of one scheme charges nothing: the next in line,
        of another scheme, starts when the cancelled one would have, and
        the start after it is spaced by that next one's interval.
        """
        clock, (slow, fast) = self.pacers(6, 60)
        self.successResultOf(fast.turn("h"))
        cancelled = slow.turn("h")
        after = fast.turn("h")
        last = slow.turn("h")
        started = start_times(clock, [after, last])
        clock.advance(0.5)
        cancelled.cancel()
        self.failureResultOf(cancelled, CancelledError)
        clock.pump([0.5] * 10)
        self.assertEqual(started, [1.0, 2.0])

    def test_lanes_must_run_on_the_pacers_clock(self) -> None:
        """Lanes timed on another clock are refused."""
        with pytest.raises(ValueError, match="clock"):
            HostPacer(Clock(), 60, lanes=PacingLanes(Clock()))

    def test_own_lanes_by_default(self) -> None:
        """Two pacers built without lanes pace alone, as before."""
        clock = Clock()
        first, second = HostPacer(clock, 60), HostPacer(clock, 60)
        self.successResultOf(first.turn("h"))
        self.successResultOf(second.turn("h"))


@attrs.frozen
class _Asked:
    """One request in a pacing scenario."""

    arrives: float
    rpm: int
    cancel_after: float | None


# Intervals of 4, 2, 1, 0.5 and 0.25 s (or none) and times on a quarter-second
# grid: sums stay exact in binary floating point, so a start is compared
# exactly.  Cancellations fall between the grid's points, never on a start.
_ASKED = st.builds(
    _Asked,
    st.integers(0, 40).map(lambda n: n / 4),
    st.sampled_from([0, 15, 30, 60, 120, 240]),
    st.none() | st.integers(0, 20).map(lambda n: n / 4 + 0.125),
)


@given(st.lists(_ASKED, min_size=1, max_size=25))
def test_shared_lanes_start_each_request_as_the_rule_says(asked: list[_Asked]) -> None:
    """
    Whatever the mix of schemes, arrivals and cancellations, every start
    not cancelled happens at C{max(arrival, previous start + its interval)},
    in the order of arrival; an unpaced request starts on arrival and
    charges nothing; a cancelled one charges nothing.
    """
    asked = sorted(asked, key=lambda a: a.arrives)
    clock = Clock()
    lanes = PacingLanes(clock)
    pacers = {rpm: HostPacer(clock, rpm, lanes=lanes) for rpm in {a.rpm for a in asked}}
    started: dict[int, float] = {}
    cancelled: set[int] = set()

    def arrive(n: int) -> None:
        turn = pacers[asked[n].rpm].turn("h.example")
        turn.addCallbacks(lambda _: started.__setitem__(n, clock.seconds()), lambda _: None)
        after = asked[n].cancel_after
        if after is not None:
            clock.callLater(
                after, lambda: None if turn.called else (cancelled.add(n), turn.cancel())
            )

    for n, request in enumerate(asked):
        clock.callLater(request.arrives, arrive, n)
    clock.pump([0] + [0.125] * 8 * (10 + 4 * len(asked) + 20))

    expected: dict[int, float] = {}
    free = 0.0
    for n, request in enumerate(asked):
        if request.rpm == 0:
            expected[n] = request.arrives
            continue
        start = max(request.arrives, free)
        if request.cancel_after is not None and request.arrives + request.cancel_after < start:
            continue
        expected[n] = start
        free = start + 60 / request.rpm
    assert started == expected
    assert cancelled == set(range(len(asked))) - set(expected)


class ConcurrencyCapTests(SynchronousTestCase):
    def test_cap_holds(self) -> None:
        """No more than the limit run at once; the rest start in order as places free up."""
        cap = ConcurrencyCap(2)
        running: list[Deferred[str]] = []
        started: list[int] = []

        def op(i: int) -> Deferred[str]:
            started.append(i)
            d: Deferred[str] = Deferred()
            running.append(d)
            return d

        results = [cap.run(op, i) for i in range(5)]
        self.assertEqual(started, [0, 1])
        self.assertEqual((cap.in_flight, cap.queued), (2, 3))
        running[0].callback("zero")
        self.assertEqual(self.successResultOf(results[0]), "zero")
        self.assertEqual(started, [0, 1, 2])
        running[1].errback(ValueError())
        self.failureResultOf(results[1], ValueError)
        self.assertEqual(started, [0, 1, 2, 3])
        for d in running[2:]:
            d.callback("x")
        running[4].callback("x")
        self.assertEqual(started, [0, 1, 2, 3, 4])
        self.assertEqual((cap.in_flight, cap.queued), (0, 0))

    def test_unlimited(self) -> None:
        """A limit of 0 runs everything at once."""
        cap = ConcurrencyCap(0)
        pending = [Deferred[None]() for _ in range(50)]
        results = [cap.run(lambda d=d: d) for d in pending]
        for d in results:
            self.assertNoResult(d)
        self.assertEqual(cap.in_flight, 0)
        self.assertEqual(self.successResultOf(cap.run(lambda: 7)), 7)

    def test_plain_and_coroutine_results(self) -> None:
        """A plain value or a coroutine works as well as a Deferred."""
        cap = ConcurrencyCap(1)

        async def coro(x: int) -> int:
            return x * 2

        self.assertEqual(self.successResultOf(cap.run(coro, 21)), 42)
        self.assertEqual(self.successResultOf(cap.run(lambda: "plain")), "plain")
        self.assertEqual(self.successResultOf(cap.run(succeed, 1)), 1)

    def test_cancel_while_queued(self) -> None:
        """Cancelling a queued operation gives the place up without running it."""
        cap = ConcurrencyCap(1)
        first: Deferred[None] = Deferred()
        ran: list[str] = []
        cap.run(lambda: first)
        queued = cap.run(lambda: ran.append("queued"))
        queued.cancel()
        self.failureResultOf(queued, CancelledError)
        first.callback(None)
        self.assertEqual(ran, [])
        self.assertEqual(cap.in_flight, 0)

    def test_cancel_while_running(self) -> None:
        """Cancelling a running operation cancels its Deferred and frees the place."""
        cap = ConcurrencyCap(1)
        inner: Deferred[None] = Deferred()
        running = cap.run(lambda: inner)
        running.cancel()
        self.failureResultOf(running, CancelledError)
        self.assertEqual(cap.in_flight, 0)
        self.successResultOf(cap.run(lambda: None))

    def test_raising_function_frees_the_place(self) -> None:
        """A function that raises fails its Deferred and frees the place."""
        cap = ConcurrencyCap(1)
        self.failureResultOf(cap.run(lambda: 1 // 0), ZeroDivisionError)
        self.assertEqual(cap.in_flight, 0)


class HostConnectionLimitTests(SynchronousTestCase):
    def pending(
        self, limit: HostConnectionLimit, host: str, log: list[str], name: str
    ) -> tuple[Deferred[str], list[Deferred[str]]]:
        """Run an operation under C{limit} that ends when the test fires its Deferred."""
        inner: list[Deferred[str]] = []

        def op() -> Deferred[str]:
            log.append(name)
            d: Deferred[str] = Deferred()
            inner.append(d)
            return d

        return limit.run(host, op), inner

    def test_limit_holds_per_host_in_order(self) -> None:
        """At most the limit run for one host; the rest start in order as places free up."""
        limit = HostConnectionLimit(2)
        log: list[str] = []
        runs = [self.pending(limit, "h.example", log, str(i)) for i in range(5)]
        self.assertEqual(log, ["0", "1"])
        self.assertEqual((limit.open("h.example"), limit.queued("h.example")), (2, 3))
        runs[1][1][0].callback("one")
        self.assertEqual(self.successResultOf(runs[1][0]), "one")
        self.assertEqual(log, ["0", "1", "2"])
        runs[0][1][0].errback(ValueError())
        self.failureResultOf(runs[0][0], ValueError)
        self.assertEqual(log, ["0", "1", "2", "3"])
        runs[2][1][0].callback("x")
        runs[3][1][0].callback("x")
        runs[4][1][0].callback("x")
        self.assertEqual(log, ["0", "1", "2", "3", "4"])
        self.assertEqual((limit.open("h.example"), limit.queued("h.example")), (0, 0))
        self.assertEqual(len(limit.slots), 0)  # an idle host is forgotten

    def test_hosts_are_independent(self) -> None:
        """A full host never delays another host."""
        limit = HostConnectionLimit(1)
        log: list[str] = []
        self.pending(limit, "a", log, "a1")
        self.pending(limit, "a", log, "a2")
        self.pending(limit, "b", log, "b1")
        self.assertEqual(log, ["a1", "b1"])
        self.assertEqual((limit.open("a"), limit.queued("a"), limit.open("b")), (1, 1, 1))

    def test_host_names_fold_case(self) -> None:
        """H.Example and h.example share their places."""
        limit = HostConnectionLimit(1)
        log: list[str] = []
        self.pending(limit, "H.Example", log, "upper")
        self.pending(limit, "h.example", log, "lower")
        self.assertEqual(log, ["upper"])

    def test_cancel_while_queued(self) -> None:
        """Cancelling a queued operation (a deadline) gives its place up without running it."""
        limit = HostConnectionLimit(1)
        log: list[str] = []
        _first, inner = self.pending(limit, "h", log, "first")
        queued, _ = self.pending(limit, "h", log, "queued")
        third, _ = self.pending(limit, "h", log, "third")
        queued.cancel()
        self.failureResultOf(queued, CancelledError)
        self.assertEqual(limit.queued("h"), 1)
        inner[0].callback("done")
        self.assertEqual(log, ["first", "third"])
        self.assertNoResult(third)

    def test_cancel_while_running(self) -> None:
        """Cancelling a running operation cancels its Deferred and frees the place."""
        limit = HostConnectionLimit(1)
        inner: Deferred[None] = Deferred()
        running = limit.run("h", lambda: inner)
        running.cancel()
        self.failureResultOf(running, CancelledError)
        self.assertTrue(inner.called)
        self.assertEqual(limit.open("h"), 0)
        self.successResultOf(limit.run("h", lambda: succeed(None)))

    def test_raising_function_frees_the_place(self) -> None:
        """A function that raises fails its Deferred and frees the place."""
        limit = HostConnectionLimit(1)

        def broken() -> Deferred[None]:
            raise ZeroDivisionError()

        self.failureResultOf(limit.run("h", broken), ZeroDivisionError)
        self.assertEqual(limit.open("h"), 0)

    def test_limit_must_be_positive(self) -> None:
        """A limit of 0 would hold everything forever: it is refused."""
        with pytest.raises(ValueError):
            HostConnectionLimit(0)


class SharedSlotsTests(SynchronousTestCase):
    """Limits of several schemes on one L{ConnectionSlots}: one count per host."""

    def setUp(self) -> None:
        self.slots = ConnectionSlots()
        self.log: list[str] = []
        self.held: dict[str, Deferred[str]] = {}

    def limit(self, n: int) -> HostConnectionLimit:
        return HostConnectionLimit(n, slots=self.slots)

    def hold(self, limit: HostConnectionLimit, host: str, name: str) -> Deferred[str]:
        """Run an operation named C{name} that ends when the test fires C{self.held[name]}."""

        def op() -> Deferred[str]:
            self.log.append(name)
            d: Deferred[str] = Deferred()
            self.held[name] = d
            return d

        return limit.run(host, op)

    def test_schemes_count_together(self) -> None:
        """Two schemes with a limit of 2 each hold at most 2 places to one host together."""
        gopher, gemini = self.limit(2), self.limit(2)
        self.hold(gopher, "h.example", "gopher-1")
        self.hold(gemini, "H.Example", "gemini-1")
        waiting = self.hold(gopher, "h.example", "gopher-2")
        self.assertEqual(self.log, ["gopher-1", "gemini-1"])
        self.assertEqual((gemini.open("h.example"), gemini.queued("h.example")), (2, 1))
        self.held["gemini-1"].callback("done")
        self.assertEqual(self.log, ["gopher-1", "gemini-1", "gopher-2"])
        self.assertNoResult(waiting)

    def test_each_scheme_admits_under_its_own_limit(self) -> None:
        """A scheme limited to 1 waits while another scheme holds a place to the host."""
        strict, loose = self.limit(1), self.limit(3)
        self.hold(loose, "h", "loose-1")
        self.hold(strict, "h", "strict")
        self.assertEqual(self.log, ["loose-1"])
        self.held["loose-1"].callback("done")
        self.assertEqual(self.log, ["loose-1", "strict"])
        self.assertEqual(self.slots.open("h"), 1)

    def test_first_come_first_served_across_limits(self) -> None:
        """
        A waiter with a low limit is not overtaken by later arrivals of a
        higher limit (it would starve); once it is in, they follow.
        """
        strict, loose = self.limit(1), self.limit(4)
        self.hold(loose, "h", "loose-1")
        self.hold(loose, "h", "loose-2")
        self.hold(strict, "h", "strict")
        self.hold(loose, "h", "loose-3")
        self.assertEqual(self.log, ["loose-1", "loose-2"])
        self.held["loose-1"].callback("done")
        self.assertEqual(self.log, ["loose-1", "loose-2"])
        self.held["loose-2"].callback("done")
        self.assertEqual(self.log, ["loose-1", "loose-2", "strict", "loose-3"])
        self.assertEqual(self.slots.open("h"), 2)

    def test_cancelling_a_low_limit_waiter_lets_the_line_move(self) -> None:
        """When the waiter holding the line back gives up, those behind it that fit go in."""
        strict, loose = self.limit(1), self.limit(4)
        self.hold(loose, "h", "loose-1")
        blocked = self.hold(strict, "h", "strict")
        behind = self.hold(loose, "h", "loose-2")
        blocked.cancel()
        self.failureResultOf(blocked, CancelledError)
        self.assertEqual(self.log, ["loose-1", "loose-2"])
        self.assertNoResult(behind)
        self.held["loose-1"].callback("a")
        self.held["loose-2"].callback("b")
        self.assertEqual(len(self.slots), 0)

    def test_hosts_are_independent(self) -> None:
        """A host full for one scheme delays no other host, of any scheme."""
        strict, loose = self.limit(1), self.limit(1)
        self.hold(strict, "a", "a")
        self.hold(loose, "b", "b")
        self.assertEqual(self.log, ["a", "b"])

    def test_own_slots_by_default(self) -> None:
        """Two limits built without slots count alone, as before."""
        first, second = HostConnectionLimit(1), HostConnectionLimit(1)
        first.run("h", Deferred)
        self.assertEqual(second.open("h"), 0)
        self.assertTrue(second.run("h", lambda: succeed(1)).called)

    def test_an_operation_ending_at_once_lets_the_next_in(self) -> None:
        """Places passed to operations that end at once are counted back in one go."""
        strict, loose = self.limit(1), self.limit(2)
        self.hold(loose, "h", "first")
        queued = [strict.run("h", lambda n=n: succeed(n)) for n in range(3)]
        last = self.hold(loose, "h", "last")
        self.held["first"].callback("done")
        self.assertEqual([self.successResultOf(d) for d in queued], [0, 1, 2])
        self.assertEqual(self.log, ["first", "last"])
        self.assertNoResult(last)
        self.assertEqual((self.slots.open("h"), self.slots.queued("h")), (1, 0))


@given(
    st.lists(
        st.tuples(st.sampled_from([1, 2, 4]), st.booleans(), st.integers(0, 1000)),
        min_size=1,
        max_size=30,
    )
)
def test_shared_slots_admit_in_order_within_each_limit(
    steps: list[tuple[int, bool, int]],
) -> None:
    """
    Whatever the mix of limits, arrivals, ends and cancellations on one
    host: operations start in the order they arrived; each starts only
    while the host holds fewer places than its own limit; the head of the
    line waits only while it could not start; every operation not cancelled
    starts, and the host is forgotten once idle.
    """
    slots = ConnectionSlots()
    limits = {n: HostConnectionLimit(n, slots=slots) for n in (1, 2, 4)}
    arrived: list[int] = []
    started: list[int] = []
    over_limit: list[int] = []
    running: list[Deferred[None]] = []
    waiting: dict[int, tuple[Deferred[Any], int]] = {}
    cancelled: set[int] = set()

    def operation(n: int, limit: int) -> Deferred[None]:
        if slots.open("h") > limit:  # its own place is counted already
            over_limit.append(n)
        started.append(n)
        waiting.pop(n, None)
        d: Deferred[None] = Deferred()
        running.append(d)
        return d

    def check() -> None:
        if waiting:
            assert slots.open("h") >= waiting[min(waiting)][1]
        assert slots.open("h") == len(running)
        assert slots.queued("h") == len(waiting)

    for n, (limit, arrive, pick) in enumerate(steps):
        if arrive or not (running or waiting):
            arrived.append(n)
            outcome = limits[limit].run("h", lambda n=n, limit=limit: operation(n, limit))
            if n not in started:
                waiting[n] = (outcome, limit)
        elif running and (pick % 3 or not waiting):
            running.pop(pick % len(running)).callback(None)
        else:
            gone = sorted(waiting)[pick % len(waiting)]
            cancelled.add(gone)
            waiting.pop(gone)[0].cancel()
        check()
    while running:
        running.pop(0).callback(None)
        check()
    assert over_limit == []
    assert started == sorted(started)
    assert sorted(started + sorted(cancelled)) == arrived
    assert not waiting and len(slots) == 0


class SlowDownBoardTests(SynchronousTestCase):
    def test_nothing_noted(self) -> None:
        """A host that never said 44 has no wait."""
        self.assertIsNone(SlowDownBoard(Clock()).retry_after("h", 1965))

    def test_numeric_meta(self) -> None:
        """A whole number of seconds in META is waited, then the wait ends."""
        clock = Clock()
        board = SlowDownBoard(clock)
        self.assertEqual(board.note("h", 1965, " 30 "), 30)
        clock.advance(10)
        self.assertEqual(board.retry_after("H", 1965), 20)
        clock.advance(20)
        self.assertIsNone(board.retry_after("h", 1965))

    def test_numeric_meta_is_clamped(self) -> None:
        """A numeric META is clamped to at least 1 second and at most an hour."""
        board = SlowDownBoard(Clock())
        self.assertEqual(board.note("a", 1965, "0"), 1)
        self.assertEqual(board.note("b", 1965, "86400"), MAX_SLOW_DOWN_SECONDS)
        self.assertEqual(board.note("c", 1965, "9" * 400), MAX_SLOW_DOWN_SECONDS)

    def test_free_text_backs_off_exponentially(self) -> None:
        """Free-text META waits 1 s, then 2 s, 4 s, 8 s for each further 44."""
        clock = Clock()
        board = SlowDownBoard(clock)
        waits = []
        for _ in range(4):
            waits.append(board.note("h", 1965, "Please slow down"))
            clock.advance(waits[-1])
            self.assertIsNone(board.retry_after("h", 1965))
        self.assertEqual(waits, [1, 2, 4, 8])

    def test_exponential_is_capped(self) -> None:
        """The doubling stops at an hour."""
        clock = Clock()
        board = SlowDownBoard(clock)
        for _ in range(40):
            wait = board.note("h", 1965, "")
            clock.advance(wait)
        self.assertEqual(wait, MAX_SLOW_DOWN_SECONDS)

    def test_clear_resets(self) -> None:
        """A success clears the wait and the doubling starts again at 1 s."""
        clock = Clock()
        board = SlowDownBoard(clock)
        board.note("h", 1965, "busy")
        board.note("h", 1965, "busy")
        board.clear("h", 1965)
        self.assertIsNone(board.retry_after("h", 1965))
        self.assertEqual(board.note("h", 1965, "busy"), 1)

    def test_streak_forgotten_after_an_hour(self) -> None:
        """An hour after the last wait ended, the doubling starts again at 1 s."""
        clock = Clock()
        board = SlowDownBoard(clock)
        board.note("h", 1965, "busy")
        clock.advance(1)
        self.assertEqual(board.note("h", 1965, "busy"), 2)
        clock.advance(2 + 3600)
        self.assertEqual(board.note("h", 1965, "busy"), 1)

    def test_a_shorter_wait_never_cuts_a_longer_one(self) -> None:
        """A new 44 during a wait never shortens it."""
        clock = Clock()
        board = SlowDownBoard(clock)
        board.note("h", 1965, "600")
        self.assertEqual(board.note("h", 1965, "5"), 600)
        self.assertEqual(board.retry_after("h", 1965), 600)

    def test_hosts_and_ports_are_separate(self) -> None:
        """A wait belongs to one host:port."""
        board = SlowDownBoard(Clock())
        board.note("h", 1965, "60")
        self.assertIsNone(board.retry_after("h", 1966))
        self.assertIsNone(board.retry_after("g", 1965))

    def test_non_ascii_digits_are_free_text(self) -> None:
        """Only ASCII digits count as a number of seconds."""
        board = SlowDownBoard(Clock())
        self.assertEqual(board.note("h", 1965, "\u0663\u0660"), 1)
