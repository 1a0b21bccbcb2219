"""
Tests for L{gophergem.policy.robots}: the robots.txt gate, on a fake clock
with probes fired by hand.
"""

from __future__ import annotations

from twisted.internet import defer
from twisted.internet.defer import CancelledError, Deferred, fail, succeed
from twisted.internet.task import Clock
from twisted.trial.unittest import SynchronousTestCase

from gophergem.config import GeminiConfig, GopherConfig
from gophergem.errors import (
    BlockedByRobots,
    ConnectionFailed,
    FetchTimeout,
    RobotsUnavailable,
    SlowDown,
    TemporaryError,
)
from gophergem.policy.robots import RobotsGate
from gophergem.wire.robots import GEMINI_AGENTS, GOPHER_AGENTS, gopher_robot_paths

DISALLOW_PRIVATE = b"User-agent: *\nDisallow: /private\n"


class FakeRobotsFetch:
    """Stands in for the client: each call returns a Deferred the test fires."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.pending: list[Deferred[bytes | None]] = []
        self.cancelled = 0

    def __call__(self, host: str, port: int) -> Deferred[bytes | None]:
        self.calls.append((host, port))
        d: Deferred[bytes | None] = Deferred(self._cancel)
        self.pending.append(d)
        return d

    def _cancel(self, d: Deferred[bytes | None]) -> None:
        self.cancelled += 1

    def _next(self) -> Deferred[bytes | None]:
        while self.pending[0].called:  # cancelled
            self.pending.pop(0)
        return self.pending.pop(0)

    def answer(self, data: bytes | None) -> None:
        self._next().callback(data)

    def fail_with(self, error: Exception) -> None:
        self._next().errback(error)


def gate(
    *, fail_open: bool = False, honor_ai_tokens: bool = True, ttl: float = 86400
) -> tuple[RobotsGate, FakeRobotsFetch, Clock]:
    clock = Clock()
    fetch = FakeRobotsFetch()
    agents = GOPHER_AGENTS if fail_open else GEMINI_AGENTS
    return (
        RobotsGate(
            clock,
            fetch,
            fail_open=fail_open,
            agents=agents,
            honor_ai_tokens=honor_ai_tokens,
            ttl=ttl,
            failure_backoff=60,
        ),
        fetch,
        clock,
    )


class DecisionTests(SynchronousTestCase):
    def test_allowed(self) -> None:
        """A path no rule covers is allowed once robots.txt arrives."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/public"])
        self.assertNoResult(d)
        fetch.answer(DISALLOW_PRIVATE)
        self.assertIsNone(self.successResultOf(d))
        self.assertEqual(fetch.calls, [("cap.example", 1965)])

    def test_blocked(self) -> None:
        """A path a rule covers fails with BlockedByRobots: not temporary, rule in meta."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/private/diary.gmi"])
        fetch.answer(DISALLOW_PRIVATE)
        error = self.failureResultOf(d, BlockedByRobots).value
        self.assertEqual(error.code, "BLOCKED_BY_ROBOTS")
        self.assertFalse(error.temporary)
        self.assertEqual(error.meta, "Disallow: /private")
        self.assertIn("operator", error.message)
        self.assertIn("another spelling", error.next_step)

    def test_blocked_meta_is_sanitised(self) -> None:
        """The quoted rule is server text: control and bidi characters are dropped."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/p\u202eq\x1b[31m/x"])
        fetch.answer("User-agent: *\nDisallow: /p\u202eq\x1b[31m\n".encode())
        self.assertEqual(self.failureResultOf(d, BlockedByRobots).value.meta, "Disallow: /pq")

    def test_no_policy(self) -> None:
        """None from the fetch (Gemini 51) means no rules: everything is allowed."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/"])
        fetch.answer(None)
        self.successResultOf(d)

    def test_ai_tokens_honoured(self) -> None:
        """Rules naming an AI crawler refuse when honor_ai_tokens is on."""
        robots, fetch, _ = gate(honor_ai_tokens=True)
        d = robots.check("cap.example", 1965, ["/x"])
        fetch.answer(b"User-agent: GPTBot\nDisallow: /\n")
        self.failureResultOf(d, BlockedByRobots)

    def test_ai_tokens_ignored_when_off(self) -> None:
        """Rules naming an AI crawler are ignored when honor_ai_tokens is off."""
        robots, fetch, _ = gate(honor_ai_tokens=False)
        d = robots.check("cap.example", 1965, ["/x"])
        fetch.answer(b"User-agent: GPTBot\nDisallow: /\n")
        self.successResultOf(d)

    def test_gopher_spellings(self) -> None:
        """A Gopher gate refuses a type-1 /archive selector under a 1/archive rule."""
        robots, fetch, _ = gate(fail_open=True)
        d = robots.check("hole.example", 70, gopher_robot_paths("1", "/archive/2020"))
        fetch.answer(b"User-agent: *\nDisallow: 1/archive\n")
        self.failureResultOf(d, BlockedByRobots)

    def test_gopher_content_without_groups(self) -> None:
        """On Gopher an error page or menu served for robots.txt imposes no rules."""
        robots, fetch, _ = gate(fail_open=True)
        d = robots.check("hole.example", 70, ["/"])
        fetch.answer(b"3 '/robots.txt' doesn't exist!\terror.host\t1\r\n.\r\n")
        self.successResultOf(d)

    def test_synchronous_fetch(self) -> None:
        """A fetch that answers at once decides the check at once."""
        clock = Clock()
        robots = RobotsGate(
            clock, lambda h, p: succeed(DISALLOW_PRIVATE), fail_open=False, agents=GEMINI_AGENTS
        )
        self.failureResultOf(robots.check("c.example", 1965, ["/private"]), BlockedByRobots)
        self.successResultOf(robots.check("c.example", 1965, ["/public"]))

    def test_synchronous_fetch_ttl_zero(self) -> None:
        """With a TTL of 0 and a synchronous fetch, each check probes once and decides."""
        calls: list[str] = []

        def fetch(host: str, port: int) -> Deferred[bytes | None]:
            calls.append(host)
            return succeed(DISALLOW_PRIVATE)

        robots = RobotsGate(Clock(), fetch, fail_open=False, agents=GEMINI_AGENTS, ttl=0)
        self.failureResultOf(robots.check("c.example", 1965, ["/private"]), BlockedByRobots)
        self.successResultOf(robots.check("c.example", 1965, ["/public"]))
        self.assertEqual(calls, ["c.example", "c.example"])

    def test_fetch_raising(self) -> None:
        """A fetch function that raises counts as a failed probe, never escapes."""

        def fetch(host: str, port: int) -> Deferred[bytes | None]:
            raise ConnectionFailed(message="No route.")

        robots = RobotsGate(Clock(), fetch, fail_open=False, agents=GEMINI_AGENTS)
        error = self.failureResultOf(robots.check("c.example", 1965, ["/"]), RobotsUnavailable)
        self.assertIn("CONNECTION_FAILED", error.value.message)


class CacheTests(SynchronousTestCase):
    def test_cached_per_host(self) -> None:
        """A second check of the same host within the TTL does not probe again."""
        robots, fetch, clock = gate()
        d1 = robots.check("cap.example", 1965, ["/a"])
        fetch.answer(DISALLOW_PRIVATE)
        self.successResultOf(d1)
        clock.advance(86399)
        self.failureResultOf(robots.check("CAP.example", 1965, ["/private"]), BlockedByRobots)
        self.assertEqual(len(fetch.calls), 1)

    def test_ttl_expiry(self) -> None:
        """After the TTL the next check probes again and uses the new file."""
        robots, fetch, clock = gate()
        d1 = robots.check("cap.example", 1965, ["/private"])
        fetch.answer(DISALLOW_PRIVATE)
        self.failureResultOf(d1, BlockedByRobots)
        clock.advance(86400)
        d2 = robots.check("cap.example", 1965, ["/private"])
        self.assertNoResult(d2)
        fetch.answer(b"")
        self.successResultOf(d2)
        self.assertEqual(len(fetch.calls), 2)

    def test_hosts_and_ports_are_separate(self) -> None:
        """Each host:port has its own robots.txt."""
        robots, fetch, _ = gate()
        robots.check("a.example", 1965, ["/"])
        robots.check("b.example", 1965, ["/"])
        robots.check("a.example", 1966, ["/"])
        self.assertEqual(
            fetch.calls, [("a.example", 1965), ("b.example", 1965), ("a.example", 1966)]
        )

    def test_forget(self) -> None:
        """forget() makes the next check probe again."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/"])
        fetch.answer(b"")
        self.successResultOf(d)
        robots.forget("cap.example", 1965)
        robots.check("cap.example", 1965, ["/"])
        self.assertEqual(len(fetch.calls), 2)

    def test_max_hosts(self) -> None:
        """Only max_hosts hosts are remembered; the least recently used goes first."""
        clock = Clock()
        fetch = FakeRobotsFetch()
        robots = RobotsGate(clock, fetch, fail_open=False, agents=GEMINI_AGENTS, max_hosts=2)
        for host in ("a", "b"):
            d = robots.check(host, 1965, ["/"])
            fetch.answer(b"")
            self.successResultOf(d)
        self.successResultOf(robots.check("a", 1965, ["/"]))  # a is now most recent
        d = robots.check("c", 1965, ["/"])
        fetch.answer(b"")
        self.successResultOf(d)
        robots.check("a", 1965, ["/"])
        self.assertEqual(len(fetch.calls), 3)
        robots.check("b", 1965, ["/"])
        self.assertEqual(len(fetch.calls), 4)


class ConcurrencyTests(SynchronousTestCase):
    def test_one_probe_under_concurrency(self) -> None:
        """Concurrent checks of one host share one probe, each decided on its own paths."""
        robots, fetch, _ = gate()
        checks = [robots.check("cap.example", 1965, [p]) for p in ("/a", "/private", "/b")]
        self.assertEqual(len(fetch.calls), 1)
        for d in checks:
            self.assertNoResult(d)
        fetch.answer(DISALLOW_PRIVATE)
        self.successResultOf(checks[0])
        self.failureResultOf(checks[1], BlockedByRobots)
        self.successResultOf(checks[2])

    def test_concurrent_failure_reaches_every_waiter(self) -> None:
        """A failed shared probe refuses every waiting fail-closed check."""
        robots, fetch, _ = gate()
        checks = [robots.check("cap.example", 1965, ["/"]) for _ in range(3)]
        fetch.fail_with(ConnectionFailed(message="Refused."))
        for d in checks:
            self.failureResultOf(d, RobotsUnavailable)
        self.assertEqual(len(fetch.calls), 1)

    def test_cancel_one_waiter(self) -> None:
        """Cancelling one check fails it with CancelledError; the probe serves the others."""
        robots, fetch, _ = gate()
        first = robots.check("cap.example", 1965, ["/a"])
        second = robots.check("cap.example", 1965, ["/a"])
        first.cancel()
        self.failureResultOf(first, CancelledError)
        self.assertEqual(fetch.cancelled, 0)
        fetch.answer(b"")
        self.successResultOf(second)

    def test_cancel_last_waiter_cancels_probe(self) -> None:
        """When the last waiting check is cancelled, the probe is cancelled too."""
        robots, fetch, _ = gate()
        first = robots.check("cap.example", 1965, ["/a"])
        second = robots.check("cap.example", 1965, ["/a"])
        first.cancel()
        self.assertEqual(fetch.cancelled, 0)
        second.cancel()
        self.failureResultOf(first, CancelledError)
        self.failureResultOf(second, CancelledError)
        self.assertEqual(fetch.cancelled, 1)

    def test_cancelled_probe_leaves_nothing_behind(self) -> None:
        """An abandoned probe starts no back-off: the next check probes again."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/"])
        d.cancel()
        self.failureResultOf(d, CancelledError)
        again = robots.check("cap.example", 1965, ["/"])
        self.assertEqual(len(fetch.calls), 2)
        fetch.answer(b"")
        self.successResultOf(again)

    def test_waiter_cancelled_by_another_waiter(self) -> None:
        """A check cancelled from another check's callback is skipped, not fired twice."""
        robots, fetch, _ = gate()
        first = robots.check("cap.example", 1965, ["/"])
        second = robots.check("cap.example", 1965, ["/"])
        first.addCallback(lambda _: second.cancel())
        fetch.answer(b"")
        self.successResultOf(first)
        self.failureResultOf(second, CancelledError)

    def test_deadline_cancels_check(self) -> None:
        """A caller's addTimeout on a check cancels it and leaves the gate usable."""
        robots, fetch, clock = gate()
        d = robots.check("cap.example", 1965, ["/"])
        d.addTimeout(30, clock)
        clock.advance(30)
        self.failureResultOf(d, defer.TimeoutError)
        self.assertEqual(fetch.cancelled, 1)
        self.assertEqual(clock.getDelayedCalls(), [])


class FailClosedTests(SynchronousTestCase):
    def test_failure_names_the_cause(self) -> None:
        """A failed Gemini probe refuses with ROBOTS_UNAVAILABLE naming the real cause."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/"])
        fetch.fail_with(
            TemporaryError(message="The capsule is unavailable.", status=41, meta="maintenance")
        )
        error = self.failureResultOf(d, RobotsUnavailable).value
        self.assertEqual(error.code, "ROBOTS_UNAVAILABLE")
        self.assertIn("TEMPORARY_ERROR", error.message)
        self.assertEqual((error.status, error.meta), (41, "maintenance"))
        self.assertTrue(error.temporary)
        self.assertEqual(error.retry_after_seconds, 60)

    def test_cause_is_chained(self) -> None:
        """The probe's own error is the refusal's __cause__, during the back-off too."""
        robots, fetch, clock = gate()
        cause = ConnectionFailed(message="Refused.")
        d = robots.check("cap.example", 1965, ["/"])
        fetch.fail_with(cause)
        self.assertIs(self.failureResultOf(d, RobotsUnavailable).value.__cause__, cause)
        clock.advance(1)
        later = self.failureResultOf(robots.check("cap.example", 1965, ["/"]), RobotsUnavailable)
        self.assertIs(later.value.__cause__, cause)

    def test_backoff(self) -> None:
        """During the back-off checks are refused at once without probing; after it, probed."""
        robots, fetch, clock = gate()
        d = robots.check("cap.example", 1965, ["/"])
        fetch.fail_with(FetchTimeout(message="Too slow.", temporary=True))
        self.failureResultOf(d, RobotsUnavailable)
        clock.advance(45.5)
        error = self.failureResultOf(robots.check("cap.example", 1965, ["/"]), RobotsUnavailable)
        self.assertIn("TIMEOUT", error.value.message)
        self.assertEqual(error.value.retry_after_seconds, 15)
        self.assertEqual(len(fetch.calls), 1)
        clock.advance(14.5)
        d = robots.check("cap.example", 1965, ["/"])
        self.assertEqual(len(fetch.calls), 2)
        fetch.answer(b"")
        self.successResultOf(d)

    def test_slow_down_uses_its_own_wait(self) -> None:
        """A 44 on the probe backs the host off for the capsule's own wait, not the default."""
        robots, fetch, clock = gate()
        d = robots.check("cap.example", 1965, ["/"])
        fetch.fail_with(SlowDown(message="Slow down.", status=44, retry_after_seconds=300))
        self.assertEqual(self.failureResultOf(d, RobotsUnavailable).value.retry_after_seconds, 300)
        clock.advance(299)
        self.failureResultOf(robots.check("cap.example", 1965, ["/"]), RobotsUnavailable)
        self.assertEqual(len(fetch.calls), 1)
        clock.advance(1)
        robots.check("cap.example", 1965, ["/"])
        self.assertEqual(len(fetch.calls), 2)

    def test_twisted_timeout_is_reported_as_timeout(self) -> None:
        """A Twisted TimeoutError from the probe is reported as our TIMEOUT."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/"])
        fetch.fail_with(defer.TimeoutError())
        self.assertIn("TIMEOUT", self.failureResultOf(d, RobotsUnavailable).value.message)

    def test_unexpected_failure(self) -> None:
        """An unexpected exception from the probe refuses with our words and is logged."""
        robots, fetch, _ = gate()
        d = robots.check("cap.example", 1965, ["/"])
        fetch.fail_with(ZeroDivisionError())
        error = self.failureResultOf(d, RobotsUnavailable).value
        self.assertIn("FETCH_ERROR", error.message)
        self.assertNotIn("ZeroDivision", error.message)
        self.assertEqual(len(self.flushLoggedErrors(ZeroDivisionError)), 1)

    def test_zero_backoff(self) -> None:
        """With no back-off configured, a failure is refused and the next check probes."""
        robots = RobotsGate(
            Clock(),
            lambda h, p: fail(ConnectionFailed(message="Refused.")),
            fail_open=False,
            agents=GEMINI_AGENTS,
            failure_backoff=0,
        )
        error = self.failureResultOf(robots.check("c", 1965, ["/"]), RobotsUnavailable).value
        self.assertIsNone(error.retry_after_seconds)


class FailOpenTests(SynchronousTestCase):
    def test_failure_passes(self) -> None:
        """A failed Gopher probe means no rules: the check passes."""
        robots, fetch, _ = gate(fail_open=True)
        d = robots.check("hole.example", 70, ["/"])
        fetch.fail_with(ConnectionFailed(message="Refused."))
        self.successResultOf(d)

    def test_backoff_passes_without_probing(self) -> None:
        """During a Gopher back-off checks pass at once and nothing is probed."""
        robots, fetch, clock = gate(fail_open=True)
        d = robots.check("hole.example", 70, ["/"])
        fetch.fail_with(ConnectionFailed(message="Refused."))
        self.successResultOf(d)
        clock.advance(59)
        self.successResultOf(robots.check("hole.example", 70, ["/private"]))
        self.assertEqual(len(fetch.calls), 1)
        clock.advance(1)
        robots.check("hole.example", 70, ["/"])
        self.assertEqual(len(fetch.calls), 2)


class ConfigTests(SynchronousTestCase):
    def test_for_gopher(self) -> None:
        """for_gopher builds a fail-open gate with the Gopher agents and the config's numbers."""
        config = GopherConfig(
            robots_honor_ai_tokens=False,
            robots_cache_ttl_seconds=10,
            robots_failure_backoff_seconds=5,
        )
        robots = RobotsGate.for_gopher(Clock(), FakeRobotsFetch(), config)
        self.assertTrue(robots.fail_open)
        self.assertEqual(robots.effective_agents, GOPHER_AGENTS)
        self.assertEqual((robots.ttl, robots.failure_backoff), (10, 5))

    def test_for_gemini(self) -> None:
        """for_gemini builds a fail-closed gate with the Gemini agents and AI tokens."""
        robots = RobotsGate.for_gemini(Clock(), FakeRobotsFetch(), GeminiConfig())
        self.assertFalse(robots.fail_open)
        self.assertEqual(robots.effective_agents[:4], GEMINI_AGENTS)
        self.assertIn("GPTBot", robots.effective_agents)
        self.assertEqual((robots.ttl, robots.failure_backoff), (86400, 60))


import pytest  # noqa: E402


@pytest.mark.parametrize("fail_open", [True, False])
def test_target_errors_pass_through_unremembered(fail_open: bool) -> None:
    """A probe refused for the target itself (SSRF, DNS, a new key) reports that, unremembered."""
    from twisted.internet.defer import fail
    from twisted.internet.task import Clock

    from gophergem.errors import BlockedError, CertificateChanged
    from gophergem.policy.robots import RobotsGate
    from gophergem.wire.robots import GEMINI_AGENTS

    calls = []

    def fetch(host: str, port: int):  # type: ignore[no-untyped-def]
        calls.append(host)
        error = BlockedError(message="no") if len(calls) == 1 else CertificateChanged(message="k")
        return fail(error)

    gate = RobotsGate(Clock(), fetch, fail_open, GEMINI_AGENTS)
    seen: list[object] = []
    gate.check("h", 1965, ["/"]).addErrback(lambda f: seen.append(f.value))
    gate.check("h", 1965, ["/"]).addErrback(lambda f: seen.append(f.value))
    assert [type(e) for e in seen] == [BlockedError, CertificateChanged]
    assert len(calls) == 2
