# -*- test-case-name: tests.test_fetcher -*-
"""
The values a fetch produces: frozen, protocol-level, and free of MCP.

L{gophergem.fetcher.Fetcher} returns one of these for every call, failures
included (L{FetchFailure}); L{gophergem.mcp.results} turns them into MCP
payloads and the CLI prints them.
"""

from __future__ import annotations

from datetime import UTC, datetime

import attrs

from gophergem.errors import GophergemError
from gophergem.wire.gopher import MenuItem

__all__ = [
    "BinaryResult",
    "CacheInfo",
    "FetchFailure",
    "FetchResult",
    "MenuResult",
    "RequestInfo",
    "TextResult",
    "Window",
    "iso_utc",
]


def iso_utc(seconds: float) -> str:
    """Format a POSIX time as ISO-8601 UTC with a C{Z}, to the second."""
    stamp = datetime.fromtimestamp(seconds, UTC).replace(microsecond=0)
    return stamp.isoformat().replace("+00:00", "Z")


@attrs.frozen(kw_only=True)
class RequestInfo:
    """
    What was asked, echoed back.  Fields that do not apply are C{None}.

    @ivar url: The normalised URL (caller text made safe when it did not parse).
    @ivar timestamp: When the request was sent (absent when refused before).
    @ivar item_type: The Gopher item type.
    @ivar selector: The Gopher selector, JSON-safe.
    @ivar search_ignored: True when search terms were dropped from a
        non-search item.
    """

    url: str
    timestamp: str | None = None
    host: str | None = None
    port: int | None = None
    item_type: str | None = None
    selector: str | None = None
    search_ignored: bool | None = None


@attrs.frozen(kw_only=True)
class CacheInfo:
    """
    Where a cacheable result came from.

    @ivar cached: Whether this result was served from the cache.
    @ivar cached_at: ISO-8601 UTC time of the real fetch.
    @ivar cache_age_seconds: How old the download is.
    """

    cached: bool
    cached_at: str
    cache_age_seconds: int


@attrs.frozen(kw_only=True)
class Window:
    """
    Which part of a resource a result holds.

    @ivar offset: Where this window starts (items for a menu, characters for
        a body).
    @ivar next_offset: Where the rest begins, or C{None} when nothing is left.
    @ivar total: Items or characters in the whole resource, as far as it was
        downloaded.
    @ivar size_capped: The server sent more than the byte cap; the resource
        was cut there.
    """

    offset: int
    next_offset: int | None
    total: int
    size_capped: bool = False

    @property
    def truncated(self) -> bool:
        """Whether anything of the resource is not in this window."""
        return self.next_offset is not None or self.size_capped or self.offset > 0


@attrs.frozen(kw_only=True)
class MenuResult:
    """A Gopher menu (types 1 and 7), one window of its items."""

    request_info: RequestInfo
    items: tuple[MenuItem, ...]
    window: Window
    cache: CacheInfo


@attrs.frozen(kw_only=True)
class TextResult:
    """A text body, one window of it.  C{size} is the byte count of the whole response."""

    request_info: RequestInfo
    text: str
    size: int
    charset: str
    window: Window
    cache: CacheInfo


@attrs.frozen(kw_only=True)
class BinaryResult:
    """A binary body: described, never returned."""

    request_info: RequestInfo
    size: int
    mime_type: str
    note: str
    size_capped: bool
    cache: CacheInfo


@attrs.frozen(kw_only=True)
class FetchFailure:
    """A fetch that failed; C{error} says how."""

    request_info: RequestInfo
    error: GophergemError


FetchResult = MenuResult | TextResult | BinaryResult | FetchFailure
