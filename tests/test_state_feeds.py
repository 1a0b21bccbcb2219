"""
Tests for the feed stores (L{gophergem.state.files.feeds},
L{gophergem.state.memory}, L{gophergem.state.postgres}) and their rules
(L{gophergem.feeds.subscriptions}): one contract class runs against every
provider; the file store's own guarantees (damaged, foreign and newer
files, locks, real processes sharing it, a writer killed mid-write) follow.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from zope.interface.verify import verifyObject

from gophergem.errors import FeedStoreUnavailable, GophergemError, InvalidRequest
from gophergem.feeds import subscriptions as store_module
from gophergem.feeds.subscriptions import MAX_SUBSCRIPTIONS
from gophergem.feeds.values import StoredEntry, Subscription
from gophergem.interfaces import IFeedStore
from gophergem.state import documents
from gophergem.state.files import FileFeedStore
from gophergem.state.memory import MemoryFeedStore
from tests.helpers.trust import SHORT_WAIT, LogEvents, go, hold_lock
from tests.servers.postgres import wait

ROOT = Path(__file__).resolve().parent.parent

FEED = "gemini://gem.example/gemlog/"
OTHER = "gopher://hole.example/1/phlog"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z
T0_TEXT = "2026-01-01T00:00:00Z"
DAY = 86_400.0


@attrs.frozen
class Entry:
    """What a parser hands the store: a URL, a title, maybe a date."""

    url: str
    title: str = "A post"
    published: str | None = None


def post(n: int, day: int | None = None, title: str | None = None) -> Entry:
    return Entry(
        f"{FEED}{n}.gmi",
        title if title is not None else f"Post {n}",
        None if day is None else f"2025-12-{day:02d}T12:00:00Z",
    )


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> LogEvents:
    """Every event the file machinery logs."""
    found = LogEvents()
    monkeypatch.setattr(documents.log, "observer", found.append)
    return found


@pytest.fixture(params=["file", "memory", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Any]:
    """
    A factory of handles on one store: for the file provider each call opens
    a new L{FileFeedStore} on the same file; the memory provider has one; the
    PostgreSQL provider gives a new handle on the local owner's feeds in an
    emptied database (its methods return Deferreds: the contract wraps every
    call in L{wait}).
    """
    if request.param == "file":
        return lambda: FileFeedStore(tmp_path / "state" / "feeds.json")
    if request.param == "postgres":
        harness = request.getfixturevalue("postgres_harness")
        harness.reset()
        return lambda: harness.state.feeds(None)
    store = MemoryFeedStore()
    return lambda: store


class TestFeedStoreContract:
    """
    What every L{IFeedStore} provider does, whether its methods answer at
    once or with a Deferred (each call is wrapped in L{wait}).
    """

    def test_interface(self, make_store: Callable[[], Any]) -> None:
        """The store provides IFeedStore."""
        assert verifyObject(IFeedStore, make_store())

    def test_empty(self, make_store: Callable[[], Any]) -> None:
        """A new store follows nothing and has nothing unread."""
        store = make_store()
        assert wait(store.subscriptions()) == []
        assert wait(store.get(FEED)) is None
        assert wait(store.unread()) == []
        assert wait(store.unsubscribe(FEED)) is False
        assert wait(store.mark_read([(FEED, FEED + "1.gmi")])) == 0

    def test_subscribe_is_a_silent_baseline(self, make_store: Callable[[], Any]) -> None:
        """
        A new subscription records the entries it was made with as read: the
        first update reports nothing, the archive is not "new".
        """
        subscription, created = wait(
            make_store().subscribe(FEED, "My gemlog", "gemsub", [post(1, 1), post(2, 2)], T0)
        )
        assert created is True
        assert subscription == Subscription(
            url=FEED,
            title="My gemlog",
            feed_type="gemsub",
            added=T0_TEXT,
            last_checked=T0_TEXT,
            last_error=None,
            entries_known=2,
            unread=0,
        )
        store = make_store()
        assert wait(store.get(FEED)) == subscription
        assert wait(store.unread()) == []
        assert wait(store.record_check(FEED, [post(1, 1), post(2, 2)], T0 + DAY)) == []

    def test_subscribe_again(self, make_store: Callable[[], Any]) -> None:
        """
        Subscribing again is not an error: it keeps the entries and their read
        state, updates the type, and the title only when one is given.
        """
        store = make_store()
        wait(store.subscribe(FEED, "Old", "page", [post(1)], T0))
        wait(store.record_check(FEED, [post(1), post(2)], T0 + DAY))
        again, created = wait(store.subscribe(FEED, None, "gemsub", [post(3)], T0 + 2 * DAY))
        assert created is False
        assert (again.title, again.feed_type, again.added) == ("Old", "gemsub", T0_TEXT)
        assert (again.entries_known, again.unread) == (2, 1)
        renamed, _ = wait(make_store().subscribe(FEED, "New", "gemsub", [], T0 + 3 * DAY))
        assert renamed.title == "New"
        assert [entry.url for _, entry in wait(store.unread())] == [post(2).url]

    def test_subscriptions_sorted(self, make_store: Callable[[], Any]) -> None:
        """subscriptions() lists every subscription by URL."""
        store = make_store()
        for url in ("gemini://b.example/", OTHER, "gemini://a.example/"):
            wait(store.subscribe(url, None, "page", [], T0))
        assert [s.url for s in wait(make_store().subscriptions())] == [
            "gemini://a.example/",
            "gemini://b.example/",
            OTHER,
        ]

    def test_unsubscribe_forgets_entries(self, make_store: Callable[[], Any]) -> None:
        """Unsubscribing drops the feed and its entries; subscribing anew is a new baseline."""
        store = make_store()
        wait(store.subscribe(FEED, None, "gemsub", [post(1)], T0))
        wait(store.record_check(FEED, [post(1), post(2)], T0 + DAY))
        assert wait(store.unsubscribe(FEED)) is True
        assert wait(make_store().get(FEED)) is None
        assert wait(store.unread()) == []
        assert wait(store.unsubscribe(FEED)) is False
        _, created = wait(store.subscribe(FEED, None, "gemsub", [post(1), post(2)], T0 + 2 * DAY))
        assert created is True
        assert wait(store.unread()) == []

    def test_new_entries_reported_once(self, make_store: Callable[[], Any]) -> None:
        """
        A check returns the entries never seen before, in the order given, as
        unread; the next check with the same page returns nothing.
        """
        store = make_store()
        wait(store.subscribe(FEED, None, "gemsub", [post(1, 1)], T0))
        new = wait(store.record_check(FEED, [post(3, 3), post(1, 1), post(2, 2)], T0 + DAY))
        stamp = "2026-01-02T00:00:00Z"
        assert new == [
            StoredEntry(post(3).url, "Post 3", "2025-12-03T12:00:00Z", stamp, False),
            StoredEntry(post(2).url, "Post 2", "2025-12-02T12:00:00Z", stamp, False),
        ]
        checked = wait(make_store().get(FEED))
        assert (checked.last_checked, checked.entries_known, checked.unread) == (stamp, 3, 2)
        assert (
            wait(store.record_check(FEED, [post(3, 3), post(1, 1), post(2, 2)], T0 + 2 * DAY)) == []
        )

    def test_changed_entry_is_unread_again(self, make_store: Callable[[], Any]) -> None:
        """
        A known entry whose title or date changed is updated and unread again
        (returned by the check); its first_seen stays.
        """
        store = make_store()
        wait(store.subscribe(FEED, None, "gemsub", [post(1, 1), post(2, 2)], T0))
        new = wait(store.record_check(FEED, [post(1, 1, title="Retitled"), post(2, 5)], T0 + DAY))
        assert [(e.url, e.title, e.published, e.first_seen, e.read) for e in new] == [
            (post(1).url, "Retitled", "2025-12-01T12:00:00Z", T0_TEXT, False),
            (post(2).url, "Post 2", "2025-12-05T12:00:00Z", T0_TEXT, False),
        ]
        assert wait(make_store().get(FEED)).unread == 2

    def test_reappearing_link_is_not_new(self, make_store: Callable[[], Any]) -> None:
        """An entry that left the page is kept, so its coming back is not news."""
        store = make_store()
        wait(store.subscribe(FEED, None, "page", [post(1), post(2)], T0))
        assert wait(store.record_check(FEED, [post(2)], T0 + DAY)) == []
        assert wait(store.get(FEED)).entries_known == 2
        assert wait(store.record_check(FEED, [post(1), post(2)], T0 + 2 * DAY)) == []
        assert wait(store.unread()) == []

    def test_failed_check(self, make_store: Callable[[], Any]) -> None:
        """
        A check with an error records when and what, leaves the entries alone
        and returns nothing; the next good check clears the error.
        """
        store = make_store()
        wait(store.subscribe(FEED, None, "gemsub", [post(1)], T0))
        assert wait(store.record_check(FEED, [post(2)], T0 + DAY, error="TIMEOUT")) == []
        failed = wait(make_store().get(FEED))
        assert (failed.last_checked, failed.last_error) == ("2026-01-02T00:00:00Z", "TIMEOUT")
        assert (failed.entries_known, failed.unread) == (1, 0)
        assert len(wait(store.record_check(FEED, [post(2)], T0 + 2 * DAY))) == 1
        assert wait(store.get(FEED)).last_error is None

    def test_check_of_unknown_feed(self, make_store: Callable[[], Any]) -> None:
        """A check of a feed not followed (unsubscribed meanwhile) changes nothing."""
        store = make_store()
        assert wait(store.record_check(FEED, [post(1)], T0)) == []
        assert wait(store.record_check(FEED, [], T0, error="TIMEOUT")) == []
        assert wait(make_store().subscriptions()) == []

    def test_unread_newest_first(self, make_store: Callable[[], Any]) -> None:
        """
        unread() lists every unread entry with its feed, newest first by date,
        else by when it was first seen; url= keeps one feed.
        """
        store = make_store()
        wait(store.subscribe(FEED, "Gemlog", "gemsub", [], T0))
        wait(store.subscribe(OTHER, "Phlog", "page", [], T0))
        wait(store.record_check(FEED, [post(1, 1), post(2, 20)], T0 + DAY))
        wait(store.record_check(OTHER, [Entry(OTHER + "/a")], T0 + DAY))  # seen 2026-01-02
        listed = wait(make_store().unread())
        assert [(s.url, e.url) for s, e in listed] == [
            (OTHER, OTHER + "/a"),
            (FEED, post(2).url),
            (FEED, post(1).url),
        ]
        assert listed[1][0].title == "Gemlog"
        assert [e.url for _, e in wait(store.unread(FEED))] == [post(2).url, post(1).url]
        assert wait(store.unread("gemini://unknown.example/")) == []

    def test_unread_since(self, make_store: Callable[[], Any]) -> None:
        """
        With since, entries dated (or first seen) after it are listed too,
        read or not; entries before it only when unread.
        """
        store = make_store()
        wait(store.subscribe(FEED, None, "gemsub", [post(1, 1), post(2, 20)], T0))
        wait(store.record_check(FEED, [post(1, 1), post(2, 20), post(3, 3)], T0 + DAY))
        assert [e.url for _, e in wait(store.unread(since="2025-12-10"))] == [
            post(2).url,
            post(3).url,
        ]
        assert [e.url for _, e in wait(store.unread(since="2025-12-21T00:00:00+01:00"))] == [
            post(3).url
        ]
        assert [e.read for _, e in wait(store.unread(since="2025-11-30"))] == [True, False, True]

    @pytest.mark.parametrize("since", ["yesterday", "", "2026-13-01", "2026-01-01T25:00"])
    def test_unread_bad_since(self, make_store: Callable[[], Any], since: str) -> None:
        """A since that is not an ISO 8601 date or time is INVALID_REQUEST."""
        with pytest.raises(InvalidRequest) as caught:
            wait(make_store().unread(since=since))
        assert "ISO 8601" in caught.value.message

    def test_mark_read(self, make_store: Callable[[], Any]) -> None:
        """mark_read counts the entries it changed; unknown and read ones are skipped."""
        store = make_store()
        wait(store.subscribe(FEED, None, "gemsub", [], T0))
        wait(store.record_check(FEED, [post(1), post(2), post(3)], T0 + DAY))
        pairs = [(FEED, post(1).url), (FEED, post(2).url), (OTHER, post(3).url), (FEED, "x")]
        assert wait(store.mark_read(iter(pairs))) == 2
        assert wait(store.mark_read(pairs)) == 0
        assert [e.url for _, e in wait(make_store().unread())] == [post(3).url]

    def test_dates_stored_in_utc(self, make_store: Callable[[], Any]) -> None:
        """A published time with an offset is kept in UTC, to the second."""
        store = make_store()
        wait(store.subscribe(FEED, None, "atom", [], T0))
        (entry,) = wait(
            store.record_check(
                FEED, [Entry(FEED + "a", published="2026-01-02T13:00:00.75+01:00")], T0
            )
        )
        assert entry.published == "2026-01-02T12:00:00Z"
        assert (
            wait(store.record_check(FEED, [Entry(FEED + "a", published="2026-01-02T12:00Z")], T0))
            == []
        )

    def test_first_of_duplicates_wins(self, make_store: Callable[[], Any]) -> None:
        """When a page lists one URL twice, its first appearance counts."""
        store = make_store()
        wait(store.subscribe(FEED, None, "page", [], T0))
        new = wait(store.record_check(FEED, [post(1, title="first"), post(1, title="second")], T0))
        assert [e.title for e in new] == ["first"]

    @pytest.mark.parametrize(
        "call",
        [
            lambda s: wait(s.subscribe("", None, "page", [], T0)),
            lambda s: wait(s.subscribe(FEED, None, "", [], T0)),
            lambda s: wait(s.subscribe(FEED, 5, "page", [], T0)),
            lambda s: wait(s.subscribe(FEED, None, "page", [Entry("")], T0)),
            lambda s: wait(s.subscribe(FEED, None, "page", [Entry(FEED, published="soon")], T0)),
            lambda s: wait(s.subscribe(FEED, None, "page", [object()], T0)),
            lambda s: wait(s.subscribe(FEED, None, "page", [], float("nan"))),
            lambda s: wait(s.subscribe(FEED, None, "page", [], 1e300)),
            lambda s: wait(s.record_check(FEED, [post(9)], T0, error=404)),
            lambda s: wait(s.record_check(FEED, [Entry(FEED, title=None)], T0)),  # type: ignore[arg-type]
            lambda s: wait(s.mark_read([(FEED, post(1).url), (FEED,)])),
        ],
        ids=[
            "empty-url",
            "empty-type",
            "title-not-text",
            "entry-without-url",
            "entry-bad-date",
            "not-an-entry",
            "nan-now",
            "huge-now",
            "error-not-text",
            "title-none",
            "bad-pair",
        ],
    )
    def test_bad_arguments_change_nothing(
        self, make_store: Callable[[], Any], call: Callable[[Any], object]
    ) -> None:
        """A call with a bad argument raises TypeError or ValueError and changes nothing."""
        store = make_store()
        wait(store.subscribe(FEED, "Title", "gemsub", [], T0))
        wait(store.record_check(FEED, [post(1)], T0 + DAY))
        before = (wait(store.subscriptions()), wait(store.unread()))
        with pytest.raises((TypeError, ValueError)):
            call(store)
        assert (wait(make_store().subscriptions()), wait(make_store().unread())) == before

    def test_subscription_limit(
        self, make_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """
        Past MAX_SUBSCRIPTIONS a new subscription is INVALID_REQUEST and nothing
        changes; subscribing again to a followed one still works.
        """
        monkeypatch.setattr(store_module, "MAX_SUBSCRIPTIONS", 3)
        store = make_store()
        for n in range(3):
            wait(store.subscribe(f"gemini://{n}.example/", None, "page", [], T0))
        with pytest.raises(InvalidRequest) as caught:
            wait(store.subscribe(FEED, None, "page", [], T0))
        assert caught.value.code == "INVALID_REQUEST"
        assert "3" in caught.value.message
        assert len(wait(make_store().subscriptions())) == 3
        assert wait(store.subscribe("gemini://0.example/", "T", "page", [], T0))[1] is False

    def test_entry_bound_drops_oldest_read_first(
        self, make_store: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """
        A feed keeps at most MAX_ENTRIES_PER_FEED entries: the baseline keeps
        its newest, and a check drops the oldest read entries before any
        unread one.
        """
        monkeypatch.setattr(store_module, "MAX_ENTRIES_PER_FEED", 4)
        store = make_store()
        wait(store.subscribe(FEED, None, "gemsub", [post(n, n) for n in range(1, 7)], T0))
        assert wait(store.get(FEED)).entries_known == 4
        new = wait(store.record_check(FEED, [post(n, n) for n in range(7, 10)], T0 + DAY))
        assert [e.url for e in new] == [post(7).url, post(8).url, post(9).url]
        kept = wait(store.unread(since="2000-01-01"))
        assert [e.url for _, e in kept] == [post(n).url for n in (9, 8, 7, 6)]
        # All unread and over the bound: the oldest unread go too.
        new = wait(store.record_check(FEED, [post(n, 20 + n) for n in range(1, 3)], T0 + 2 * DAY))
        assert [e.url for e in new] == [post(1).url, post(2).url]
        assert [e.url for _, e in wait(make_store().unread())] == [
            post(n).url for n in (2, 1, 9, 8)
        ]

    def test_limits_are_generous(self) -> None:
        """The limits leave room for a real reader's subscriptions and archives."""
        assert MAX_SUBSCRIPTIONS >= 500
        assert store_module.MAX_ENTRIES_PER_FEED >= 1000


# -- file store and memory store agree -------------------------------------------------------

_feeds = st.sampled_from([FEED, OTHER, "gemini://third.example/"])
_entries = st.lists(
    st.builds(
        Entry,
        url=st.sampled_from([f"gemini://e.example/{n}" for n in range(5)]),
        title=st.sampled_from(["one", "two"]),
        published=st.sampled_from([None, "2026-01-01T12:00:00Z", "2026-01-02T12:00:00+01:00"]),
    ),
    max_size=6,
)
_now = st.integers(min_value=0, max_value=5).map(lambda n: T0 + n * 3600.0)
_operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("subscribe"),
            st.tuples(_feeds, st.sampled_from([None, "T1", "T2"]), st.just("page"), _entries, _now),
        ),
        st.tuples(st.just("unsubscribe"), st.tuples(_feeds)),
        st.tuples(
            st.just("record_check"),
            st.tuples(_feeds, _entries, _now, st.sampled_from([None, "TIMEOUT"])),
        ),
        st.tuples(
            st.just("unread"),
            st.tuples(
                st.one_of(st.none(), _feeds),
                st.sampled_from([None, "2026-01-01T12:00:00Z", "2026-01-01T01:30:00Z"]),
            ),
        ),
        st.tuples(
            st.just("mark_read"),
            st.tuples(
                st.lists(
                    st.tuples(
                        _feeds, st.sampled_from([f"gemini://e.example/{n}" for n in range(5)])
                    ),
                    max_size=3,
                )
            ),
        ),
        st.tuples(st.just("get"), st.tuples(_feeds)),
    ),
    max_size=10,
)


def _answer(store: Any, name: str, arguments: tuple[Any, ...]) -> Any:
    try:
        result = getattr(store, name)(*arguments)
    except GophergemError as e:
        return ("error", e.code)
    return result, store.subscriptions()


@settings(max_examples=40, deadline=None)
@given(_operations)
def test_file_and_memory_agree(operations: list[tuple[str, tuple[Any, ...]]]) -> None:
    """Any sequence of operations gives the same answers from both providers."""
    with (
        tempfile.TemporaryDirectory() as directory,
        mock.patch.object(store_module, "MAX_SUBSCRIPTIONS", 2),
        mock.patch.object(store_module, "MAX_ENTRIES_PER_FEED", 4),
    ):
        path = Path(directory) / "feeds.json"
        stores = [FileFeedStore(path), MemoryFeedStore()]
        for name, arguments in operations:
            answers = [_answer(store, name, arguments) for store in stores]
            assert answers[0] == answers[1], (name, arguments)
        reopened = FileFeedStore(path)
        assert reopened.subscriptions() == stores[1].subscriptions()
        assert reopened.unread(since="1970-01-01") == stores[1].unread(since="1970-01-01")


# -- the file store -------------------------------------------------------------------------


_DOCUMENT_OK = {
    FEED: {
        "title": None,
        "feed_type": "gemsub",
        "added": T0_TEXT,
        "last_checked": T0_TEXT,
        "last_error": None,
        "entries": {
            post(1).url: {
                "title": "Post 1",
                "published": None,
                "first_seen": T0_TEXT,
                "read": False,
            }
        },
    }
}


def _envelope(entries: object, version: object = 1) -> bytes:
    return json.dumps(
        {"format": "gophergem-feeds", "version": version, "entries": entries}
    ).encode()


def _changed(path: tuple[str, ...], value: object) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(json.dumps(_DOCUMENT_OK))
    target = document
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return document


_ENTRY = (FEED, "entries", post(1).url)


class TestFileFeedStore:
    """What the file provider guarantees beyond the contract."""

    def test_document(self, tmp_path: Path) -> None:
        """The file is versioned JSON naming its format, mode 0600 in a new 0700 directory."""
        path = tmp_path / "state" / "feeds.json"
        store = FileFeedStore(path)
        store.subscribe(FEED, None, "gemsub", [], T0)
        store.record_check(FEED, [post(1)], T0)
        document = json.loads(path.read_text())
        assert document == {"format": "gophergem-feeds", "version": 1, "entries": _DOCUMENT_OK}
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700

    def test_well_formed_document_reads(self, tmp_path: Path) -> None:
        """A document written by hand in the format is read as written."""
        path = tmp_path / "feeds.json"
        path.write_bytes(_envelope(_DOCUMENT_OK))
        ((subscription, entry),) = FileFeedStore(path).unread()
        assert (subscription.url, subscription.unread, entry.title) == (FEED, 1, "Post 1")

    def test_reading_creates_nothing(self, tmp_path: Path) -> None:
        """Reading a store that does not exist yet creates no directory."""
        store = FileFeedStore(tmp_path / "absent" / "feeds.json")
        assert store.subscriptions() == []
        assert store.unread() == []
        assert not (tmp_path / "absent").exists()

    def test_unchanged_store_not_rewritten(self, tmp_path: Path) -> None:
        """A call that changes nothing does not rewrite the file."""
        path = tmp_path / "feeds.json"
        store = FileFeedStore(path)
        store.subscribe(FEED, None, "gemsub", [post(1)], T0)
        before = path.stat().st_ino
        assert store.mark_read([(FEED, post(1).url)]) == 0
        assert store.unsubscribe(OTHER) is False
        assert store.record_check(OTHER, [post(2)], T0) == []
        assert path.stat().st_ino == before

    @pytest.mark.parametrize(
        "content",
        [
            b'{"format": "gophergem-feeds", "version": 1, "entries": {',
            b"",
            b"\xff\xfe",
            _envelope([]),
            _envelope({FEED: {"title": None}}),
            _envelope({"": _DOCUMENT_OK[FEED]}),
            _envelope(_changed((FEED, "added"), "2026-01-01")),
            _envelope(_changed((FEED, "feed_type"), 7)),
            _envelope(_changed((FEED, "entries"), [])),
            _envelope(_changed((*_ENTRY, "read"), 1)),
            _envelope(_changed((*_ENTRY, "published"), "last week")),
            _envelope(_changed((*_ENTRY, "first_seen"), None)),
            _envelope(_changed((*_ENTRY,), "an entry")),
        ],
        ids=[
            "truncated",
            "empty",
            "binary",
            "list",
            "short-subscription",
            "empty-url",
            "non-canonical-time",
            "type-not-text",
            "entries-list",
            "read-not-bool",
            "published-not-time",
            "first-seen-missing",
            "entry-not-object",
        ],
    )
    def test_damaged_file_refused_untouched(
        self, tmp_path: Path, events: LogEvents, content: bytes
    ) -> None:
        """
        A damaged file is refused with STATE_UNAVAILABLE by reads and writes
        alike and left as it is: never moved aside, no lock file for a read.
        The error carries the path in C{path}, never in its fields.
        """
        path = tmp_path / "feeds.json"
        path.write_bytes(content)
        store = FileFeedStore(path)
        with pytest.raises(FeedStoreUnavailable) as caught:
            store.subscriptions()
        assert caught.value.code == "STATE_UNAVAILABLE"
        assert "feed subscription store" in caught.value.message
        assert caught.value.path == str(path)
        assert str(tmp_path) not in str(caught.value.fields())
        assert [p.name for p in tmp_path.iterdir()] == ["feeds.json"]
        with pytest.raises(FeedStoreUnavailable):
            store.subscribe(FEED, None, "page", [], T0)
        assert path.read_bytes() == content
        assert list(tmp_path.glob("*.corrupt-*")) == []
        assert str(path) in events.text()

    @pytest.mark.parametrize(
        "document",
        [{}, {"format": "gophergem-pins", "version": 1, "entries": {}}],
        ids=["empty-object", "pin-store"],
    )
    def test_foreign_file_left_alone(
        self, tmp_path: Path, events: LogEvents, document: dict[str, Any]
    ) -> None:
        """A JSON file gophergem did not write as a feed store is refused, never touched."""
        path = tmp_path / "feeds.json"
        path.write_text(json.dumps(document))
        store = FileFeedStore(path)
        calls: list[Callable[[], object]] = [
            store.subscriptions,
            lambda: store.subscribe(FEED, None, "page", [], T0),
        ]
        for call in calls:
            with pytest.raises(FeedStoreUnavailable) as caught:
                call()
            assert caught.value.code == "STATE_UNAVAILABLE"
            assert "trust import" not in (caught.value.next_step or "")
        assert json.loads(path.read_text()) == document
        assert list(tmp_path.glob("*.corrupt-*")) == []
        assert str(path) in events.text()

    def test_newer_format_left_alone(self, tmp_path: Path) -> None:
        """A store written by a newer format version is refused and left as it is."""
        path = tmp_path / "feeds.json"
        content = _envelope({"whatever": 1}, version=2)
        path.write_bytes(content)
        store = FileFeedStore(path)
        for call in (store.unread, lambda: store.subscribe(FEED, None, "page", [], T0)):
            with pytest.raises(FeedStoreUnavailable) as caught:
                call()
            assert "newer" in caught.value.message
        assert path.read_bytes() == content

    def test_lock_timeout(self, tmp_path: Path) -> None:
        """
        While another process holds the lock, changes give up after the
        timeout with a temporary STATE_UNAVAILABLE, then work; reads take no
        lock and go on.
        """
        path = tmp_path / "feeds.json"
        store = FileFeedStore(path, lock_timeout=SHORT_WAIT)
        store.subscribe(FEED, None, "page", [], T0)
        with hold_lock(Path(str(path) + ".lock")):
            assert [s.url for s in store.subscriptions()] == [FEED]
            with pytest.raises(FeedStoreUnavailable) as caught:
                store.record_check(FEED, [post(1)], T0)
            assert caught.value.temporary is True
        assert len(store.record_check(FEED, [post(1)], T0)) == 1

    def test_unwritable_directory(self, tmp_path: Path) -> None:
        """A store whose directory cannot be created is STATE_UNAVAILABLE."""
        blocker = tmp_path / "file"
        blocker.write_text("")
        with pytest.raises(FeedStoreUnavailable) as caught:
            FileFeedStore(blocker / "feeds.json").subscribe(FEED, None, "page", [], T0)
        assert str(tmp_path) not in str(caught.value.fields())

    @settings(max_examples=60, deadline=None)
    @given(
        st.one_of(
            st.binary(max_size=200),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=25),
                lambda inner: (
                    st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=25), inner, max_size=4)
                ),
                max_leaves=12,
            ).map(_envelope),
        )
    )
    def test_any_file_content(self, content: bytes) -> None:
        """
        Whatever the file holds, a call either works or raises
        FeedStoreUnavailable, and a file it refuses is left as it was.
        """
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "feeds.json"
            path.write_bytes(content)
            store = FileFeedStore(path)
            try:
                store.unread(since="2000-01-01")
                store.subscribe(FEED, None, "page", [post(1)], T0)
                store.record_check(FEED, [post(2)], T0)
            except FeedStoreUnavailable:
                assert path.read_bytes() == content


# -- real processes ---------------------------------------------------------------------------

# argv: store path, name, count.  Prints "ready", waits for a line on stdin,
# subscribes to the shared feed (printing "created" or "joined"), then for each
# i subscribes to its own feed <name>-<i> and records a check of the shared
# feed holding its entries 0..i, printing the URLs the check reported new.
_SHARER = """
import sys
from gophergem.state.files import FileFeedStore

class Entry:
    def __init__(self, url):
        self.url, self.title, self.published = url, url, None

store = FileFeedStore(sys.argv[1], lock_timeout=20)
name, count = sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()
_, created = store.subscribe("gemini://shared.example/", None, "page", [], 0.0)
print("created" if created else "joined", flush=True)
mine = []
for i in range(count):
    store.subscribe(f"gemini://{name}-{i}.example/", name, "page", [], float(i))
    mine.append(Entry(f"gemini://shared.example/{name}-{i}"))
    for entry in store.record_check("gemini://shared.example/", mine, float(i)):
        print("new", entry.url, flush=True)
"""

# argv: store path, name, count (ignored).  Prints "ready", waits for a line,
# then forever: subscribes to feed i with a 200-entry baseline and records a
# check of the main feed adding entry i; prints i once both have returned.
_VICTIM = """
import sys
from gophergem.state.files import FileFeedStore

class Entry:
    def __init__(self, url):
        self.url, self.title, self.published = url, "a title " * 5, None

store = FileFeedStore(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
store.subscribe("gemini://main.example/", "main", "page", [], 0.0)
i = 0
while True:
    baseline = [Entry(f"gemini://feed-{i}.example/{j}") for j in range(200)]
    store.subscribe(f"gemini://feed-{i}.example/", None, "page", baseline, float(i))
    store.record_check("gemini://main.example/", [Entry(f"gemini://main.example/{i}")], float(i))
    print(i, flush=True)
    i += 1
"""


def start(path: Path, name: str, count: int, program: str) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, "-c", program, str(path), name, str(count)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "ready"
    return child


def test_two_processes_lose_nothing(tmp_path: Path) -> None:
    """
    Two processes subscribing and recording checks of one shared feed at once
    lose nothing: one of them created the shared subscription, every entry
    either recorded is stored and was reported new exactly once, and every
    subscription either made exists.
    """
    path = tmp_path / "feeds.json"
    count = 25
    children = [start(path, name, count, _SHARER) for name in ("left", "right")]
    for child in children:
        go(child)
    outcomes: list[str] = []
    reported: list[str] = []
    for child in children:
        out, _ = child.communicate(timeout=60)
        assert child.returncode == 0
        lines = out.splitlines()
        outcomes.append(lines[0])
        reported += [line.split()[1] for line in lines[1:]]
    assert sorted(outcomes) == ["created", "joined"]
    expected = {
        f"gemini://shared.example/{name}-{i}" for name in ("left", "right") for i in range(count)
    }
    assert sorted(reported) == sorted(expected)
    store = FileFeedStore(path)
    assert {entry.url for _, entry in store.unread()} == expected
    assert len(store.subscriptions()) == 2 * count + 1


def test_killed_writer_leaves_a_readable_store(tmp_path: Path) -> None:
    """
    A writer SIGKILLed in the middle of its writes leaves a document that
    loads (the old or the new one) and holds every change whose call had
    returned; the next write sweeps its temporary files away.
    """
    path = tmp_path / "feeds.json"
    child = start(path, "victim", 0, _VICTIM)
    go(child)
    assert child.stdout is not None
    acknowledged = [int(child.stdout.readline()) for _ in range(15)]
    os.kill(child.pid, signal.SIGKILL)
    rest, _ = child.communicate(timeout=10)
    acknowledged += [int(line) for line in rest.split()]
    assert child.returncode == -signal.SIGKILL

    store = FileFeedStore(path, lock_timeout=1.0)
    followed = {s.url for s in store.subscriptions()}
    assert {f"gemini://feed-{i}.example/" for i in acknowledged} <= followed
    main = {entry.url for _, entry in store.unread("gemini://main.example/")}
    assert {f"gemini://main.example/{i}" for i in acknowledged} <= main
    for subscription in store.subscriptions():
        if subscription.url.startswith("gemini://feed-"):
            assert (subscription.entries_known, subscription.unread) == (200, 0)
    store.subscribe(OTHER, None, "page", [], T0)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
