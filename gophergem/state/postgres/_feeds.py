# -*- test-case-name: tests.test_state_feeds -*-
"""
L{PostgresFeedStore}: one principal's feed subscriptions and entries in
PostgreSQL, with the semantics of the file store
(L{gophergem.state.files.feeds}); every method returns a L{Deferred}.

Changes run the pure operations every feed store shares
(L{gophergem.feeds.subscriptions}) on the one subscription they touch,
loaded inside the transaction, and write back what changed; every change
of a principal's feeds takes that principal's transaction advisory lock, so
two replicas checking the same feed apply their checks one after the other,
as two processes sharing C{feeds.json} do.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs
from twisted.internet.defer import Deferred, fail
from zope.interface import implementer

from gophergem.feeds.subscriptions import (
    entry_pairs,
    entry_time,
    found_entries,
    optional_text,
    parse_since,
    record_check_in,
    required_text,
    stored_entry,
    subscribe_in,
    utc_stamp,
)
from gophergem.feeds.values import FeedEntry, StoredEntry, Subscription
from gophergem.interfaces import IFeedStore

if TYPE_CHECKING:
    from psycopg import AsyncConnection

    from gophergem.state.postgres._runner import Runner

__all__ = ["PostgresFeedStore"]

_SUBSCRIPTION = """
SELECT s.url, s.title, s.feed_type, s.added, s.last_checked, s.last_error,
    (SELECT count(*) FROM gophergem_entries e
        WHERE e.principal = s.principal AND e.feed_url = s.url),
    (SELECT count(*) FROM gophergem_entries e
        WHERE e.principal = s.principal AND e.feed_url = s.url AND NOT e.read)
FROM gophergem_subscriptions s
WHERE s.principal = %s
"""


def _subscription(row: tuple[Any, ...]) -> Subscription:
    url, title, feed_type, added, last_checked, last_error, known, unread = row
    return Subscription(
        url=url,
        title=title,
        feed_type=feed_type,
        added=added,
        last_checked=last_checked,
        last_error=last_error,
        entries_known=known,
        unread=unread,
    )


class _Counted(dict[str, Any]):
    """A document holding one subscription that reports the principal's total as its size."""

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def __len__(self) -> int:
        return self.count


async def _lock(connection: AsyncConnection[Any], principal: str) -> None:
    await connection.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        ("gophergem-feeds:" + principal,),
    )


async def _load(
    connection: AsyncConnection[Any], principal: str, url: str
) -> dict[str, Any] | None:
    """One subscription in the file store's document form, or C{None}."""
    cursor = await connection.execute(
        "SELECT title, feed_type, added, last_checked, last_error"
        " FROM gophergem_subscriptions WHERE principal = %s AND url = %s",
        (principal, url),
    )
    row = await cursor.fetchone()
    if row is None:
        return None
    title, feed_type, added, last_checked, last_error = row
    cursor = await connection.execute(
        "SELECT url, title, published, first_seen, read FROM gophergem_entries"
        " WHERE principal = %s AND feed_url = %s",
        (principal, url),
    )
    entries = {
        entry_url: {
            "title": entry_title,
            "published": published,
            "first_seen": first_seen,
            "read": read,
        }
        for entry_url, entry_title, published, first_seen, read in await cursor.fetchall()
    }
    return {
        "title": title,
        "feed_type": feed_type,
        "added": added,
        "last_checked": last_checked,
        "last_error": last_error,
        "entries": entries,
    }


async def _save_entries(
    connection: AsyncConnection[Any],
    principal: str,
    url: str,
    before: dict[str, Any],
    after: dict[str, Any],
) -> None:
    """Write the difference between two versions of a feed's entries."""
    gone = [entry_url for entry_url in before if entry_url not in after]
    if gone:
        await connection.execute(
            "DELETE FROM gophergem_entries"
            " WHERE principal = %s AND feed_url = %s AND url = ANY(%s)",
            (principal, url, gone),
        )
    changed = [
        (principal, url, entry_url, e["title"], e["published"], e["first_seen"], e["read"])
        for entry_url, e in after.items()
        if before.get(entry_url) != e
    ]
    if changed:
        async with connection.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO gophergem_entries"
                " (principal, feed_url, url, title, published, first_seen, read)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (principal, feed_url, url) DO UPDATE SET"
                " title = excluded.title, published = excluded.published,"
                " first_seen = excluded.first_seen, read = excluded.read",
                changed,
            )


@implementer(IFeedStore)
@attrs.frozen
class PostgresFeedStore:
    """
    The feed subscriptions of one principal (C{''}: the local owner).

    Arguments are checked exactly as the file store checks them, before
    anything is sent; a refused call fails its Deferred with C{TypeError},
    C{ValueError} or L{InvalidRequest} and changes nothing.  Every Deferred
    fails with L{StateUnavailable} when PostgreSQL is down or slow.
    """

    _runner: Runner
    principal: str = ""

    def subscribe(
        self,
        url: str,
        title: str | None,
        feed_type: str,
        entries: Iterable[FeedEntry],
        now: float,
    ) -> Deferred[tuple[Subscription, bool]]:
        """Follow C{url} with C{entries} as its read baseline; see L{IFeedStore.subscribe}."""
        try:
            url = required_text(url, "url")
            title = optional_text(title, "title")
            feed_type = required_text(feed_type, "feed_type")
            found = found_entries(entries)
            stamp = utc_stamp(now)
        except (TypeError, ValueError) as e:
            return fail(e)

        async def work(connection: AsyncConnection[Any]) -> tuple[Subscription, bool]:
            await _lock(connection, self.principal)
            record = await _load(connection, self.principal, url)
            if record is None:
                cursor = await connection.execute(
                    "SELECT count(*) FROM gophergem_subscriptions WHERE principal = %s",
                    (self.principal,),
                )
                row = await cursor.fetchone()
                document = _Counted(row[0] if row else 0)
            else:
                document = _Counted(1)
                document[url] = record
            before = copy.deepcopy(record["entries"]) if record else {}
            subscription, created = subscribe_in(document, url, title, feed_type, found, stamp)
            record = document[url]
            if created:
                await connection.execute(
                    "INSERT INTO gophergem_subscriptions"
                    " (principal, url, title, feed_type, added, last_checked, last_error)"
                    " VALUES (%s, %s, %s, %s, %s, %s, %s)",
                    (
                        self.principal,
                        url,
                        record["title"],
                        record["feed_type"],
                        record["added"],
                        record["last_checked"],
                        record["last_error"],
                    ),
                )
                await _save_entries(connection, self.principal, url, {}, record["entries"])
            else:
                await connection.execute(
                    "UPDATE gophergem_subscriptions SET title = %s, feed_type = %s"
                    " WHERE principal = %s AND url = %s",
                    (record["title"], record["feed_type"], self.principal, url),
                )
                await _save_entries(connection, self.principal, url, before, record["entries"])
            return subscription, created

        return self._runner.call(work)

    def unsubscribe(self, url: str) -> Deferred[bool]:
        """Stop following C{url} and forget its entries; fire with whether it was followed."""

        async def work(connection: AsyncConnection[Any]) -> bool:
            await _lock(connection, self.principal)
            cursor = await connection.execute(
                "DELETE FROM gophergem_subscriptions WHERE principal = %s AND url = %s",
                (self.principal, url),
            )
            return cursor.rowcount > 0

        return self._runner.call(work)

    def get(self, url: str) -> Deferred[Subscription | None]:
        """The subscription to C{url}, or C{None}."""

        async def work(connection: AsyncConnection[Any]) -> Subscription | None:
            cursor = await connection.execute(
                _SUBSCRIPTION + " AND s.url = %s", (self.principal, url)
            )
            row = await cursor.fetchone()
            return None if row is None else _subscription(row)

        return self._runner.call(work)

    def subscriptions(self) -> Deferred[list[Subscription]]:
        """Every subscription, sorted by URL."""

        async def work(connection: AsyncConnection[Any]) -> list[Subscription]:
            cursor = await connection.execute(_SUBSCRIPTION, (self.principal,))
            found = [_subscription(row) for row in await cursor.fetchall()]
            return sorted(found, key=lambda subscription: subscription.url)

        return self._runner.call(work)

    def record_check(
        self,
        url: str,
        entries: Iterable[FeedEntry],
        now: float,
        error: str | None = None,
    ) -> Deferred[list[StoredEntry]]:
        """Record one check of C{url} in one transaction; see L{IFeedStore.record_check}."""
        try:
            url = required_text(url, "url")
            found = found_entries(entries)
            stamp = utc_stamp(now)
            error = optional_text(error, "error")
        except (TypeError, ValueError) as e:
            return fail(e)

        async def work(connection: AsyncConnection[Any]) -> list[StoredEntry]:
            await _lock(connection, self.principal)
            record = await _load(connection, self.principal, url)
            if record is None:
                return []
            before = copy.deepcopy(record["entries"])
            changed = record_check_in({url: record}, url, found, stamp, error)
            await connection.execute(
                "UPDATE gophergem_subscriptions SET last_checked = %s, last_error = %s"
                " WHERE principal = %s AND url = %s",
                (record["last_checked"], record["last_error"], self.principal, url),
            )
            await _save_entries(connection, self.principal, url, before, record["entries"])
            return changed

        return self._runner.call(work)

    def unread(
        self, url: str | None = None, since: str | None = None
    ) -> Deferred[list[tuple[Subscription, StoredEntry]]]:
        """
        The unread entries (of C{url} only, when given), and with C{since}
        every entry dated or first seen after it; newest first.  Fails with
        L{InvalidRequest} when C{since} is not a date or time.
        """
        try:
            after = parse_since(since)
        except Exception as e:
            return fail(e)

        async def work(connection: AsyncConnection[Any]) -> list[tuple[Subscription, StoredEntry]]:
            if url is None:
                cursor = await connection.execute(_SUBSCRIPTION, (self.principal,))
            else:
                cursor = await connection.execute(
                    _SUBSCRIPTION + " AND s.url = %s", (self.principal, url)
                )
            feeds = {row[0]: _subscription(row) for row in await cursor.fetchall()}
            cursor = await connection.execute(
                "SELECT feed_url, url, title, published, first_seen, read FROM gophergem_entries"
                " WHERE principal = %s AND (%s::text IS NULL OR feed_url = %s) AND (NOT read"
                " OR (%s::text IS NOT NULL"
                ' AND coalesce(published, first_seen) COLLATE "C" > %s::text COLLATE "C"))',
                (self.principal, url, url, after, after),
            )
            rows = sorted(await cursor.fetchall(), key=lambda row: (row[0], row[1]))
            picked: list[tuple[str, Subscription, StoredEntry]] = []
            for feed_url, entry_url, title, published, first_seen, read in rows:
                subscription = feeds.get(feed_url)
                if subscription is None:
                    continue
                entry = {
                    "title": title,
                    "published": published,
                    "first_seen": first_seen,
                    "read": read,
                }
                picked.append((entry_time(entry), subscription, stored_entry(entry_url, entry)))
            picked.sort(key=lambda item: item[0], reverse=True)  # stable, as the file store
            return [(subscription, entry) for _, subscription, entry in picked]

        return self._runner.call(work)

    def mark_read(self, items: Iterable[tuple[str, str]]) -> Deferred[int]:
        """Mark the C{(feed_url, entry_url)} entries read; fire with how many were unread."""
        try:
            pairs = entry_pairs(items)
        except (TypeError, ValueError) as e:
            return fail(e)
        if not pairs:
            return self._runner.call(_nothing)

        async def work(connection: AsyncConnection[Any]) -> int:
            await _lock(connection, self.principal)
            cursor = await connection.execute(
                "UPDATE gophergem_entries e SET read = true"
                " FROM unnest(%s::text[], %s::text[]) AS p(feed_url, url)"
                " WHERE e.principal = %s AND e.feed_url = p.feed_url AND e.url = p.url"
                " AND NOT e.read",
                ([f for f, _ in pairs], [u for _, u in pairs], self.principal),
            )
            return cursor.rowcount

        return self._runner.call(work)


async def _nothing(connection: AsyncConnection[Any]) -> int:
    return 0
