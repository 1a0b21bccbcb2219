# -*- test-case-name: tests.test_state_feeds -*-
"""
The rules of following, whoever keeps the subscriptions: what the user
follows and which entries of it they have seen, as one document
(L{FeedDocument}), and the operations on it.

L{DocumentFeedStore} answers the L{IFeedStore} methods over such a document
wherever it is kept: the file store (L{gophergem.state.files.FileFeedStore},
one JSON file) and the memory store (L{gophergem.state.memory}) are two of
them, so they answer alike, and the PostgreSQL store
(L{gophergem.state.postgres}) runs the same operations on the one
subscription a change touches; C{tests/test_state_feeds.py} runs one
contract test against all three.  The values they answer with live in
L{gophergem.feeds.values}.

The rules that make "what's new" useful:

  - A new subscription records the entries it was created with as read: the
    first check is a silent baseline, not the whole archive at once.
  - After a check, an entry whose URL was never seen is new (unread); a known
    entry whose title or date changed becomes unread again.
  - Entries that left the page are kept, so a link that comes back is not
    new; each feed keeps at most L{MAX_ENTRIES_PER_FEED}, dropping the oldest
    read entries first.

Times are ISO 8601 UTC text to the second (C{2026-01-02T12:00:00Z}),
written and read by L{gophergem._time}; the caller passes the current time
as epoch seconds, so nothing here reads a clock.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import attrs

from gophergem._time import format_utc, parse_utc
from gophergem.errors import InvalidRequest
from gophergem.feeds.values import FeedEntry, StoredEntry, Subscription

__all__ = [
    "MAX_ENTRIES_PER_FEED",
    "MAX_SUBSCRIPTIONS",
    "DocumentFeedStore",
    "FeedDocument",
    "check_document",
    "entry_pairs",
    "entry_time",
    "found_entries",
    "optional_text",
    "parse_since",
    "record_check_in",
    "required_text",
    "stored_entry",
    "subscribe_in",
    "utc_stamp",
]

#: The most subscriptions one store holds; one more is refused.
MAX_SUBSCRIPTIONS = 1000

#: The most entries remembered per feed; past it the oldest read ones go.
MAX_ENTRIES_PER_FEED = 2000

_CANONICAL = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")

_T = TypeVar("_T")

FeedDocument = dict[str, Any]
"""
Every subscription of one store, keyed by its URL, each held as::

    {"title": str | None, "feed_type": str, "added": time,
     "last_checked": time | None, "last_error": str | None,
     "entries": {entry URL: {"title": str, "published": time | None,
                             "first_seen": time, "read": bool}}}
"""


# -- times ------------------------------------------------------------------------------


def utc_stamp(now: float) -> str:
    """The ISO 8601 text of C{now} (epoch seconds), refusing what is no time."""
    if isinstance(now, bool) or not isinstance(now, int | float):
        raise TypeError("now must be a number of seconds")
    if not math.isfinite(now):
        raise ValueError("now must be finite")
    try:
        return format_utc(now)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"now is out of range: {now!r}") from None


def _is_time(value: object) -> bool:
    if not isinstance(value, str) or _CANONICAL.fullmatch(value) is None:
        return False
    try:
        return parse_utc(value) == value
    except ValueError:
        return False


# -- validating what comes in ---------------------------------------------------------------


def required_text(value: object, name: str, *, empty: bool = False) -> str:
    """
    C{value}, checked to be text (non-empty unless C{empty}).

    @raise TypeError: When it is not text; the message names C{name}.
    @raise ValueError: When it is empty and may not be.
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be text, not {type(value).__name__}")
    if not value and not empty:
        raise ValueError(f"{name} must not be empty")
    return value


def optional_text(value: object, name: str) -> str | None:
    """C{value}, checked to be C{None} or text (see L{required_text})."""
    return None if value is None else required_text(value, name, empty=True)


def found_entries(entries: Iterable[FeedEntry]) -> list[tuple[str, str, str | None]]:
    """The C{(url, title, published)} of each entry, the first of each URL only."""
    seen: dict[str, tuple[str, str, str | None]] = {}
    for entry in entries:
        url = required_text(getattr(entry, "url", None), "an entry's url")
        title = required_text(getattr(entry, "title", None), "an entry's title", empty=True)
        published = getattr(entry, "published", None)
        if published is not None:
            published = parse_utc(published)
        seen.setdefault(url, (url, title, published))
    return list(seen.values())


def entry_pairs(items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """C{items} as a list of C{(feed_url, entry_url)}, each checked to be text."""
    pairs = []
    for item in items:
        feed_url, entry_url = item
        pairs.append(
            (required_text(feed_url, "a feed url"), required_text(entry_url, "an entry url"))
        )
    return pairs


def parse_since(since: str | None) -> str | None:
    """
    A caller's C{since} (ISO 8601 date or time) in the stored form, or C{None}.

    @raise InvalidRequest: When it is not a date or time.
    """
    if since is None:
        return None
    try:
        return parse_utc(since)
    except ValueError:
        raise InvalidRequest(
            message="since is not an ISO 8601 date or time.",
            next_step="Give a date such as 2026-01-05 or a time such as 2026-01-05T09:00:00Z.",
        ) from None


# -- the document ---------------------------------------------------------------------------


def check_document(document: FeedDocument) -> None:
    """Refuse a document that is not exactly what the stores write."""
    for url, record in document.items():
        if not url:
            raise ValueError("a subscription without a URL")
        if not isinstance(record, dict):
            raise TypeError("a subscription is not an object")
        if not isinstance(record["title"], str | None):
            raise TypeError("title is not text")
        if not isinstance(record["feed_type"], str) or not record["feed_type"]:
            raise TypeError("feed_type is not text")
        if not _is_time(record["added"]):
            raise ValueError("added is not a time")
        if record["last_checked"] is not None and not _is_time(record["last_checked"]):
            raise ValueError("last_checked is not a time")
        if not isinstance(record["last_error"], str | None):
            raise TypeError("last_error is not text")
        entries = record["entries"]
        if not isinstance(entries, dict):
            raise TypeError("entries is not an object")
        for entry_url, entry in entries.items():
            if not entry_url:
                raise ValueError("an entry without a URL")
            if not isinstance(entry, dict):
                raise TypeError("an entry is not an object")
            if not isinstance(entry["title"], str):
                raise TypeError("an entry's title is not text")
            if entry["published"] is not None and not _is_time(entry["published"]):
                raise ValueError("an entry's published is not a time")
            if not _is_time(entry["first_seen"]):
                raise ValueError("an entry's first_seen is not a time")
            if type(entry["read"]) is not bool:
                raise TypeError("an entry's read is not true or false")


def _subscription(url: str, record: dict[str, Any]) -> Subscription:
    entries = record["entries"]
    return Subscription(
        url=url,
        title=record["title"],
        feed_type=record["feed_type"],
        added=record["added"],
        last_checked=record["last_checked"],
        last_error=record["last_error"],
        entries_known=len(entries),
        unread=sum(1 for entry in entries.values() if not entry["read"]),
    )


def stored_entry(url: str, entry: dict[str, Any]) -> StoredEntry:
    """The L{StoredEntry} of the document's C{entry} at C{url}."""
    return StoredEntry(
        url=url,
        title=entry["title"],
        published=entry["published"],
        first_seen=entry["first_seen"],
        read=entry["read"],
    )


def entry_time(entry: dict[str, Any]) -> str:
    """When an entry happened: its date, else when it was first seen."""
    published: str | None = entry["published"]
    return published if published is not None else entry["first_seen"]


def _bound(entries: dict[str, Any]) -> None:
    """Drop entries past L{MAX_ENTRIES_PER_FEED}: read ones first, oldest first."""
    excess = len(entries) - MAX_ENTRIES_PER_FEED
    if excess <= 0:
        return
    order = sorted(
        entries, key=lambda url: (not entries[url]["read"], entry_time(entries[url]), url)
    )
    for url in order[:excess]:
        del entries[url]


# Each operation below validates all of its arguments before it changes the
# document, so a refused call changes nothing in any store.


def subscribe_in(
    document: FeedDocument,
    url: str,
    title: str | None,
    feed_type: str,
    found: list[tuple[str, str, str | None]],
    stamp: str,
) -> tuple[Subscription, bool]:
    """
    Follow C{url} in C{document}, with C{found} (from L{found_entries}) as
    its read baseline, at C{stamp} (from L{utc_stamp}); following it again
    updates the title (when given) and the type.  Return the subscription
    and whether it is new.

    @raise InvalidRequest: When C{document} holds L{MAX_SUBSCRIPTIONS}.
    """
    record = document.get(url)
    if record is not None:
        if title is not None:
            record["title"] = title
        record["feed_type"] = feed_type
        return _subscription(url, record), False
    if len(document) >= MAX_SUBSCRIPTIONS:
        raise InvalidRequest(
            message=f"There are {MAX_SUBSCRIPTIONS} subscriptions already, the most kept.",
            next_step="Unsubscribe from feeds no longer read, then subscribe again.",
        )
    entries = {
        entry_url: {"title": entry_title, "published": published, "first_seen": stamp, "read": True}
        for entry_url, entry_title, published in found
    }
    _bound(entries)
    record = {
        "title": title,
        "feed_type": feed_type,
        "added": stamp,
        "last_checked": stamp,
        "last_error": None,
        "entries": entries,
    }
    document[url] = record
    return _subscription(url, record), True


def record_check_in(
    document: FeedDocument,
    url: str,
    found: list[tuple[str, str, str | None]],
    stamp: str,
    error: str | None,
) -> list[StoredEntry]:
    """
    Record in C{document} one check of C{url} at C{stamp}: its error, or
    the entries C{found}.  Return the entries that are new or changed (now
    unread); C{[]} when C{url} is not followed.
    """
    record = document.get(url)
    if record is None:
        return []
    record["last_checked"] = stamp
    record["last_error"] = error
    if error is not None:
        return []
    entries: dict[str, Any] = record["entries"]
    changed: list[str] = []
    for entry_url, title, published in found:
        known = entries.get(entry_url)
        if known is None:
            entries[entry_url] = {
                "title": title,
                "published": published,
                "first_seen": stamp,
                "read": False,
            }
        elif known["title"] != title or known["published"] != published:
            known.update(title=title, published=published, read=False)
        else:
            continue
        changed.append(entry_url)
    _bound(entries)
    return [
        stored_entry(entry_url, entries[entry_url]) for entry_url in changed if entry_url in entries
    ]


def _unread(
    document: FeedDocument, url: str | None, since: str | None
) -> list[tuple[Subscription, StoredEntry]]:
    feeds = sorted(document) if url is None else [url] if url in document else []
    picked: list[tuple[str, Subscription, StoredEntry]] = []
    for feed_url in feeds:
        record = document[feed_url]
        subscription = _subscription(feed_url, record)
        for entry_url, entry in sorted(record["entries"].items()):
            when = entry_time(entry)
            if not entry["read"] or (since is not None and when > since):
                picked.append((when, subscription, stored_entry(entry_url, entry)))
    picked.sort(key=lambda item: item[0], reverse=True)  # stable: ties stay by URL
    return [(subscription, entry) for _, subscription, entry in picked]


def _mark_read(document: FeedDocument, pairs: list[tuple[str, str]]) -> int:
    changed = 0
    for feed_url, entry_url in pairs:
        record = document.get(feed_url)
        entry = None if record is None else record["entries"].get(entry_url)
        if entry is not None and not entry["read"]:
            entry["read"] = True
            changed += 1
    return changed


# -- the providers ------------------------------------------------------------------------


@attrs.define
class DocumentFeedStore:
    """
    The L{IFeedStore} methods over one L{FeedDocument}, wherever it is
    kept: a subclass says how it is read (C{_view}) and changed, atomically
    (C{_update}).
    """

    def _view(self, inspect: Callable[[FeedDocument], _T]) -> _T:
        raise NotImplementedError

    def _update(self, change: Callable[[FeedDocument], _T]) -> _T:
        raise NotImplementedError

    def subscribe(
        self,
        url: str,
        title: str | None,
        feed_type: str,
        entries: Iterable[FeedEntry],
        now: float,
    ) -> tuple[Subscription, bool]:
        """
        Follow C{url}, with C{entries} (what it holds now) as the baseline,
        all read; subscribing again updates the title (when given) and the
        type and keeps what is known.  Return the subscription and whether
        it is new.

        @raise InvalidRequest: When the store holds L{MAX_SUBSCRIPTIONS}.
        """
        url = required_text(url, "url")
        title = optional_text(title, "title")
        feed_type = required_text(feed_type, "feed_type")
        found = found_entries(entries)
        stamp = utc_stamp(now)
        return self._update(
            lambda document: subscribe_in(document, url, title, feed_type, found, stamp)
        )

    def unsubscribe(self, url: str) -> bool:
        """Stop following C{url} and forget its entries; return whether it was followed."""
        return self._update(lambda document: document.pop(url, None) is not None)

    def get(self, url: str) -> Subscription | None:
        """The subscription to C{url}, or C{None}."""
        return self._view(
            lambda document: _subscription(url, document[url]) if url in document else None
        )

    def subscriptions(self) -> list[Subscription]:
        """Every subscription, sorted by URL."""
        return self._view(
            lambda document: [_subscription(url, document[url]) for url in sorted(document)]
        )

    def record_check(
        self,
        url: str,
        entries: Iterable[FeedEntry],
        now: float,
        error: str | None = None,
    ) -> list[StoredEntry]:
        """
        Record one check of C{url} in one step: when it ran, its error code,
        and (without an error) the entries found.  Return the entries that
        are new or changed (now unread), in the order given; C{[]} when
        C{url} is not followed (any more).
        """
        url = required_text(url, "url")
        found = found_entries(entries)
        stamp = utc_stamp(now)
        error = optional_text(error, "error")
        return self._update(lambda document: record_check_in(document, url, found, stamp, error))

    def unread(
        self, url: str | None = None, since: str | None = None
    ) -> list[tuple[Subscription, StoredEntry]]:
        """
        Every unread entry (of C{url} only, when given) with its feed, and
        with C{since} also every entry dated (or first seen) after it;
        newest first.

        @raise InvalidRequest: When C{since} is not an ISO 8601 date or time.
        """
        after = parse_since(since)
        return self._view(lambda document: _unread(document, url, after))

    def mark_read(self, items: Iterable[tuple[str, str]]) -> int:
        """
        Mark entries read, named by C{(feed_url, entry_url)}; unknown ones
        are skipped.  Return how many were unread.
        """
        pairs = entry_pairs(items)
        return self._update(lambda document: _mark_read(document, pairs))
