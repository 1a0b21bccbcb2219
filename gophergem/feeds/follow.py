# -*- test-case-name: tests.test_feeds_follow -*-
"""
Following capsules: subscribe to a page, then ask what is new on it.

A page is read over Gemini, Gopher, Spartan or Nex, and a Finger answer is
followed as a plan: each new text of it is one entry, dated when it was
first seen.

L{Follower} is the library's front for subscriptions; the MCP tools and the
console script call it and nothing else.  Every page it reads goes through
the L{IFetcher} every other fetch uses, so the same policy applies
(allowlists, SSRF, robots.txt, pacing, the per-host limit, deadlines, size
caps, sanitising) and a fresh cached copy is used when there is one.  What
was subscribed and seen is kept in an L{IFeedStore}, which may answer later:
every method that touches it returns a Deferred.

Reading a page:

  - a page longer than one window is read window by window (from the one
    download the cache keeps), at most L{MAX_WINDOWS} of them, the reactor
    let go between two (cutting a window costs milliseconds);
  - a redirect is followed, at most L{MAX_REDIRECTS} times, each hop a
    fetch under the same policy;
  - what the page is (gemsub, Atom, RSS, dated phlog, a Finger plan, or a
    plain page whose new links are tracked) is decided by
    L{gophergem.feeds.parse.detect_feed} (a Finger answer is a plan),
    off the reactor's thread (L{Follower.offload}): a large feed takes
    seconds to parse, and the reactor keeps serving meanwhile.

How fresh: subscribing reads the page like any fetch (a copy in the response
cache does, so the baseline is what the user just saw), while every check
(L{Follower.updates}, L{Follower.check_all}) reads what the capsule lists
now: its first window is fetched with C{refresh}, past the response cache,
under the same pacing and robots.txt as every fetch, so a burst of checks
is as polite as one.  The rest of a long page comes from that one download.
A check that fails in any way, even a bug, is that feed's L{FeedError}; the
other feeds are checked all the same.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
from twisted.internet.defer import CancelledError, Deferred, DeferredList
from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import deferLater
from twisted.logger import Logger

from gophergem import advice
from gophergem._defer import settle
from gophergem.config import Config
from gophergem.errors import (
    FetchError,
    GophergemError,
    InvalidRequest,
    NotFetchable,
    NotSubscribed,
)
from gophergem.feeds.parse import (
    FOLLOWED_SCHEMES,
    Entry,
    Feed,
    canonical_url,
    detect_feed,
    parse_plan_feed,
    plan_version,
)
from gophergem.feeds.subscriptions import parse_since
from gophergem.feeds.values import StoredEntry, Subscription
from gophergem.fetcher import Offload, run_inline
from gophergem.interfaces import IFeedStore, IFetcher
from gophergem.results import (
    BinaryResult,
    CertificateResult,
    FetchFailure,
    GeminiBinaryResult,
    GemtextResult,
    InputResult,
    MenuResult,
    PartialLineResult,
    RedirectResult,
    SuccessResult,
    TextResult,
)
from gophergem.url import scheme_of
from gophergem.wire.smolweb import parse_url

__all__ = ["MAX_REDIRECTS", "MAX_WINDOWS", "FeedError", "Follower", "Update", "Updates"]

MAX_WINDOWS = 20
"""How many windows of one page are read, at most (a page longer than that is read in part)."""

MAX_REDIRECTS = 5
"""How many redirects in a row are followed when reading a page."""

DEFAULT_LIMIT = 50
MAX_LIMIT = 500

log = Logger()


@attrs.frozen
class Update:
    """One entry not read before, with the feed it came from."""

    feed_url: str
    feed_title: str | None
    url: str
    title: str
    published: str | None
    first_seen: str


@attrs.frozen
class FeedError:
    """A subscription that could not be checked, and why."""

    feed_url: str
    error: GophergemError


@attrs.frozen
class Updates:
    """
    What L{Follower.updates} found: new entries newest first (at most the
    limit asked for), whether more were left out, how many subscriptions
    were checked, and the ones that failed.
    """

    entries: tuple[Update, ...]
    more: bool
    checked: int
    errors: tuple[FeedError, ...]


_FOLLOWED = "gemini://, gopher://, spartan://, nex:// or finger://"

#: Any time before every entry's: unread entries and every one dated after it are all of them.
_EVER = "1970-01-01T00:00:00Z"


def _canonical(url: str) -> str:
    """The subscription key of C{url}; L{InvalidRequest} for a scheme that cannot be followed."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidRequest(message=f"Give the {_FOLLOWED} URL of a page to follow.")
    scheme = scheme_of(url)  # raises InvalidRequest on text that is no URL
    if scheme not in FOLLOWED_SCHEMES:
        raise InvalidRequest(message=f"Only {_FOLLOWED} pages can be followed, not {scheme}: URLs.")
    if scheme in ("gemini", "gopher"):
        return canonical_url(url.strip())
    # Read here, not by canonical_url, so that what could never be fetched
    # (a forwarding finger query) is refused rather than kept as written.
    return parse_url(url.strip()).to_text()


@attrs.define
class Follower:
    """
    Subscriptions, read through C{fetcher} and remembered in C{store}.

    @ivar now: The wall clock, in seconds since the epoch (for "first seen"
        times and the future-date rule of dated phlogs); a parameter so
        that tests are deterministic.
    @ivar offload: Where a page is parsed: C{None} (the default) is where
        C{fetcher} parses large responses (the reactor's thread pool, see
        L{gophergem.fetcher._pipeline.offloader}), else on the calling
        thread; tests pass L{run_inline} or one that holds the work.
    """

    fetcher: IFetcher
    store: IFeedStore
    now: Any = time.time
    max_windows: int = MAX_WINDOWS
    offload: Offload | None = None

    @classmethod
    def from_config(
        cls, fetcher: IFetcher, config: Config, environ: Mapping[str, str] | None = None
    ) -> Follower:
        """
        A follower keeping its subscriptions where C{config} says
        (C{GOPHERGEM_FEEDS_STORAGE_PATH}, else C{feeds.json} in the data
        directory of C{environ}).
        """
        from gophergem.state.files import FileFeedStore
        from gophergem.state.paths import feed_store_path

        environ = os.environ if environ is None else environ
        path = feed_store_path(config.feeds.storage_path, environ)
        return cls(fetcher, FileFeedStore(str(path)))

    # --- reading a page ---------------------------------------------------------

    async def read(self, url: str, *, fresh: bool = False) -> tuple[str, Feed]:
        """
        Fetch C{url} whole and say what it is; return the URL finally read
        (after redirects) and the feed.

        @param fresh: Read what the capsule serves now: the first window of
            each hop skips the response cache (C{refresh}); the others come
            from that download.
        @raise GophergemError: The fetch's own error (BLOCKED, TIMEOUT, ...),
            or L{NotFetchable} for an answer that is no page (a binary, an
            input prompt, a certificate request, a redirect loop).
        """
        seen = {url}
        for _ in range(MAX_REDIRECTS + 1):
            first = await self._fetch(url, 0, refresh=fresh)
            if isinstance(first, RedirectResult):
                target = first.new_url
                if target in seen:
                    raise NotFetchable(message="The page redirects in a loop.")
                seen.add(target)
                url = target
                continue
            return url, await self._whole(url, first)
        raise NotFetchable(message=f"The page redirects more than {MAX_REDIRECTS} times.")

    def _fetch(self, url: str, offset: int, *, refresh: bool = False) -> Deferred[Any]:
        scheme = scheme_of(url)
        if scheme == "gemini":
            return self.fetcher.gemini(url, offset=offset, refresh=refresh)
        if scheme == "gopher":
            return self.fetcher.gopher(url, offset=offset, refresh=refresh)
        return self.fetcher.smolweb(url, offset=offset, refresh=refresh)

    async def _whole(self, url: str, first: Any) -> Feed:
        windows = [first]
        while len(windows) < self.max_windows:
            last = windows[-1]
            if isinstance(last, FetchFailure):
                raise last.error
            window = getattr(last, "window", None)
            if window is None or window.next_offset is None:
                break
            await self._breathe()
            windows.append(await self._fetch(url, window.next_offset))
        if isinstance(windows[-1], FetchFailure):  # the last window read may have failed too
            raise windows[-1].error
        return await self._offload()(self._parser(url, windows))

    async def _breathe(self) -> None:
        """
        Let the reactor run what else is due (a turn of its loop), when the
        fetcher names its clock: between two windows, two store calls.
        """
        clock: IReactorTime | None = getattr(self.fetcher, "clock", None)
        if clock is not None:
            await deferLater(clock, 0)

    def _offload(self) -> Offload:
        """L{offload}, else the fetcher's (a L{Fetcher<gophergem.fetcher.Fetcher>} has one)."""
        if self.offload is not None:
            return self.offload
        found: Offload = getattr(self.fetcher, "offload", run_inline)
        return found

    def _parser(self, url: str, windows: Sequence[Any]) -> Callable[[], Feed]:
        """
        The pure work of reading C{windows} as a feed (for L{offload}: it
        touches nothing shared), or the error the first window is.
        """
        first = windows[0]
        if isinstance(first, FetchFailure):
            raise first.error
        now = self.now()
        if isinstance(first, MenuResult):

            def menu() -> Feed:
                items = [item for w in windows for item in w.items]
                return detect_feed(url, mime=None, items=items, now=now)

            return menu
        if isinstance(first, GemtextResult):

            def gemtext() -> Feed:
                text = "\n".join(line.content for w in windows for line in w.lines)
                return detect_feed(url, mime="text/gemini", text=text, now=now)

            return gemtext
        if isinstance(first, SuccessResult):
            mime = first.mime.essence

            def success() -> Feed:
                body = "".join(w.content for w in windows).encode("utf-8")
                return detect_feed(url, mime=mime, body=body, now=now)

            return success
        if isinstance(first, TextResult | PartialLineResult) and scheme_of(url) == "finger":

            def plan() -> Feed:
                return parse_plan_feed(url, "".join(getattr(w, "text", "") for w in windows))

            return plan
        if isinstance(first, TextResult | PartialLineResult):

            def text() -> Feed:
                body = "".join(getattr(w, "text", "") for w in windows)
                return detect_feed(url, mime=None, body=body.encode("utf-8"), text=body, now=now)

            return text
        if isinstance(first, InputResult):
            raise NotFetchable(message="The page asks for input; a prompt cannot be followed.")
        if isinstance(first, CertificateResult):
            raise NotFetchable(
                message="The capsule asks for a client certificate before it shows the page."
            )
        if isinstance(first, BinaryResult | GeminiBinaryResult):
            raise NotFetchable(message="That is a binary file, not a page or a feed.")
        raise NotFetchable(message="That answer is not a page or a feed.")

    # --- subscriptions ------------------------------------------------------------

    def subscribe(self, url: str, title: str | None = None) -> Deferred[tuple[Subscription, bool]]:
        """
        Read C{url} once, say what it is, and follow it: what it lists now
        is the baseline (read), so only what appears later is new.  Subscribing
        again keeps what was seen (and takes a new C{title}, if given).

        @return: Fires with the subscription and whether it is new; fails
            with the L{GophergemError} that kept the page from being read
            (nothing is stored then).
        """
        return Deferred.fromCoroutine(self._subscribe(url, title))

    async def _subscribe(self, url: str, title: str | None) -> tuple[Subscription, bool]:
        key = _canonical(url)
        if title is not None and not isinstance(title, str):
            raise InvalidRequest(message="title must be a string.")
        _, feed = await self.read(key)
        name = (title or "").strip() or feed.title
        return await settle(
            self.store.subscribe(key, name, feed.feed_type, feed.entries, self.now())
        )

    def unsubscribe(self, url: str) -> Deferred[str]:
        """
        Stop following C{url}; fire with its key.

        Fails with L{NotSubscribed} when it was not followed.
        """
        return Deferred.fromCoroutine(self._unsubscribe(url))

    async def _unsubscribe(self, url: str) -> str:
        key = _canonical(url)
        if not await settle(self.store.unsubscribe(key)):
            raise NotSubscribed(
                message="That URL is not one of the subscriptions.",
                next_step=f"{advice.call()} {advice.name(advice.LIST_FEEDS)} to see the "
                "subscriptions.",
            )
        return key

    def unread(self) -> Deferred[tuple[Update, ...]]:
        """The entries not read yet, as of the last check, newest first (nothing is fetched)."""

        def updates(found: list[tuple[Subscription, StoredEntry]]) -> tuple[Update, ...]:
            return tuple(_update(sub, entry) for sub, entry in found)

        return settle(self.store.unread()).addCallback(updates)

    def subscriptions(self) -> Deferred[list[Subscription]]:
        """Every subscription, by URL."""
        return settle(self.store.subscriptions())

    async def _check(self, url: str) -> FeedError | None:
        """
        Read one subscription as it is now and record what is new; the
        failure, if any, is recorded too.  Anything unexpected is logged
        once, with its traceback, and is this feed's C{FETCH_ERROR}.
        """
        try:
            _, feed = await self.read(url, fresh=True)
            entries: Sequence[Entry] = feed.entries
            if feed.feed_type == "plan":
                entries = await self._plan_entries(url, entries)
            await settle(self.store.record_check(url, entries, self.now()))
        except CancelledError:
            raise
        except GophergemError as error:
            failed = FeedError(url, error)
        except Exception:
            log.failure("feeds: checking {url} failed unexpectedly", url=url)
            failed = FeedError(url, _internal())
        else:
            return None
        try:
            await settle(self.store.record_check(url, [], self.now(), error=failed.error.code))
        except CancelledError:
            raise
        except GophergemError:
            pass  # the store itself failed: the check's own error says enough
        except Exception:
            log.failure("feeds: recording the failed check of {url} failed", url=url)
        return failed

    async def _plan_entries(self, url: str, found: Sequence[Entry]) -> Sequence[Entry]:
        """
        The plan C{found} as the entry to record: the one kept when the
        plan reads as last seen, a new one whenever it changed (even back
        to an older text), see L{plan_version}.
        """
        if len(found) != 1:
            return found
        kept = await settle(self.store.unread(url, _EVER))
        return (plan_version(found[0], [(entry.url, entry.first_seen) for _, entry in kept]),)

    def check_all(self, urls: Sequence[str] | None = None) -> Deferred[list[FeedError]]:
        """
        Read every subscription (or those of C{urls}) at once: the fetcher
        paces each host and bounds connections, so this is as polite as one
        at a time to a small host, and as fast as it can be across hosts.
        """
        return Deferred.fromCoroutine(self._check_all(urls))

    async def _check_all(self, urls: Sequence[str] | None) -> list[FeedError]:
        keys = [s.url for s in await self.subscriptions()] if urls is None else list(urls)
        return await self._check_keys(keys)

    async def _check_keys(
        self, keys: Sequence[str], progress: Callable[[str, int], object] | None = None
    ) -> list[FeedError]:
        checks = [Deferred.fromCoroutine(self._check(key)) for key in keys]
        if progress is not None:
            for key, check in zip(keys, checks, strict=True):
                check.addBoth(_told, progress, key, len(keys))
        outcomes = await DeferredList(checks, consumeErrors=True)
        errors = []
        for key, (ok, value) in zip(keys, outcomes, strict=True):
            if not ok:
                failure: Any = value
                if failure.check(CancelledError):
                    failure.raiseException()
                if failure.check(GophergemError):
                    errors.append(FeedError(key, failure.value))
                else:  # _check lets nothing else out; should it, it is still one feed's
                    log.failure("feeds: checking {url} failed unexpectedly", failure, url=key)
                    errors.append(FeedError(key, _internal()))
            elif value is not None:
                errors.append(value)
        return errors

    def updates(
        self,
        url: str | None = None,
        since: str | None = None,
        mark_read: bool = True,
        limit: int = DEFAULT_LIMIT,
        progress: Callable[[str, int], object] | None = None,
    ) -> Deferred[Updates]:
        """
        Check the subscriptions (or the one at C{url}) and return what is
        new: entries never seen before, or with C{since} (ISO 8601), every
        entry published (or first seen) after it; newest first, at most
        C{limit}.  With C{mark_read}, the entries returned count as read.

        Fails with L{NotSubscribed} when C{url} is given and not followed,
        with L{InvalidRequest} for a bad C{limit} or C{since}.

        @param progress: Called as each subscription's check ends, in the
            order they end, with its URL and how many are being checked
            (what it raises is logged and changes nothing).
        """
        return Deferred.fromCoroutine(self._updates(url, since, mark_read, limit, progress))

    async def _updates(
        self,
        url: str | None,
        since: str | None,
        mark_read: bool,
        limit: int,
        progress: Callable[[str, int], object] | None = None,
    ) -> Updates:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidRequest(message=f"limit must be a whole number from 1 to {MAX_LIMIT}.")
        parse_since(since)  # a bad one is refused before anything is fetched
        key = None
        if url is not None:
            key = _canonical(url)
            if await settle(self.store.get(key)) is None:
                raise NotSubscribed(
                    message="That URL is not one of the subscriptions.",
                    next_step=f"{advice.call()} {advice.name(advice.SUBSCRIBE)} first, or "
                    f"{advice.name(advice.LIST_FEEDS)} to see them.",
                )
        keys = [key] if key is not None else [s.url for s in await self.subscriptions()]
        errors = await self._check_keys(keys, progress)
        # A file store answers at once, after tens of milliseconds for a large
        # feed: the reactor gets a turn between two such calls.
        await self._breathe()
        found: list[tuple[Subscription, StoredEntry]] = await settle(self.store.unread(key, since))
        shown = found[:limit]
        if mark_read and shown:
            await self._breathe()
            await settle(self.store.mark_read([(sub.url, entry.url) for sub, entry in shown]))
        return Updates(
            entries=tuple(_update(sub, entry) for sub, entry in shown),
            more=len(found) > limit,
            checked=len(keys),
            errors=tuple(errors),
        )


def _told(outcome: Any, progress: Callable[[str, int], object], url: str, total: int) -> Any:
    """Tell C{progress} that the check of C{url} ended; pass its outcome on unchanged."""
    try:
        progress(url, total)
    except Exception:
        log.failure("feeds: a progress callback failed")
    return outcome


def _internal() -> FetchError:
    return FetchError(message="An internal error stopped this check; it is logged.")


def _update(sub: Subscription, entry: StoredEntry) -> Update:
    return Update(
        feed_url=sub.url,
        feed_title=sub.title,
        url=entry.url,
        title=entry.title,
        published=entry.published,
        first_seen=entry.first_seen,
    )
