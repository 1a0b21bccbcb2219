"""
Tests for L{gophergem.feeds.follow}: a L{Follower} reading fake capsules and
gopher holes on an in-memory network (real TLS, fake clock), with a memory
store.  What a page is, the baseline, what counts as new, failures that are
reported rather than raised, redirects, and reading page by window.  Every
test runs three times: with the stores answering at once, with Deferreds,
and with Deferreds that wait for the clock (L{tests.helpers.deferring}).
"""

from __future__ import annotations

import contextlib
from collections.abc import Coroutine
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.task import Clock
from twisted.logger import globalLogPublisher

from gophergem.errors import FetchTimeout, GophergemError
from gophergem.feeds.follow import MAX_REDIRECTS, Follower, Updates
from gophergem.fetcher import Fetcher
from gophergem.fetcher._pipeline import run_inline
from gophergem.results import FetchFailure
from gophergem.state.memory import MemoryFeedStore
from gophergem.testing import FakeGeminiServer, FakeGopherServer, MemoryNetwork
from tests.helpers import deferring
from tests.helpers.deferring import answers
from tests.helpers.feeds import (
    BASE,
    CACHE_TTL,
    GEMINI_IP,
    GEMLOG,
    GOPHER_IP,
    HOLE,
    INJECTION,
    OLD_ATOM,
    PHLOG,
    gemtext,
)
from tests.helpers.offload import HeldOffload

#: Every test runs with the feed store, the fetcher's stores, caches and 44
#: board answering plainly, with Deferreds, and with Deferreds on the clock.
pytestmark = pytest.mark.usefixtures("answers")
__all__ = ["answers"]


ATOM = (
    b"20 application/atom+xml\r\n"
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<feed xmlns="http://www.w3.org/2005/Atom"><title>Atomic capsule</title>'
    b"<id>gemini://localhost/atom.xml</id><updated>2026-11-30T10:00:00Z</updated>"
    b'<entry><title>First</title><link href="/posts/1.gmi"/>'
    b"<id>gemini://localhost/posts/1.gmi</id><updated>2026-11-01T10:00:00Z</updated></entry>"
    b'<entry><title>Second</title><link href="gemini://localhost/posts/2.gmi"/>'
    b"<id>gemini://localhost/posts/2.gmi</id><updated>2026-11-30T10:00:00Z</updated></entry>"
    b"</feed>"
)
RSS = (
    b"20 application/rss+xml\r\n"
    b'<?xml version="1.0"?><rss version="2.0"><channel><title>Really simple</title>'
    b"<item><title>Item</title><link>gemini://localhost/rss/1.gmi</link>"
    b"<pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item>"
    b"</channel></rss>"
)
PAGE = b"20 text/gemini\r\n# Links\n=> /a.gmi A\n=> gemini://elsewhere.example/ B\n"


@attrs.define
class World:
    """A capsule (localhost) and a gopher hole (g.example) on one memory network."""

    net: MemoryNetwork
    capsule: FakeGeminiServer
    hole: FakeGopherServer
    follower: Follower

    def run(self, work: Deferred[Any] | Coroutine[Any, Any, Any]) -> Any:
        if not isinstance(work, Deferred):
            work = Deferred.fromCoroutine(work)
        return self.net.run(work)

    def fails(self, work: Deferred[Any] | Coroutine[Any, Any, Any]) -> GophergemError:
        with pytest.raises(GophergemError) as caught:
            self.run(work)
        return caught.value

    def later(self, seconds: float = CACHE_TTL + 1) -> None:
        """Let time pass, past the cache's freshness, so the next check fetches anew."""
        self.net.reactor.advance(seconds)

    def updates(self, **options: Any) -> Updates:
        result: Updates = self.run(self.follower.updates(**options))
        return result


def world(
    routes: dict[str, Any] | None = None,
    menus: dict[bytes, Any] | None = None,
    *,
    gemini: dict[str, Any] | None = None,
    **gopher: Any,
) -> World:
    net = MemoryNetwork()
    net.resolver.add("localhost", GEMINI_IP)
    net.resolver.add("g.example", GOPHER_IP)
    capsule = net.listen_gemini(GEMINI_IP, 1965, FakeGeminiServer(dict(routes or {})))
    hole = net.listen(GOPHER_IP, 70, FakeGopherServer(dict(menus or {})))
    fetcher = net.fetcher(gemini=gemini, **gopher)
    store = deferring.wrap(MemoryFeedStore(), deferring.CURRENT, net.reactor)
    follower = Follower(fetcher, store, now=net.reactor.seconds)
    return World(net, capsule, hole, follower)


# --- what a page is ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "feed_type", "title", "known"),
    [
        (f"{BASE}/gemlog/", "gemsub", "My gemlog", 2),
        (f"{BASE}/atom.xml", "atom", "Atomic capsule", 2),
        (f"{BASE}/rss.xml", "rss", "Really simple", 1),
        (f"{HOLE}/1/phlog", "phlog", "My phlog", 2),
        (f"{BASE}/page.gmi", "page", "Links", 2),
    ],
)
def test_subscribe_detects_what_the_page_is(
    url: str, feed_type: str, title: str, known: int
) -> None:
    """Subscribing reads the page once and tells a gemlog, Atom, RSS, phlog and plain page apart."""
    w = world(
        {"/gemlog/": GEMLOG, "/atom.xml": ATOM, "/rss.xml": RSS, "/page.gmi": PAGE},
        {b"/phlog": PHLOG},
    )
    subscription, new = w.run(w.follower.subscribe(url))
    assert new is True
    assert (subscription.url, subscription.feed_type) == (url, feed_type)
    assert subscription.title == title
    assert (subscription.entries_known, subscription.unread) == (known, 0)
    assert w.run(w.follower.subscriptions()) == [subscription]


def test_atom_entries_resolved_and_dated() -> None:
    """An Atom feed served over Gemini gives absolute links and its own dates."""
    w = world({"/atom.xml": ATOM})
    _, feed = w.run(w.follower.read(f"{BASE}/atom.xml"))
    assert [(e.url, e.title, e.published) for e in feed.entries] == [
        (f"{BASE}/posts/1.gmi", "First", "2026-11-01T10:00:00Z"),
        (f"{BASE}/posts/2.gmi", "Second", "2026-11-30T10:00:00Z"),
    ]


def test_phlog_entries() -> None:
    """A dated phlog menu gives its dated items, the date taken out of the title."""
    w = world(menus={b"/phlog": PHLOG})
    _, feed = w.run(w.follower.read(f"{HOLE}/1/phlog"))
    assert [(e.url, e.title, e.published) for e in feed.entries] == [
        (f"{HOLE}/0/phlog/20261130-cold.txt", "Cold days", "2026-11-30T12:00:00Z"),
        (f"{HOLE}/0/phlog/20261002-warm.txt", "Warm days", "2026-10-02T12:00:00Z"),
    ]


def test_subscribe_twice() -> None:
    """Subscribing again is no new subscription; it keeps what was seen and takes a new title."""
    w = world({"/gemlog/": GEMLOG})
    first, new = w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    again, new_again = w.run(w.follower.subscribe(f"{BASE}/gemlog/", "Mine"))
    assert (new, new_again) == (True, False)
    assert again.title == "Mine"
    assert again.added == first.added and again.entries_known == 2
    assert len(w.run(w.follower.subscriptions())) == 1


def test_subscribe_canonical_key() -> None:
    """Two spellings of one URL are one subscription."""
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.subscribe("gemini://LOCALHOST:1965/gemlog/"))
    _, new = w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    assert new is False
    assert [s.url for s in w.run(w.follower.subscriptions())] == [f"{BASE}/gemlog/"]


@pytest.mark.parametrize(
    ("url", "code"),
    [
        ("gemini://nowhere.example/", "DNS_ERROR"),
        ("gemini://localhost/missing", "PERMANENT_ERROR"),
        ("gopher://g.example:7070/1/", "CONNECTION_FAILED"),
        ("https://example.org/feed.xml", "INVALID_REQUEST"),
        ("not a url", "INVALID_REQUEST"),
        ("", "INVALID_REQUEST"),
        ("gemini://localhost/ask", "NOT_FETCHABLE"),
        ("gemini://localhost/png", "NOT_FETCHABLE"),
    ],
)
def test_subscribe_refused(url: str, code: str) -> None:
    """A page that cannot be read is not followed: the fetch's own code, nothing stored."""
    w = world({"/ask": b"10 Your name?\r\n", "/png": b"20 image/png\r\n\x89PNG"})
    assert w.fails(w.follower.subscribe(url)).code == code
    assert w.run(w.follower.subscriptions()) == []


def test_subscribe_blocked() -> None:
    """A host the policy blocks is refused with BLOCKED before any connection."""
    w = world({"/gemlog/": GEMLOG}, gemini={"allow_local_hosts": False})
    w.net.resolver.add("localhost", "127.0.0.1")
    assert w.fails(w.follower.subscribe(f"{BASE}/gemlog/")).code == "BLOCKED"
    assert w.run(w.follower.subscriptions()) == [] and w.capsule.requests == []


def test_subscribe_blocked_by_robots() -> None:
    """A page robots.txt disallows is refused with BLOCKED_BY_ROBOTS; only robots.txt was read."""
    robots = b"20 text/plain\r\nUser-agent: *\r\nDisallow: /gemlog/\r\n"
    w = world({"/gemlog/": GEMLOG, "/robots.txt": robots}, gemini={"respect_robots_txt": True})
    assert w.fails(w.follower.subscribe(f"{BASE}/gemlog/")).code == "BLOCKED_BY_ROBOTS"
    assert w.run(w.follower.subscriptions()) == []
    assert w.capsule.requests == [b"gemini://localhost/robots.txt"]


def test_bad_title() -> None:
    """A title that is not text is refused."""
    w = world({"/gemlog/": GEMLOG})
    error = w.fails(w.follower.subscribe(f"{BASE}/gemlog/", 7))  # type: ignore[arg-type]
    assert error.code == "INVALID_REQUEST"


# --- what is new -----------------------------------------------------------------------


def test_updates_are_fresh() -> None:
    """
    Issue 21: what is new is what the capsule lists now, not a cached copy
    up to the cache's lifetime old; subscribing reads the cache like any
    fetch.
    """
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.fetcher.gemini(f"{BASE}/gemlog/"))  # the page, as a user saw it
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    assert len(w.capsule.requests) == 1
    w.capsule.routes["/gemlog/"] = GEMLOG + b"=> /gemlog/2026-12-01-new.gmi 2026-12-01 News\n"
    assert [e.title for e in w.updates().entries] == ["News"]
    assert len(w.capsule.requests) == 2
    w.capsule.routes["/gemlog/"] = GEMLOG + b"=> /gemlog/2026-12-02-more.gmi 2026-12-02 More\n"
    w.run(w.follower.check_all())  # the daemon's background check
    assert w.run(w.follower.subscriptions())[0].unread == 1
    assert len(w.capsule.requests) == 3


def test_fresh_checks_are_paced() -> None:
    """A burst of checks is paced per host like every fetch: fresh, never faster."""
    w = world({"/gemlog/": GEMLOG}, gemini={"requests_per_minute": 12})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    start = w.net.reactor.seconds()
    burst = [w.follower.updates() for _ in range(3)]
    outcomes = w.net.run(DeferredList(burst), advance=1)
    assert [ok and value.errors for ok, value in outcomes] == [(), (), ()]
    assert len(w.capsule.requests) == 4
    assert w.net.reactor.seconds() - start >= 3 * 5  # one request per 5 s to this host


def test_long_page_is_refreshed_once() -> None:
    """A fresh check of a page longer than one window downloads it once, not per window."""
    lines = [f"=> /p/{n:03d}.gmi 2026-01-{1 + n % 28:02d} Post {n}" for n in range(60)]
    w = world({"/gemlog/": gemtext(*lines)}, gemini={"max_rendered_chars": 2000})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    before = len(w.capsule.requests)
    found = w.updates()
    assert (found.errors, len(w.capsule.requests) - before) == ((), 1)


def test_baseline_then_new_entries() -> None:
    """What a page lists when subscribed is read; what appears later is new, and reported once."""
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    assert w.updates().entries == ()
    w.capsule.routes["/gemlog/"] = GEMLOG + b"=> /gemlog/2026-12-01-new.gmi 2026-12-01 News\n"
    w.later()
    found = w.updates()
    assert [(e.url, e.title, e.published) for e in found.entries] == [
        (f"{BASE}/gemlog/2026-12-01-new.gmi", "News", "2026-12-01T12:00:00Z")
    ]
    assert (found.entries[0].feed_url, found.entries[0].feed_title) == (
        f"{BASE}/gemlog/",
        "My gemlog",
    )
    assert (found.more, found.checked, found.errors) == (False, 1, ())
    w.later()
    assert w.updates().entries == ()  # read now


def test_page_new_links() -> None:
    """A plain page is followed for its new links; a link that left and came back is not new."""
    w = world({"/page.gmi": PAGE})
    w.run(w.follower.subscribe(f"{BASE}/page.gmi"))
    w.capsule.routes["/page.gmi"] = gemtext("=> /b.gmi Bee", title="Links")
    w.later()
    assert [e.url for e in w.updates().entries] == [f"{BASE}/b.gmi"]
    w.capsule.routes["/page.gmi"] = PAGE
    w.later()
    assert w.updates().entries == ()


def test_mark_read_false() -> None:
    """With mark_read=False the same entries come back next time."""
    w = world({"/gemlog/": gemtext()})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    w.capsule.routes["/gemlog/"] = gemtext("=> /1.gmi 2026-12-01 One")
    w.later()
    assert len(w.updates(mark_read=False).entries) == 1
    assert len(w.updates(mark_read=False).entries) == 1
    assert w.run(w.follower.subscriptions())[0].unread == 1
    assert len(w.updates().entries) == 1
    assert w.updates().entries == ()


def test_since() -> None:
    """With since, every entry dated after it comes back, read or not."""
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    found = w.updates(since="2026-11-01")
    assert [e.title for e in found.entries] == ["A post"]
    assert [e.title for e in w.updates(since="2026-01-01T00:00:00Z").entries] == [
        "A post",
        "An older post",
    ]
    assert w.updates(since="2027-01-01").entries == ()


def test_limit_and_more() -> None:
    """Newest first, at most limit; more says some were left, and they come next."""
    w = world({"/gemlog/": gemtext()})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    w.capsule.routes["/gemlog/"] = gemtext(
        "=> /1.gmi 2026-12-01 One", "=> /3.gmi 2026-12-03 Three", "=> /2.gmi 2026-12-02 Two"
    )
    w.later()
    first = w.updates(limit=2)
    assert ([e.title for e in first.entries], first.more) == (["Three", "Two"], True)
    second = w.updates(limit=2)
    assert ([e.title for e in second.entries], second.more) == (["One"], False)


@pytest.mark.parametrize(
    "options",
    [{"limit": 0}, {"limit": 501}, {"limit": True}, {"limit": "5"}, {"since": "yesterday"}],
)
def test_bad_options(options: dict[str, Any]) -> None:
    """A bad limit or since is INVALID_REQUEST, before anything is fetched."""
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    before = len(w.capsule.requests)
    assert w.fails(w.follower.updates(**options)).code == "INVALID_REQUEST"
    assert len(w.capsule.requests) == before


def test_failing_feed_is_reported_not_raised() -> None:
    """A feed that fails is an error in the answer; the others are still checked."""
    w = world({"/gemlog/": gemtext(), "/other/": gemtext()}, {b"/phlog": PHLOG})
    for url in (f"{BASE}/gemlog/", f"{BASE}/other/", f"{HOLE}/1/phlog"):
        w.run(w.follower.subscribe(url))
    w.capsule.routes["/gemlog/"] = gemtext("=> /1.gmi 2026-12-01 One")
    w.capsule.routes["/other/"] = b"51 Gone\r\n"
    w.hole.responses[b"/phlog"] = b"iNo dates here\tfake\t(NULL)\t0\r\n.\r\n"
    del w.net.servers[(GOPHER_IP, 70)]
    w.later()
    found = w.updates()
    assert [e.title for e in found.entries] == ["One"]
    assert found.checked == 3
    assert sorted((e.feed_url, e.error.code) for e in found.errors) == [
        (f"{BASE}/other/", "PERMANENT_ERROR"),
        (f"{HOLE}/1/phlog", "CONNECTION_FAILED"),
    ]
    errors = {s.url: s.last_error for s in w.run(w.follower.subscriptions())}
    assert errors == {
        f"{BASE}/gemlog/": None,
        f"{BASE}/other/": "PERMANENT_ERROR",
        f"{HOLE}/1/phlog": "CONNECTION_FAILED",
    }


def test_feed_dated_before_year_1000() -> None:
    """
    Issue 21: an Atom feed dated 0999 or 0001 is followed, its entries
    undated; checking it and every other feed still works.
    """
    w = world({"/old.xml": OLD_ATOM, "/gemlog/": GEMLOG})
    subscription, _ = w.run(w.follower.subscribe(f"{BASE}/old.xml"))
    assert (subscription.feed_type, subscription.entries_known) == ("atom", 2)
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    w.capsule.routes["/old.xml"] = OLD_ATOM.replace(b"/old/2.gmi", b"/old/3.gmi")
    w.capsule.routes["/gemlog/"] = GEMLOG + b"=> /gemlog/new.gmi 2026-12-01 News\n"
    w.later()
    found = w.updates()
    assert found.errors == ()
    assert sorted((e.title, e.published) for e in found.entries) == [
        ("News", "2026-12-01T12:00:00Z"),
        ("Zero time", None),
    ]


def test_unexpected_failure_is_that_feeds_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    Issue 21: any unexpected exception while checking one feed is that
    feed's error (logged once, with its traceback); the others are checked.
    """
    import gophergem.feeds.follow

    w = world({"/bad/": gemtext(), "/gemlog/": gemtext()})
    for path in ("/bad/", "/gemlog/"):
        w.run(w.follower.subscribe(f"{BASE}{path}"))
    real = gophergem.feeds.follow.detect_feed

    def detect(url: str, **kwargs: Any) -> Any:
        if "/bad/" in url:
            raise RuntimeError("a bug")
        return real(url, **kwargs)

    monkeypatch.setattr(gophergem.feeds.follow, "detect_feed", detect)
    w.capsule.routes["/gemlog/"] = gemtext("=> /1.gmi 2026-12-01 One")
    failures: list[dict[str, Any]] = []
    globalLogPublisher.addObserver(failures.append)
    try:
        found = w.updates()
    finally:
        globalLogPublisher.removeObserver(failures.append)
    assert [e.title for e in found.entries] == ["One"]
    assert [(e.feed_url, e.error.code) for e in found.errors] == [(f"{BASE}/bad/", "FETCH_ERROR")]
    logged = [e for e in failures if "log_failure" in e]
    assert len(logged) == 1 and logged[0]["url"] == f"{BASE}/bad/"
    last = {s.url: s.last_error for s in w.run(w.follower.subscriptions())}
    assert last == {f"{BASE}/bad/": "FETCH_ERROR", f"{BASE}/gemlog/": None}


def test_failing_feed_keeps_its_entries() -> None:
    """A failed check forgets nothing: when the page is back, only what is new is reported."""
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    w.capsule.routes["/gemlog/"] = b"40 Busy\r\n"
    w.later()
    assert [e.error.code for e in w.updates().errors] == ["TEMPORARY_ERROR"]
    w.capsule.routes["/gemlog/"] = GEMLOG
    w.later()
    found = w.updates()
    assert (found.entries, found.errors) == ((), ())
    assert w.run(w.follower.subscriptions())[0].last_error is None


def test_unsubscribe() -> None:
    """Unsubscribing forgets a page; again, or asking for its updates, is NOT_SUBSCRIBED."""
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    assert w.run(w.follower.unsubscribe("gemini://localhost:1965/gemlog/")) == f"{BASE}/gemlog/"
    assert w.run(w.follower.subscriptions()) == []
    with pytest.raises(GophergemError) as caught:
        w.run(w.follower.unsubscribe(f"{BASE}/gemlog/"))
    assert caught.value.code == "NOT_SUBSCRIBED"
    assert w.fails(w.follower.updates(f"{BASE}/gemlog/")).code == "NOT_SUBSCRIBED"


def test_updates_of_one() -> None:
    """Updates of one subscription check only that one."""
    w = world({"/a/": gemtext(), "/b/": gemtext()})
    w.run(w.follower.subscribe(f"{BASE}/a/"))
    w.run(w.follower.subscribe(f"{BASE}/b/"))
    w.capsule.routes["/a/"] = gemtext("=> /1.gmi 2026-12-01 One")
    w.capsule.routes["/b/"] = gemtext("=> /2.gmi 2026-12-02 Two")
    w.later()
    before = len(w.capsule.requests)
    found = w.updates(url=f"{BASE}/a/")
    assert ([e.title for e in found.entries], found.checked) == (["One"], 1)
    assert w.capsule.requests[before:] == [b"gemini://localhost/a/"]


# --- titles are data --------------------------------------------------------------------


def test_titles_sanitised() -> None:
    """Titles lose control and format characters; words meant for the model stay plain data."""
    hostile = (
        "20 text/gemini\r\n# Evil\x1b[31m log\u202e\n"
        "=> /1.gmi 2026-12-01 Red\x1b[31m\x07 alert\u200b\n"
        f"=> /2.gmi 2026-12-02 {INJECTION}\n"
    ).encode()
    w = world({"/gemlog/": gemtext()})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    w.capsule.routes["/gemlog/"] = hostile
    w.later()
    found = w.updates()
    titles = [e.title for e in found.entries]
    assert titles == [INJECTION, "Red alert"]
    assert found.entries[0].feed_title == "Log"  # the title given when subscribing
    for entry in found.entries:
        assert all(c.isprintable() for c in entry.title + (entry.feed_title or ""))
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))  # the type and title follow the page
    assert w.run(w.follower.subscriptions())[0].feed_type == "gemsub"


def test_long_title_clipped() -> None:
    """An endless title is clipped."""
    w = world({"/gemlog/": gemtext("=> /1.gmi 2026-12-01 " + "x" * 10_000, title="T" * 10_000)})
    _, feed = w.run(w.follower.read(f"{BASE}/gemlog/"))
    assert feed.title is not None and len(feed.title) < 1000
    assert len(feed.entries[0].title) < 1000


# --- redirects and windows --------------------------------------------------------------


def chain(length: int) -> dict[str, bytes]:
    """Routes /r0 -> /r1 -> ... -> /r{length} (the gemlog), one redirect each."""
    routes = {f"/r{n}": f"31 /r{n + 1}\r\n".encode() for n in range(length)}
    routes[f"/r{length}"] = GEMLOG
    return routes


def test_redirects_followed() -> None:
    """Up to MAX_REDIRECTS redirects in a row are followed, each a fetch of its own."""
    w = world(chain(MAX_REDIRECTS))
    url, feed = w.run(w.follower.read(f"{BASE}/r0"))
    assert (url, feed.feed_type) == (f"{BASE}/r{MAX_REDIRECTS}", "gemsub")
    assert len(w.capsule.requests) == MAX_REDIRECTS + 1
    subscription, _ = w.run(w.follower.subscribe(f"{BASE}/r0"))
    assert subscription.url == f"{BASE}/r0"  # followed under the URL the user gave


def test_too_many_redirects() -> None:
    """One redirect more than MAX_REDIRECTS is NOT_FETCHABLE, and nothing is stored."""
    w = world(chain(MAX_REDIRECTS + 1))
    assert w.fails(w.follower.subscribe(f"{BASE}/r0")).code == "NOT_FETCHABLE"
    assert len(w.capsule.requests) == MAX_REDIRECTS + 1
    assert w.run(w.follower.subscriptions()) == []


def test_redirect_loop() -> None:
    """A redirect loop is NOT_FETCHABLE as soon as it comes round."""
    w = world({"/a": b"31 /b\r\n", "/b": b"31 /a\r\n"})
    assert w.fails(w.follower.subscribe(f"{BASE}/a")).code == "NOT_FETCHABLE"
    assert len(w.capsule.requests) == 2


def test_redirect_across_schemes() -> None:
    """A capsule may redirect to a gopher hole; the hop is a fetch like any other."""
    w = world({"/old": b"31 gopher://g.example/1/phlog\r\n"}, {b"/phlog": PHLOG})
    subscription, _ = w.run(w.follower.subscribe(f"{BASE}/old"))
    assert subscription.feed_type == "phlog"
    assert w.hole.requests == [b"/phlog"]


def test_long_gemtext_read_window_by_window() -> None:
    """A gemlog longer than one window is read whole: entries of every window count."""
    lines = [
        f"=> /p/{n:03d}.gmi 2026-{1 + n % 12:02d}-{1 + n % 28:02d} Post {n}" for n in range(60)
    ]
    w = world({"/gemlog/": gemtext(*lines)}, gemini={"max_rendered_chars": 2000})
    _, feed = w.run(w.follower.read(f"{BASE}/gemlog/"))
    assert len(feed.entries) == 60
    assert len(w.capsule.requests) == 1  # the windows come from the one download


def test_long_menu_read_window_by_window() -> None:
    """A phlog menu longer than one window is read whole."""
    menu = b"".join(
        f"02026-01-{1 + n % 28:02d} - Post {n}\t/p/{n}.txt\tg.example\t70\r\n".encode()
        for n in range(30)
    )
    w = world(menus={b"/phlog": menu + b".\r\n"}, max_menu_items=7)
    _, feed = w.run(w.follower.read(f"{HOLE}/1/phlog"))
    assert (feed.feed_type, len(feed.entries)) == ("phlog", 30)


def test_windows_are_bounded() -> None:
    """At most max_windows windows of one page are read; the rest is left out."""
    menu = b"".join(
        f"02026-01-{1 + n % 28:02d} - Post {n}\t/p/{n}.txt\tg.example\t70\r\n".encode()
        for n in range(30)
    )
    w = world(menus={b"/phlog": menu + b".\r\n"}, max_menu_items=7)
    w.follower.max_windows = 2
    _, feed = w.run(w.follower.read(f"{HOLE}/1/phlog"))
    assert len(feed.entries) == 14


class LoggingClock(Clock):
    """A clock that notes each call scheduled on it in C{log}."""

    def __init__(self, log: list[object]) -> None:
        super().__init__()
        self.log = log

    def callLater(self, delay: float, func: Any, *args: Any, **kw: Any) -> Any:
        self.log.append(("turn", delay))
        return super().callLater(delay, func, *args, **kw)


@attrs.define
class CountedWindows:
    """A fetcher that notes each window asked for in C{log}, on a clock of its own."""

    fetcher: Any
    log: list[object] = attrs.field(factory=list)
    clock: Clock = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.clock = LoggingClock(self.log)

    def gemini(self, url: str, *, offset: int = 0, **options: Any) -> Deferred[Any]:
        self.log.append(("window", offset))
        d: Deferred[Any] = self.fetcher.gemini(url, offset=offset, **options)
        return d


@pytest.mark.parametrize("answers", ["plain"])
def test_the_reactor_runs_between_windows() -> None:
    """
    Issue 21: each further window of a long page is read only after the
    reactor has had a turn (cutting 20 windows at once held it for 100 ms).
    """
    lines = [f"=> /p/{n:03d}.gmi 2026-01-{1 + n % 28:02d} Post {n}" for n in range(60)]
    w = world({"/gemlog/": gemtext(*lines)}, gemini={"max_rendered_chars": 2000})
    counted = CountedWindows(w.follower.fetcher)
    follower = Follower(counted, MemoryFeedStore(), offload=run_inline)
    reading = Deferred.fromCoroutine(follower.read(f"{BASE}/gemlog/"))
    w.net.flush()
    assert counted.log == [("window", 0), ("turn", 0)]
    counted.clock.advance(0)
    _, feed = w.run(reading)
    assert len(feed.entries) == 60
    kinds = [kind for kind, _ in counted.log]  # type: ignore[misc]
    assert len(kinds) > 10
    assert kinds == ["window", "turn"] * (len(kinds) // 2) + ["window"]


@attrs.define
class LoggedStore:
    """A store that notes each call that reads or writes entries in C{log}."""

    store: MemoryFeedStore
    log: list[object]

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.store, name)
        if name in ("record_check", "unread", "mark_read"):
            self.log.append(("store", name))
        return found


@pytest.mark.parametrize("answers", ["plain"])
def test_the_reactor_runs_between_store_calls() -> None:
    """Issue 21: a check's store calls (tens of ms each for a large feed) each get a turn."""
    w = world({"/gemlog/": GEMLOG})
    w.run(w.follower.subscribe(f"{BASE}/gemlog/"))
    w.capsule.routes["/gemlog/"] = GEMLOG + b"=> /gemlog/new.gmi 2026-12-01 News\n"
    counted = CountedWindows(w.follower.fetcher)
    store = LoggedStore(w.follower.store, counted.log)  # type: ignore[arg-type]
    follower = Follower(counted, store, offload=run_inline)  # type: ignore[arg-type]
    checking = follower.updates()
    while not checking.called:
        w.net.flush()
        counted.clock.advance(0)
    assert len(w.run(checking).entries) == 1
    calls = [entry for entry in counted.log if entry != ("window", 0)]
    assert calls == [
        ("store", "record_check"),
        ("turn", 0),
        ("store", "unread"),
        ("turn", 0),
        ("store", "mark_read"),
    ]


@attrs.define
class FailingLaterWindows:
    """A fetcher whose windows after the first fail (a page gone between two window reads)."""

    fetcher: Any

    def gopher(self, url: str, *, offset: int = 0, **options: Any) -> Deferred[Any]:
        d: Deferred[Any] = self.fetcher.gopher(url, offset=offset, **options)
        if offset:
            d.addCallback(
                lambda result: FetchFailure(
                    request_info=result.request_info, error=FetchTimeout(message="late")
                )
            )
        return d


@pytest.mark.parametrize("max_windows", [2, 3])
def test_failing_later_window(max_windows: int) -> None:
    """A window after the first that fails makes the read fail with its error, not a crash."""
    menu = b"".join(
        f"02026-01-{1 + n % 28:02d} - Post {n}\t/p/{n}.txt\tg.example\t70\r\n".encode()
        for n in range(30)
    )
    w = world(menus={b"/phlog": menu + b".\r\n"}, max_menu_items=7)
    w.follower.fetcher = FailingLaterWindows(w.follower.fetcher)  # type: ignore[assignment]
    w.follower.max_windows = max_windows
    assert w.fails(w.follower.read(f"{HOLE}/1/phlog")).code == "TIMEOUT"


# --- parsing off the reactor (issue 21) --------------------------------------------------


def test_pages_are_parsed_through_the_offload(monkeypatch: pytest.MonkeyPatch) -> None:
    """
    A page is read as a feed only inside the follower's offload (the
    reactor's thread pool in production): nothing is parsed on the
    reactor, and the subscription waits for the parse.
    """
    import gophergem.feeds.follow

    parsed: list[str] = []
    real = gophergem.feeds.follow.detect_feed

    def detect(url: str, **kwargs: Any) -> Any:
        parsed.append(url)
        return real(url, **kwargs)

    monkeypatch.setattr(gophergem.feeds.follow, "detect_feed", detect)
    held = HeldOffload()
    w = world({"/atom.xml": ATOM})
    w.follower.offload = held
    subscribed = w.follower.subscribe(f"{BASE}/atom.xml")
    w.net.flush()
    assert (len(held.held), parsed, subscribed.called) == (1, [], False)
    held.run_all()
    w.net.flush()
    subscription, _ = w.run(subscribed)
    assert (subscription.feed_type, parsed) == ("atom", [f"{BASE}/atom.xml"])


def test_the_fetchers_offload_by_default() -> None:
    """Without an offload of its own, a follower parses where its fetcher parses large pages."""
    w = world()
    held = HeldOffload()
    fetcher = w.follower.fetcher
    assert isinstance(fetcher, Fetcher)
    fetcher.gopher_pipeline.offload = held
    follower = Follower(fetcher, MemoryFeedStore())
    assert follower._offload() is held
    assert Follower(FailingLaterWindows(fetcher), MemoryFeedStore())._offload() is run_inline


# --- no answer makes it raise anything else ---------------------------------------------


# Plainly answering stores only: hypothesis and pytest-twisted do not mix
# with the Deferred modes' fixture (the examples above cover those modes).
@pytest.mark.parametrize("answers", ["plain"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=st.binary(max_size=600), kind=st.sampled_from(["1", "0"]))
def test_any_gopher_answer(body: bytes, kind: str) -> None:
    """Whatever a gopher hole answers, subscribing succeeds or fails with a GophergemError."""
    w = world(menus={b"/x": body})
    try:
        subscription, _ = w.run(w.follower.subscribe(f"{HOLE}/{kind}/x"))
    except GophergemError:
        assert w.run(w.follower.subscriptions()) == []
    else:
        assert subscription.feed_type in ("phlog", "page", "gemsub", "atom", "rss")


# Plainly answering stores only: hypothesis and pytest-twisted do not mix
# with the Deferred modes' fixture (the examples above cover those modes).
@pytest.mark.parametrize("answers", ["plain"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    meta=st.sampled_from(
        ["20 text/gemini", "20 application/atom+xml", "20 text/xml", "20 text/plain", "31 /x"]
    ),
    body=st.one_of(
        st.binary(max_size=400),
        st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
        st.sampled_from([ATOM.split(b"\r\n", 1)[1], RSS.split(b"\r\n", 1)[1], b"<feed"]),
    ),
)
def test_any_gemini_answer(meta: str, body: bytes) -> None:
    """Whatever a capsule answers, reading it gives a feed or a GophergemError."""
    w = world({"/x": meta.encode() + b"\r\n" + body})
    with contextlib.suppress(GophergemError):
        w.run(w.follower.read(f"{BASE}/x"))
