# -*- test-case-name: tests.test_fetcher_gopher -*-
"""
The Gopher pipeline: URL, policy, cache, client, result.

L{GopherPipeline.fetch} checks the request, takes the shared steps
(L{gophergem.fetcher._pipeline.Steps}: robots.txt, cache, cap, pacing, one
deadline), exchanges one selector through L{gophergem.client.gopher}, parses
the answer (off the reactor when it is large) and cuts one window of it.
A cached download keeps the windows already cut from it
(L{gophergem.fetcher._pipeline.WindowMemo}): a hit only fills in the
request and the age fields.  Its Deferred never fails: every problem becomes a
L{gophergem.results.FetchFailure} carrying a coded error.
"""

from __future__ import annotations

import sys

import attrs
from twisted.internet.defer import CancelledError, Deferred
from twisted.internet.interfaces import IReactorTime

from gophergem._plural import counted
from gophergem._time import format_utc
from gophergem.client.connect import Connector
from gophergem.client.gopher import GopherClientProtocol, RawResponse
from gophergem.config import GopherConfig
from gophergem.errors import ConnectionFailed, GophergemError, InvalidRequest, NotFetchable
from gophergem.fetcher._budget import cut_items, cut_text
from gophergem.fetcher._pipeline import (
    SMALL_WEIGHT,
    WINDOW_WEIGHT,
    Deadline,
    Offload,
    Steps,
    WindowMemo,
    check_end,
    check_offset,
    internal_failure,
    keep_partial,
    parse_off_reactor,
    run_inline,
    window_for,
)
from gophergem.interfaces import IPolicyBackend, IResponseCache
from gophergem.policy.local import LocalPolicy
from gophergem.policy.robots import RobotsGate
from gophergem.results import (
    BinaryResult,
    CacheInfo,
    FetchFailure,
    FetchResult,
    MenuResult,
    RequestInfo,
    TextResult,
)
from gophergem.url import GopherURL, safe_echo
from gophergem.wire import gopher as wire
from gophergem.wire.robots import gopher_robot_paths
from gophergem.wire.text import is_plain_ascii

__all__ = ["GopherDownload", "GopherPipeline"]

# A parsed menu holds its bytes up to four times over (title, selector,
# host, and the next_url, percent-encoded) plus, per item, its object and
# the headers of its strings; tests/test_windows.py measures the estimate
# against tracemalloc.
_MENU_ITEM_WEIGHT = 300

_Window = MenuResult | TextResult | BinaryResult


@attrs.frozen(kw_only=True)
class GopherDownload:
    """A parsed Gopher response as the cache keeps it: the whole resource, not a window."""

    category: wire.Category
    size: int
    overflowed: bool
    fetched_at: float
    menu: wire.Menu | None = None
    text: wire.TextBody | None = None
    mime_type: str = ""
    incomplete_reason: str | None = None
    windows: WindowMemo[_Window] = attrs.field(factory=WindowMemo, eq=False, repr=False)

    @property
    def held(self) -> int:
        """
        About what the parsed resource holds in memory.  A parsed menu
        costs far more than its bytes on the wire (each item is an object
        with its own strings), so it is counted per item as well.
        """
        if self.menu is not None:
            return 4 * self.size + _MENU_ITEM_WEIGHT * len(self.menu.items)
        if self.text is not None:
            return sys.getsizeof(self.text.text)
        return SMALL_WEIGHT

    @property
    def weight(self) -> int:
        """The cache's measure: what the resource holds, and its windows' allowance."""
        return self.held + self.windows.allowance

    def with_memo(self, limit: int, most: int) -> GopherDownload:
        """
        This download with a window memo sized for windows of C{limit}
        characters (and at most C{most} menu items): every window's result
        together, or as much as the download already holds.
        """
        if self.menu is not None:
            count = len(self.menu.items)
            windows = 2 + count // most + (2 * self.size + 64 * count) // limit
            estimate = 8 * count + WINDOW_WEIGHT * windows
        elif self.text is not None:
            body = self.text.text
            estimate = sys.getsizeof(body) + WINDOW_WEIGHT * (2 + 2 * len(body) // limit)
        else:
            estimate = WINDOW_WEIGHT
        return attrs.evolve(self, windows=WindowMemo.within(estimate, self.held, limit))


@attrs.define
class GopherPipeline:
    """
    Fetch Gopher resources under a policy.

    @ivar clock: The time source for deadlines, timestamps and the cache.
    @ivar connector: The connect pinch point.
    @ivar config: Limits and switches for Gopher.
    @ivar cache: Where parsed responses are kept, if anywhere.
    @ivar policy: Where the pacer, the per-host connection limit and the
        concurrency cap come from; the pipelines given one policy pace and
        count each host together (by default a fresh one: this pipeline's own).
    @ivar offload: How a large response is parsed: on the reactor's thread
        pool in production (L{gophergem.fetcher._pipeline.offloader}),
        inline by default and on memory reactors.
    """

    clock: IReactorTime
    connector: Connector
    config: GopherConfig = attrs.field(factory=GopherConfig)
    cache: IResponseCache | None = None
    offload: Offload = attrs.field(default=run_inline, kw_only=True)
    policy: IPolicyBackend = attrs.field(factory=LocalPolicy, kw_only=True)
    _steps: Steps[GopherConfig] = attrs.field(init=False)

    @_steps.default
    def _start(self) -> Steps[GopherConfig]:
        return Steps.start(
            self.clock,
            self.config,
            self.cache,
            RobotsGate.for_gopher,
            self._fetch_robots,
            scheme="gopher",
            policy=self.policy,
        )

    def fetch(
        self, url: str, *, search: str | None = None, offset: int = 0, refresh: bool = False
    ) -> Deferred[FetchResult]:
        """Fetch one Gopher URL; the Deferred always fires with a result."""
        return Deferred.fromCoroutine(self._fetch(url, search, offset, refresh))

    async def _fetch(
        self, text: str, search: str | None, offset: int, refresh: bool
    ) -> FetchResult:
        info = RequestInfo(url=safe_echo(text) if isinstance(text, str) else "")
        try:
            url = GopherURL.from_text(text)
            url, search_ignored = self._apply_search(url, search)
            self._check(url, offset)  # before echoing anything back
            info = self._request_info(url, search_ignored)
            download, from_cache = await self._steps.within_deadline(
                lambda deadline: self._obtain(url, refresh, deadline)
            )
            info = attrs.evolve(info, timestamp=format_utc(download.fetched_at))
            return self._render(download, info, offset, from_cache)
        except GophergemError as error:
            return FetchFailure(request_info=info, error=error)
        except CancelledError:
            raise  # cancelled by the caller (as at shutdown): not an internal failure
        except Exception:
            return internal_failure(info)

    # --- the request --------------------------------------------------------------

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

    def _check(self, url: GopherURL, offset: int) -> None:
        config = self.config
        check_offset(offset)
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
        self._steps.check_allowlists(url.host, url.port)

    # --- the exchange -------------------------------------------------------------

    async def _obtain(
        self, url: GopherURL, refresh: bool, deadline: Deadline
    ) -> tuple[GopherDownload, bool]:
        steps = self._steps
        paths = gopher_robot_paths(url.item_type, wire.selector_text(url.selector))
        await steps.check_robots(url.host, url.port, paths)
        key = url.to_text()
        cache = steps.cache_for()
        hit = await steps.lookup(cache, key, refresh)
        if hit is not None:
            assert isinstance(hit, GopherDownload)
            return hit, True
        kind = wire.category(url.item_type)
        started = self.clock.seconds()
        search = url.search if url.item_type == "7" else None
        request = wire.encode_request(url.selector, search)
        menu = kind is wire.Category.MENU
        limit = self.config.max_response_size
        raw = await steps.exchange(
            url.host,
            lambda: self._exchange(url, request, limit, menu=menu, deadline=deadline),
            paced=True,
        )
        if not raw.data and kind is wire.Category.MENU:
            # A menu has at least its "." line; nothing at all is a failure,
            # never an empty menu.  (An empty text file is a text.)
            raise ConnectionFailed(
                message="The server closed the connection without sending a menu.",
                temporary=True,
            )
        download = await parse_off_reactor(
            self.offload,
            len(raw.data),
            lambda: _parse(url, kind, raw, started),
            plain=kind is wire.Category.TEXT and is_plain_ascii(raw.data),
        )
        download = download.with_memo(self.config.max_rendered_chars, self.config.max_menu_items)
        await steps.store(cache, key, download)
        return download, False

    async def _exchange(
        self,
        url: GopherURL,
        request: bytes,
        limit: int,
        *,
        menu: bool,
        deadline: Deadline | None = None,
    ) -> RawResponse:
        protocol = GopherClientProtocol(request, limit, menu, keep_partial=keep_partial(deadline))
        await self.connector.connect(url, protocol)
        return await protocol.finished

    def _fetch_robots(self, host: str, port: int) -> Deferred[bytes | None]:
        """Fetch robots.txt the Veronica-2 way: type 0, selector C{robots.txt}."""
        url = GopherURL(host, port, "0", b"robots.txt")
        limit = self._steps.probe_limit()

        async def probe() -> bytes | None:
            raw = await self._steps.exchange(
                host,
                lambda: self._exchange(url, b"robots.txt\r\n", limit, menu=False),
                paced=False,
            )
            return bytes(raw.data)

        return Deferred.fromCoroutine(probe())

    # --- windows ------------------------------------------------------------------

    def _render(
        self, download: GopherDownload, info: RequestInfo, offset: int, from_cache: bool
    ) -> FetchResult:
        """
        The window at C{offset}: cut once per download, then only its
        request and age fields are filled in per call.
        """
        cache = self._steps.cache_info(download.fetched_at, from_cache)
        kept = download.windows.get(offset)
        if kept is None:
            kept, weight = self._cut(download, info, offset, cache)
            download.windows.keep(offset, kept, weight)
            return kept
        return attrs.evolve(kept, request_info=info, cache=cache)

    def _cut(
        self, download: GopherDownload, info: RequestInfo, offset: int, cache: CacheInfo
    ) -> tuple[_Window, int]:
        """The window at C{offset}, and about what it holds beyond the download."""
        capped = download.overflowed
        limit = self.config.max_rendered_chars
        if download.menu is not None:
            items = download.menu.items
            check_end(offset, len(items), f"the resource has {counted(len(items), 'item')}")
            # At most max_menu_items, and no more than max_rendered_chars
            # worth of payload (see gophergem.fetcher._budget).
            end = cut_items(items, offset, self.config.max_menu_items, limit)
            menu = MenuResult(
                request_info=info,
                items=items[offset:end],
                window=window_for(offset, end, len(items), capped),
                cache=cache,
                incomplete_reason=download.incomplete_reason,
            )
            return menu, 8 * (end - offset)
        if download.text is not None:
            body = download.text.text
            check_end(offset, len(body), f"the resource has {counted(len(body), 'character')}")
            end = cut_text(body, offset, limit)
            text = TextResult(
                request_info=info,
                text=body[offset:end],
                size=download.size,
                charset=download.text.charset,
                window=window_for(offset, end, len(body), capped),
                cache=cache,
                incomplete_reason=download.incomplete_reason,
                decoding=download.text.decoding,
            )
            return text, sys.getsizeof(text.text)
        if offset:
            raise InvalidRequest(message="A binary item has no windows; offset must be 0.")
        binary = BinaryResult(
            request_info=info,
            size=download.size,
            mime_type=download.mime_type,
            note="Binary content is described, not returned.",
            size_capped=capped,
            cache=cache,
            incomplete_reason=download.incomplete_reason,
        )
        return binary, 0


def _parse(url: GopherURL, kind: wire.Category, raw: RawResponse, started: float) -> GopherDownload:
    """
    Parse C{raw} as C{kind} (pure: it may run in a thread).  The raw bytes
    are consumed: C{raw.data} is empty afterwards, so only the parsed
    download holds the body (a binary item holds none of it).
    """
    download = GopherDownload(
        category=kind,
        size=len(raw.data),
        overflowed=raw.overflowed,
        fetched_at=started,
        incomplete_reason=raw.incomplete_reason,
    )
    if kind is wire.Category.MENU:
        data = bytes(raw.data)
        raw.data.clear()
        return attrs.evolve(download, menu=wire.parse_menu(data, url.host, url.port))
    if kind is wire.Category.BINARY:
        mime = wire.sniff_mime_type(bytes(raw.data[:16]), url.item_type, url.selector)
        raw.data.clear()
        return attrs.evolve(download, mime_type=mime)
    text = wire.parse_text(raw.data, truncated=raw.overflowed)
    # A text that ends with its lone "." line arrived whole, whatever
    # happened to the connection after it.
    reason = None if text.terminated else raw.incomplete_reason
    return attrs.evolve(download, text=text, incomplete_reason=reason)
