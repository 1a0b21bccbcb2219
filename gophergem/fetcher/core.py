# -*- test-case-name: tests.test_fetcher -*-
"""
One fetch, straight down the layers: URL, policy, cache, client, result.

L{Fetcher} is the one implementation that the library, the C{gophergem
fetch} command and the MCP tools all call.  Its methods return Deferreds that
never fail: every problem becomes a L{FetchFailure} carrying a coded error.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, TypeVar

import attrs
from twisted.internet.defer import CancelledError, Deferred, gatherResults
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger
from zope.interface import implementer

from gophergem.client.connect import Connector
from gophergem.client.gopher import GopherClientFactory, RawResponse
from gophergem.config import GopherConfig
from gophergem.errors import (
    ConnectionFailed,
    GophergemError,
    InvalidRequest,
    NotFetchable,
)
from gophergem.fetcher.budget import cut_items, cut_text
from gophergem.fetcher.common import (
    SMALL_WEIGHT,
    Deadline,
    Offload,
    check_allowlists,
    internal_failure,
    parse_off_reactor,
    run_inline,
    within_deadline,
)
from gophergem.fetcher.gemini import GeminiPipeline
from gophergem.interfaces import IFetcher, IIdentityStore, IPinStore, IResponseCache
from gophergem.policy.pacing import ConcurrencyCap, HostPacer
from gophergem.policy.robots import RobotsGate
from gophergem.results import (
    BinaryResult,
    CacheInfo,
    FetchFailure,
    FetchResult,
    GeminiResult,
    MenuResult,
    RequestInfo,
    TextResult,
    Window,
    iso_utc,
)
from gophergem.tls import PresentedCertificate
from gophergem.trust import Pin
from gophergem.url import GopherURL, safe_echo
from gophergem.wire import gopher as wire
from gophergem.wire.robots import MAX_ROBOTS_BYTES, gopher_robot_paths

__all__ = ["MAX_BATCH", "Fetcher"]

log = Logger()

MAX_BATCH = 50

# A parsed menu holds its bytes up to four times over (title, selector,
# host, and the next_url, percent-encoded) plus, per item, its object and
# the headers of its strings; tests/test_windows.py measures the estimate
# against tracemalloc.
_MENU_ITEM_WEIGHT = 300
# What a window is cut from: a menu's items or a text body (a slice keeps the type).
_Windowed = TypeVar("_Windowed", tuple[wire.MenuItem, ...], str)


@attrs.frozen
class _Download:
    """A parsed response as the cache keeps it: the whole resource, not a window."""

    category: wire.Category
    size: int
    overflowed: bool
    fetched_at: float
    menu: wire.Menu | None = None
    text: wire.TextBody | None = None
    mime_type: str = ""
    incomplete_reason: str | None = None

    @property
    def weight(self) -> int:
        """
        About what this download holds in memory: the cache's measure.  A
        parsed menu costs far more than its bytes on the wire (each item is
        an object with its own strings), so it is counted per item as well.
        """
        if self.menu is not None:
            return 4 * self.size + _MENU_ITEM_WEIGHT * len(self.menu.items)
        if self.text is not None:
            return sys.getsizeof(self.text.text)
        return SMALL_WEIGHT


@implementer(IFetcher)
@attrs.define
class Fetcher:
    """
    Fetch Gopher resources under a policy.

    @ivar clock: The time source for deadlines, timestamps and the cache.
    @ivar connector: The connect pinch point.
    @ivar gopher_config: Limits and switches for Gopher.
    @ivar gopher_cache: Where parsed Gopher responses are kept, if anywhere.
    @ivar offload: How a large response is parsed: on the reactor's thread
        pool in production (L{gophergem.fetcher.common.offloader}), inline
        by default and on memory reactors.
    """

    clock: IReactorTime
    connector: Connector
    gopher_config: GopherConfig = attrs.field(factory=GopherConfig)
    gopher_cache: IResponseCache | None = None
    gemini_pipeline: GeminiPipeline | None = None
    offload: Offload = attrs.field(default=run_inline, kw_only=True)
    _robots: RobotsGate | None = attrs.field(init=False, default=None)
    _pacer: HostPacer = attrs.field(init=False)
    _cap: ConcurrencyCap = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        config = self.gopher_config
        self._pacer = HostPacer(self.clock, config.requests_per_minute)
        self._cap = ConcurrencyCap(config.max_concurrent_requests)
        if config.respect_robots_txt:
            self._robots = RobotsGate.for_gopher(self.clock, self._fetch_robots, config)

    # --- public API -------------------------------------------------------

    @property
    def pins(self) -> IPinStore | None:
        """The TOFU pin store, or C{None} (TOFU off, or no Gemini)."""
        return self.gemini_pipeline.pins if self.gemini_pipeline is not None else None

    @property
    def identities(self) -> IIdentityStore | None:
        """The client identity store, or C{None} (identities off, or no Gemini)."""
        return self.gemini_pipeline.identities if self.gemini_pipeline is not None else None

    @property
    def gemini_enabled(self) -> bool:
        """Whether gemini:// URLs are fetched."""
        return self.gemini_pipeline is not None

    def trust_presented(self, host: str, port: int, presented: PresentedCertificate) -> Pin:
        """Re-pin C{host}:C{port} to what it presented: on the user's explicit consent only."""
        if self.gemini_pipeline is None:
            raise RuntimeError("this fetcher was built without Gemini support")
        return self.gemini_pipeline.trust_presented(host, port, presented)

    def gopher(
        self,
        url: str,
        *,
        search: str | None = None,
        offset: int = 0,
        refresh: bool = False,
    ) -> Deferred[FetchResult]:
        """
        Fetch one Gopher URL.

        @param search: Search terms for a type-7 item, as the user typed them;
            they replace any in the URL.  Ignored (and said so) on other types.
        @param offset: Where the window starts: items for a menu, characters
            for a text body.
        @param refresh: Skip the cached copy and store the fresh one.
        @return: A Deferred that always fires with a result, never fails.
        """
        return Deferred.fromCoroutine(self._gopher(url, search, offset, refresh))

    def gopher_batch(
        self, urls: Sequence[str], *, refresh: bool = False
    ) -> Deferred[list[FetchResult]]:
        """
        Fetch up to L{MAX_BATCH} Gopher URLs; results come back in input order.

        A batch that is empty or too long fails as a whole with
        L{InvalidRequest}; otherwise each URL gets its own result.
        """
        return self._batch(self.gopher, urls, refresh)

    def gemini(
        self,
        url: str,
        *,
        input: str | None = None,
        offset: int = 0,
        refresh: bool = False,
    ) -> Deferred[GeminiResult]:
        """
        Fetch one Gemini URL.

        @param input: An answer to a 10/11 prompt; it replaces the URL's query.
        @param offset: Where the window starts, in characters.
        @param refresh: Skip the cached copy and store the fresh one.
        @return: A Deferred that always fires with a result, never fails.
        """
        if self.gemini_pipeline is None:
            raise RuntimeError("this fetcher was built without Gemini support")
        return self.gemini_pipeline.fetch(url, input=input, offset=offset, refresh=refresh)

    def gemini_batch(
        self, urls: Sequence[str], *, refresh: bool = False
    ) -> Deferred[list[GeminiResult]]:
        """Fetch up to L{MAX_BATCH} Gemini URLs; see L{gopher_batch}."""
        return self._batch(self.gemini, urls, refresh)

    def _batch(self, fetch_one: Any, urls: Sequence[str], refresh: bool) -> Deferred[list[Any]]:
        if isinstance(urls, str) or not urls or len(urls) > MAX_BATCH:
            count = 1 if isinstance(urls, str) else len(urls)
            raise InvalidRequest(
                message=f"A batch takes 1 to {MAX_BATCH} URLs; this one has {count}.",
                next_step=f"Split the list into batches of at most {MAX_BATCH}.",
            )
        # Concurrency and per-host pacing are enforced inside each fetch.
        return gatherResults([fetch_one(url, refresh=refresh) for url in urls])

    # --- the pipeline -----------------------------------------------------

    async def _gopher(
        self, text: str, search: str | None, offset: int, refresh: bool
    ) -> FetchResult:
        info = RequestInfo(url=safe_echo(text) if isinstance(text, str) else "")
        try:
            url = GopherURL.from_text(text)
            url, search_ignored = self._apply_search(url, search)
            self._check_request(url, offset)  # before echoing anything back
            info = self._request_info(url, search_ignored)
            return await self._serve(url, info, offset, refresh)
        except GophergemError as error:
            return FetchFailure(request_info=info, error=error)
        except CancelledError:
            raise  # cancelled by the caller (as at shutdown): not an internal failure
        except Exception:
            return internal_failure(info)

    def _apply_search(self, url: GopherURL, search: str | None) -> tuple[GopherURL, bool]:
        if search is not None:
            if not isinstance(search, str):
                raise InvalidRequest(message="search must be a string.")
            if any(c in search for c in "\r\n\t\x00"):
                raise InvalidRequest(message="search may not contain tabs, line breaks or NUL.")
            if url.item_type == "7":
                return url.with_search(search.encode("utf-8")), False
            return url.with_search(None), True
        if url.search is not None and url.item_type != "7":
            return url.with_search(None), True
        return url, False

    def _request_info(self, url: GopherURL, search_ignored: bool) -> RequestInfo:
        return RequestInfo(
            url=url.to_text(),
            host=url.host,
            port=url.port,
            item_type=url.item_type,
            selector=wire.selector_text(url.selector),
            search_ignored=True if search_ignored else None,
        )

    def _check_request(self, url: GopherURL, offset: int) -> None:
        config = self.gopher_config
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidRequest(message="offset must be a whole number, 0 or more.")
        if len(wire.selector_text(url.selector)) > config.max_selector_length:
            raise InvalidRequest(
                message=f"The selector is longer than {config.max_selector_length} characters."
            )
        if (
            url.search is not None
            and len(url.search.decode("utf-8", "replace")) > config.max_search_length
        ):
            raise InvalidRequest(
                message=f"The search terms are longer than {config.max_search_length} characters."
            )
        if wire.category(url.item_type) is wire.Category.INTERACTIVE:
            raise NotFetchable(
                message=f"Type {url.item_type} items are interactive sessions (telnet, tn3270 "
                "or CSO), not documents; there is nothing to fetch.",
                next_step="Tell the user the host and port if they want to connect themselves.",
            )
        check_allowlists(config, url.host, url.port)

    async def _serve(
        self, url: GopherURL, info: RequestInfo, offset: int, refresh: bool
    ) -> FetchResult:
        # One deadline for everything: the robots probe, the wait for a turn,
        # DNS, connect, send and read.  A read it cuts short keeps what arrived.
        deadline = Deadline()
        download, from_cache = await within_deadline(
            self._obtain(url, refresh, deadline),
            self.gopher_config.timeout_seconds,
            self.clock,
            deadline,
        )
        info = attrs.evolve(info, timestamp=iso_utc(download.fetched_at))
        return self._render(download, info, offset, from_cache)

    async def _obtain(
        self, url: GopherURL, refresh: bool, deadline: Deadline | None = None
    ) -> tuple[_Download, bool]:
        if self._robots is not None:
            paths = gopher_robot_paths(url.item_type, wire.selector_text(url.selector))
            await self._robots.check(url.host, url.port, paths)
        key = url.to_text()
        cache = self.gopher_cache if self.gopher_config.cache_enabled else None
        if cache is not None:
            if refresh:
                cache.discard(key)
            elif (hit := cache.get(key)) is not None:
                assert isinstance(hit[0], _Download)
                return hit[0], True
        kind = wire.category(url.item_type)
        started = self.clock.seconds()
        search = url.search if url.item_type == "7" else None
        request = wire.encode_request(url.selector, search)
        menu = kind is wire.Category.MENU
        raw = await self._cap.run(
            lambda: Deferred.fromCoroutine(
                self._exchange(
                    url.host,
                    url.port,
                    request,
                    self.gopher_config.max_response_size,
                    menu=menu,
                    paced=True,
                    deadline=deadline,
                )
            )
        )
        if not raw.data and kind is wire.Category.MENU:
            # A menu has at least its "." line; nothing at all is a failure,
            # never an empty menu.  (An empty text file is a text.)
            raise ConnectionFailed(
                message="The server closed the connection without sending a menu.",
                temporary=True,
            )
        download = await parse_off_reactor(
            self.offload, len(raw.data), lambda: self._parse(url, kind, raw, started)
        )
        if cache is not None and download.incomplete_reason is None:
            # A response cut by a broken connection or the deadline is
            # served, marked, and never replayed as if it were whole.
            cache.put(key, download)
        return download, False

    async def _exchange(
        self,
        host: str,
        port: int,
        request: bytes,
        limit: int,
        *,
        menu: bool,
        paced: bool,
        deadline: Deadline | None = None,
    ) -> RawResponse:
        if paced:
            await self._pacer.turn(host)
        # Only the fetch itself keeps a read the deadline cut short; a
        # robots.txt probe never does (half a policy is no policy).
        keep = None if deadline is None else (lambda: deadline.passed)
        factory = GopherClientFactory(request, limit, menu=menu, keep_partial=keep)
        await self.connector.connect(host, port, factory)
        return await factory.protocol_instance.finished

    def _fetch_robots(self, host: str, port: int) -> Deferred[bytes | None]:
        """Fetch robots.txt the Veronica-2 way: type 0, selector C{robots.txt}."""
        limit = min(self.gopher_config.max_response_size, MAX_ROBOTS_BYTES)

        async def probe() -> bytes | None:
            raw = await self._cap.run(
                lambda: Deferred.fromCoroutine(
                    self._exchange(host, port, b"robots.txt\r\n", limit, menu=False, paced=False)
                )
            )
            return raw.data

        return Deferred.fromCoroutine(probe())

    def _parse(
        self, url: GopherURL, kind: wire.Category, raw: RawResponse, started: float
    ) -> _Download:
        size = len(raw.data)
        reason = raw.incomplete_reason
        if kind is wire.Category.MENU:
            menu = wire.parse_menu(raw.data, url.host, url.port)
            return _Download(
                kind, size, raw.overflowed, started, menu=menu, incomplete_reason=reason
            )
        if kind is wire.Category.BINARY:
            mime = wire.sniff_mime_type(raw.data, url.item_type, url.selector)
            return _Download(
                kind, size, raw.overflowed, started, mime_type=mime, incomplete_reason=reason
            )
        text = wire.parse_text(raw.data, truncated=raw.overflowed)
        return _Download(
            kind,
            size,
            raw.overflowed,
            started,
            text=text,
            # A text that ends with its lone "." line arrived whole, whatever
            # happened to the connection after it.
            incomplete_reason=None if text.terminated else reason,
        )

    # --- windows ----------------------------------------------------------

    def _render(
        self, download: _Download, info: RequestInfo, offset: int, from_cache: bool
    ) -> FetchResult:
        now = self.clock.seconds()
        cache = CacheInfo(
            cached=from_cache,
            cached_at=iso_utc(download.fetched_at),
            cache_age_seconds=max(0, int(now - download.fetched_at)),
        )
        capped = download.overflowed
        if download.menu is not None:
            items = download.menu.items
            _check_offset(items, offset, "items")
            # At most max_menu_items, and no more than max_rendered_chars
            # worth of payload (see gophergem.fetcher.budget).
            end = cut_items(
                items,
                offset,
                self.gopher_config.max_menu_items,
                self.gopher_config.max_rendered_chars,
            )
            window, part = _window(items, offset, end, capped)
            return MenuResult(
                request_info=info,
                items=part,
                window=window,
                cache=cache,
                incomplete_reason=download.incomplete_reason,
            )
        if download.text is not None:
            body = download.text.text
            _check_offset(body, offset, "characters")
            end = cut_text(body, offset, self.gopher_config.max_rendered_chars)
            window, text = _window(body, offset, end, capped)
            return TextResult(
                request_info=info,
                text=text,
                size=download.size,
                charset=download.text.charset,
                window=window,
                cache=cache,
                incomplete_reason=download.incomplete_reason,
                decoding=download.text.decoding,
            )
        if offset:
            raise InvalidRequest(message="A binary item has no windows; offset must be 0.")
        return BinaryResult(
            request_info=info,
            size=download.size,
            mime_type=download.mime_type,
            note="Binary content is described, not returned.",
            size_capped=capped,
            cache=cache,
            incomplete_reason=download.incomplete_reason,
        )


def _check_offset(whole: _Windowed, offset: int, unit: str) -> None:
    total = len(whole)
    if offset > total or (offset == total and total > 0):
        raise InvalidRequest(
            message=f"offset {offset} is past the end; the resource has {total} {unit}.",
        )


def _window(whole: _Windowed, offset: int, end: int, capped: bool) -> tuple[Window, _Windowed]:
    """The window C{offset:end} of C{whole}, and what it holds."""
    total = len(whole)
    next_offset = end if end < total else None
    window = Window(offset=offset, next_offset=next_offset, total=total, size_capped=capped)
    return window, whole[offset:end]
