"""
Tests for L{gophergem.policy.pacing}: per-host pacing, the per-host
connection limit, the concurrency cap and the 44 board, all on a fake clock.
"""

from __future__ import annotations

import pytest
from twisted.internet.defer import CancelledError, Deferred, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from gophergem.policy.pacing import (
    MAX_SLOW_DOWN_SECONDS,
    ConcurrencyCap,
    HostConnectionLimit,
    HostPacer,
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
        self.assertLess(len(pacer._lanes), 1200)


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
        self.assertEqual(limit._hosts, {})  # an idle host is forgotten

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
