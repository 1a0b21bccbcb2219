"""
Tests for L{gophergem.feeds.checker.FeedCheckService}, the daemon's periodic check
of the subscriptions, on a fake clock: when it runs, that runs never
overlap, what it logs, and that it stops cleanly; and for its wiring in
L{gophergem.service.makeService} (HTTP only, the MCP server's own follower).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from twisted.internet.defer import Deferred, succeed
from twisted.internet.task import Clock
from twisted.internet.testing import MemoryReactorClock
from twisted.logger import LogLevel, globalLogPublisher

from gophergem import service
from gophergem.config import Config
from gophergem.errors import FeedStoreUnavailable, FetchTimeout
from gophergem.feeds.checker import FeedCheckService
from gophergem.feeds.follow import FeedError, Follower
from gophergem.feeds.parse import Entry
from gophergem.http.endpoint import health_checks
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import FakeGeminiServer, MemoryNetwork

INTERVAL = 600
NOW = 1_800_000_000.0


@attrs.define
class FakeFollower:
    """A follower whose checks finish when the test says; counts them."""

    store: MemoryFeedStore = attrs.field(factory=MemoryFeedStore)
    checks: list[Deferred[list[FeedError]]] = attrs.field(factory=list)
    cancelled: int = 0

    def check_all(self) -> Deferred[list[FeedError]]:
        def cancel(d: Deferred[list[FeedError]]) -> None:
            self.cancelled += 1

        d: Deferred[list[FeedError]] = Deferred(cancel)
        self.checks.append(d)
        return d


@pytest.fixture
def events() -> Any:
    """The log events emitted during the test."""
    seen: list[dict[str, Any]] = []
    globalLogPublisher.addObserver(seen.append)
    yield seen
    globalLogPublisher.removeObserver(seen.append)


def started(follower: Any, clock: Clock | None = None) -> tuple[FeedCheckService, Clock]:
    clock = clock or Clock()
    checks = FeedCheckService(follower, clock, INTERVAL)
    checks.startService()
    return checks, clock


def test_first_check_after_one_interval() -> None:
    """Nothing is checked at start-up; the first check runs one interval later."""
    follower = FakeFollower()
    _, clock = started(follower)
    clock.advance(INTERVAL - 1)
    assert follower.checks == []
    clock.advance(1)
    assert len(follower.checks) == 1


def test_checks_repeat_every_interval() -> None:
    """After a check has finished, the next runs at the next interval."""
    follower = FakeFollower()
    _, clock = started(follower)
    for n in range(1, 4):
        clock.advance(INTERVAL)
        assert len(follower.checks) == n
        follower.checks[-1].callback([])


def test_runs_never_overlap() -> None:
    """A check still running when the next is due delays it: never two at once."""
    follower = FakeFollower()
    _, clock = started(follower)
    clock.advance(INTERVAL)
    clock.advance(INTERVAL * 3)
    assert len(follower.checks) == 1
    follower.checks[0].callback([])
    clock.advance(INTERVAL)
    assert len(follower.checks) == 2


def test_stop_ends_the_schedule() -> None:
    """Once stopped, no check runs again."""
    follower = FakeFollower()
    checks, clock = started(follower)
    stopped = checks.stopService()
    assert stopped.called
    clock.advance(INTERVAL * 10)
    assert follower.checks == []
    assert clock.getDelayedCalls() == []


def test_stop_cancels_a_check_in_flight() -> None:
    """Stopping during a check cancels it, and the stop waits for it to settle."""
    follower = FakeFollower()
    checks, clock = started(follower)
    clock.advance(INTERVAL)
    stopped = checks.stopService()
    assert stopped.called
    assert follower.cancelled == 1
    clock.advance(INTERVAL * 10)
    assert len(follower.checks) == 1
    assert clock.getDelayedCalls() == []


def test_summary_and_failures_are_logged(events: list[dict[str, Any]]) -> None:
    """Each run logs one summary line, and each failed feed one warning without a traceback."""
    follower = FakeFollower()
    follower.store.subscribe("gopher://a.example/1/", "A", "phlog", [], NOW)
    follower.store.subscribe("gopher://b.example/1/", "B", "phlog", [], NOW)
    _, clock = started(follower)
    clock.advance(INTERVAL)
    entry = Entry(url="gopher://a.example/0/new", title="New", published=None)
    follower.store.record_check("gopher://a.example/1/", [entry], NOW + INTERVAL)
    follower.checks[0].callback([FeedError("gopher://b.example/1/", FetchTimeout(message="slow"))])
    warnings = [e for e in events if e.get("log_level") == LogLevel.warn]
    assert [(e["url"], e["code"]) for e in warnings] == [("gopher://b.example/1/", "TIMEOUT")]
    assert not any("log_failure" in e for e in events)
    (summary,) = [e for e in events if e.get("log_format", "").startswith("feeds: checked")]
    assert (summary["checked"], summary["new"], summary["failed"]) == (2, 1, 1)


def test_a_failed_run_keeps_the_schedule(events: list[dict[str, Any]]) -> None:
    """A run that fails as a whole (the store unavailable) is one warning; the next still runs."""
    follower = FakeFollower()
    _, clock = started(follower)
    clock.advance(INTERVAL)
    follower.checks[0].errback(FeedStoreUnavailable(message="The store could not be locked."))
    (warning,) = [e for e in events if e.get("log_level") == LogLevel.warn]
    assert warning["code"] == "STATE_UNAVAILABLE"
    assert "log_failure" not in warning
    clock.advance(INTERVAL)
    assert len(follower.checks) == 2


def test_on_checked_after_each_run() -> None:
    """on_checked is called after each run, so the MCP layer can announce the change."""
    follower = FakeFollower()
    checks, clock = started(follower)
    calls: list[None] = []
    checks.on_checked = lambda: calls.append(None)
    clock.advance(INTERVAL)
    assert calls == []
    follower.checks[0].callback([])
    assert calls == [None]


def test_interval_must_be_positive() -> None:
    """An interval of 0 (never) is no service at all: makeService does not build one."""
    with pytest.raises(ValueError, match="more than 0"):
        FeedCheckService(FakeFollower(), Clock(), 0)  # type: ignore[arg-type]


def config(tmp_path: Path, interval: int) -> Config:
    return Config.from_mapping(
        {
            "GEMINI_TOFU_ENABLED": "false",
            "GEMINI_CLIENT_CERTS_ENABLED": "false",
            "GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json"),
            "GOPHERGEM_FEEDS_CHECK_INTERVAL_SECONDS": str(interval),
        }
    )


def test_http_service_checks_with_the_servers_follower(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under HTTP with an interval, the check service uses the MCP server's own follower."""
    import gophergem.mcp.server

    seen: dict[str, Follower] = {}
    build = gophergem.mcp.server.build_server

    def build_server(*args: Any, follower: Follower, **kwargs: Any) -> Any:
        seen["follower"] = follower
        return build(*args, follower=follower, **kwargs)

    monkeypatch.setattr(gophergem.mcp.server, "build_server", build_server)
    top = service.makeService(
        config(tmp_path, 900),
        MemoryReactorClock(),
        transport="http",
        endpoint="tcp:0:interface=127.0.0.1",
    )
    checks = top.getServiceNamed("feeds")
    assert isinstance(checks, FeedCheckService)
    assert checks.follower is seen["follower"]
    assert checks.interval == 900
    assert callable(checks.on_checked)  # announces gophergem://feeds/updates


def test_the_daemon_checks_hourly_by_default(tmp_path: Path) -> None:
    """Under HTTP with no interval set, subscriptions are checked every hour."""
    settings = {"GOPHERGEM_FEEDS_STORAGE_PATH": str(tmp_path / "feeds.json")}
    top = service.makeService(
        Config.from_mapping(settings),
        MemoryReactorClock(),
        transport="http",
        endpoint="tcp:0:interface=127.0.0.1",
    )
    assert top.getServiceNamed("feeds").interval == service.DEFAULT_FEEDS_CHECK_SECONDS == 3600


@pytest.mark.parametrize(("transport", "interval"), [("http", 0), ("stdio", 900)])
def test_no_check_service(tmp_path: Path, transport: str, interval: int) -> None:
    """With the interval 0 (never), or on stdio whatever it is, there is no periodic check."""
    top = service.makeService(config(tmp_path, interval), MemoryReactorClock(), transport=transport)
    with pytest.raises(KeyError):
        top.getServiceNamed("feeds")


def test_every_principal_is_checked_and_told(events: Any) -> None:
    """
    With authentication, each other principal's subscriptions are checked
    after the owner's, and each principal is told of their own check; one
    log line counts them all.
    """
    owner, alice = FakeFollower(), FakeFollower()
    checks, clock = started(owner)
    told: list[object] = []

    async def others() -> list[tuple[str, Any]]:
        return [("token:alice", alice)]

    checks.others = others
    checks.on_checked = lambda: told.append(None)
    checks.on_checked_for = told.append
    clock.advance(INTERVAL)
    owner.checks[-1].callback([])
    assert told == [None]
    assert len(alice.checks) == 1
    alice.checks[-1].callback([])
    assert told == [None, "token:alice"]
    said = [e for e in events if e.get("log_format", "").startswith("feeds: checked")]
    assert len(said) == 1


@pytest.mark.parametrize(
    ("error", "traceback"),
    [
        (ValueError("not an ISO 8601 date or time: '999-06-01T00:00:00Z'"), True),
        (FeedStoreUnavailable(message="The store could not be locked."), False),
    ],
)
def test_one_person_failing_stops_no_one(
    events: list[dict[str, Any]], error: Exception, traceback: bool
) -> None:
    """
    Issue 21: a person whose check fails as a whole (a bug, or their store
    down) is logged once; everyone after them is still checked and told,
    and the summary counts the failure.
    """
    owner, bob, carol = FakeFollower(), FakeFollower(), FakeFollower()
    carol.store.subscribe("gopher://c.example/1/", "C", "phlog", [], NOW)
    checks, clock = started(owner)
    told: list[object] = []

    async def others() -> list[tuple[str, Any]]:
        return [("token:bob", bob), ("token:carol", carol)]

    checks.others = others
    checks.on_checked_for = told.append
    clock.advance(INTERVAL)
    owner.checks[-1].callback([])
    bob.checks[-1].errback(error)
    assert len(carol.checks) == 1
    carol.checks[-1].callback([])
    assert told == ["token:bob", "token:carol"]
    about_bob = [e for e in events if e.get("who") == "token:bob"]
    assert len(about_bob) == 1
    assert ("log_failure" in about_bob[0]) is traceback
    (summary,) = [e for e in events if e.get("log_format", "").startswith("feeds: checked")]
    assert (summary["checked"], summary["failed"]) == (1, 1)
    clock.advance(INTERVAL)
    assert [len(f.checks) for f in (owner, bob, carol)] == [2, 1, 1]


def test_the_owner_failing_stops_no_one(events: list[dict[str, Any]]) -> None:
    """The owner's failed check does not keep the other principals from theirs."""
    owner, alice = FakeFollower(), FakeFollower()
    checks, clock = started(owner)

    async def others() -> list[tuple[str, Any]]:
        return [("token:alice", alice)]

    checks.others = others
    clock.advance(INTERVAL)
    owner.checks[-1].errback(RuntimeError("a bug"))
    assert len(alice.checks) == 1


def test_listing_the_others_failing_is_logged(events: list[dict[str, Any]]) -> None:
    """Should listing the other principals fail, the owner's check still counts and is logged."""
    owner = FakeFollower()
    checks, clock = started(owner)

    async def others() -> list[tuple[str, Any]]:
        raise FeedStoreUnavailable(message="The database is down.")

    checks.others = others
    clock.advance(INTERVAL)
    owner.checks[-1].callback([])
    warnings = [e for e in events if e.get("log_level") == LogLevel.warn]
    assert [e["code"] for e in warnings] == ["STATE_UNAVAILABLE"]
    assert any(e.get("log_format", "").startswith("feeds: checked") for e in events)


def test_a_bad_feed_stops_no_one(events: list[dict[str, Any]]) -> None:
    """
    Issue 21, end to end on a memory network: bob follows a feed dated 0999
    and one whose check hits a bug; carol, checked after him, gets her new
    post, and the schedule goes on.
    """
    import gophergem.feeds.follow
    from tests.helpers.feeds import BASE, GEMINI_IP, OLD_ATOM, gemtext

    net = MemoryNetwork()
    net.resolver.add("localhost", GEMINI_IP)
    capsule = net.listen_gemini(
        GEMINI_IP,
        1965,
        FakeGeminiServer({"/old.xml": OLD_ATOM, "/bug/": gemtext(), "/carol/": gemtext()}),
    )
    fetcher = net.fetcher()
    owner, bob, carol = (
        Follower(fetcher, MemoryFeedStore(), now=net.reactor.seconds) for _ in range(3)
    )
    for follower, path in ((bob, "/old.xml"), (bob, "/bug/"), (carol, "/carol/")):
        net.run(follower.subscribe(f"{BASE}{path}"))
    real = gophergem.feeds.follow.detect_feed

    def detect(url: str, **kwargs: Any) -> Any:
        if url.endswith("/bug/"):
            raise RuntimeError("a bug")
        return real(url, **kwargs)

    capsule.routes["/carol/"] = gemtext("=> /new.gmi 2026-12-01 New")
    checks = FeedCheckService(owner, net.reactor, INTERVAL)

    async def others() -> list[tuple[str, Any]]:
        return [("token:bob", bob), ("token:carol", carol)]

    checks.others = others
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(gophergem.feeds.follow, "detect_feed", detect)
        net.run(checks.run_once())
    assert net.run(carol.subscriptions())[0].unread == 1
    errors = {s.url: s.last_error for s in net.run(bob.subscriptions())}
    assert errors == {f"{BASE}/old.xml": None, f"{BASE}/bug/": "FETCH_ERROR"}
    (summary,) = [e for e in events if e.get("log_format", "").startswith("feeds: checked")]
    assert (summary["checked"], summary["new"], summary["failed"]) == (3, 1, 1)
    assert len([e for e in events if "log_failure" in e]) == 1


def test_health_checks_name_the_failing_backends() -> None:
    """What /health asks: each backend's health, by kind; a backend that raises fails too."""

    @attrs.define
    class Backend:
        answer: Any

        def health(self) -> Any:
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    found: list[object] = []
    health_checks(Backend({"ok": True}), Backend({"ok": False}))().addCallback(found.append)
    health_checks(Backend(RuntimeError("down")), None)().addCallback(found.append)
    health_checks(object(), Backend({"ok": True}))().addCallback(found.append)
    assert found == [["redis"], ["postgresql"], []]


def test_a_replica_checks_only_when_it_has_the_turn() -> None:
    """With replicas, a run whose turn another replica took checks nothing."""
    follower = FakeFollower()
    checks, clock = started(follower)
    turns = [False, True]
    checks.claim = lambda: succeed(turns.pop(0))
    clock.advance(INTERVAL)
    assert follower.checks == []
    clock.advance(INTERVAL)
    assert len(follower.checks) == 1
