# -*- test-case-name: tests.test_state_feeds -*-
"""
The values of following feeds: a subscription, an entry as a store
remembers it, and what a store needs of an entry a check found.

They live apart from the stores (L{gophergem.state}) so that
L{gophergem.interfaces} can name them in L{IFeedStore} without importing a
store, which imports the interface.
"""

from __future__ import annotations

from typing import Protocol

import attrs

__all__ = ["FeedEntry", "StoredEntry", "Subscription"]


class FeedEntry(Protocol):
    """
    What the stores need of an entry a check found: the parser's
    C{gophergem.feeds.parse.Entry} is one, and so is L{StoredEntry}.
    """

    @property
    def url(self) -> str:
        """The entry's URL, which identifies it within its feed."""

    @property
    def title(self) -> str:
        """Its display title."""

    @property
    def published(self) -> str | None:
        """When it was published (ISO 8601), if the feed says."""


@attrs.frozen
class StoredEntry:
    """
    One entry of a feed, as remembered.

    @ivar url: The entry's URL.
    @ivar title: Its title when last seen.
    @ivar published: When it was published (ISO 8601 UTC), or C{None}.
    @ivar first_seen: When this store first recorded it (ISO 8601 UTC).
    @ivar read: Whether it has been reported (or was part of the baseline).
    """

    url: str
    title: str
    published: str | None
    first_seen: str
    read: bool


@attrs.frozen
class Subscription:
    """
    One followed URL.

    @ivar url: The URL as the caller gave it (canonicalising it is theirs).
    @ivar title: The feed's title, if known.
    @ivar feed_type: What the feed was detected to be (C{gemsub}, C{atom}, ...).
    @ivar added: When it was subscribed (ISO 8601 UTC).
    @ivar last_checked: When it was last checked, or C{None}.
    @ivar last_error: The error code of the last check, C{None} after a good one.
    @ivar entries_known: How many entries are remembered.
    @ivar unread: How many of them are unread.
    """

    url: str
    title: str | None
    feed_type: str
    added: str
    last_checked: str | None
    last_error: str | None
    entries_known: int
    unread: int
