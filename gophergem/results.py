# -*- test-case-name: tests.test_fetcher -*-
"""
The values a fetch produces: frozen, protocol-level, and free of MCP.

L{gophergem.fetcher.Fetcher} returns one of these for every call, failures
included (L{FetchFailure}); L{gophergem.render.payloads} turns them into
the payloads the MCP tools return and the CLI prints.
"""

from __future__ import annotations

import attrs

from gophergem.errors import GophergemError
from gophergem.wire.gemini import MimeType
from gophergem.wire.gemtext import FeedEntry, GemtextLine, Link
from gophergem.wire.gopher import MenuItem

__all__ = [
    "INCOMPLETE_REASONS",
    "BinaryResult",
    "CacheInfo",
    "CertificateResult",
    "FetchFailure",
    "FetchResult",
    "GeminiBinaryResult",
    "GeminiRequestInfo",
    "GeminiResult",
    "GemtextResult",
    "InputResult",
    "MenuResult",
    "PartialLineResult",
    "RedirectResult",
    "RequestInfo",
    "SuccessResult",
    "TextResult",
    "Window",
]


#: Why a body result may not hold the whole resource (its C{incomplete_reason}):
#: the Gopher connection broke (C{connection_reset}), a Gemini body ended
#: without TLS close_notify (C{no_close_notify}), or the fetch deadline passed
#: while the server was still sending or holding the connection open
#: (C{deadline}).  Only what arrived is returned; it is never cached.
INCOMPLETE_REASONS = ("connection_reset", "no_close_notify", "deadline")


class _MaybeIncomplete:
    """
    A body result that may have been cut short by the server or the
    deadline: its C{incomplete_reason} is one of L{INCOMPLETE_REASONS}, or
    C{None} when the body arrived whole (or was cut at the size cap by us:
    see C{size_capped}).
    """

    __slots__ = ()
    incomplete_reason: str | None

    @property
    def incomplete(self) -> bool:
        """Whether what arrived may be only part of the answer."""
        return self.incomplete_reason is not None


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
class MenuResult(_MaybeIncomplete):
    """A Gopher menu (types 1 and 7), one window of its items."""

    request_info: RequestInfo
    items: tuple[MenuItem, ...]
    window: Window
    cache: CacheInfo
    incomplete_reason: str | None = None


@attrs.frozen(kw_only=True)
class TextResult(_MaybeIncomplete):
    """A text body, one window of it.  C{size} is the byte count of the whole response."""

    request_info: RequestInfo
    text: str
    size: int
    charset: str
    window: Window
    cache: CacheInfo
    incomplete_reason: str | None = None
    decoding: str = "clean"


@attrs.frozen(kw_only=True)
class BinaryResult(_MaybeIncomplete):
    """A binary body: described, never returned."""

    request_info: RequestInfo
    size: int
    mime_type: str
    note: str
    size_capped: bool
    cache: CacheInfo
    incomplete_reason: str | None = None


@attrs.frozen(kw_only=True)
class FetchFailure:
    """A fetch that failed; C{error} says how."""

    request_info: RequestInfo | GeminiRequestInfo
    error: GophergemError


FetchResult = MenuResult | TextResult | BinaryResult | FetchFailure


# --- Gemini -------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class GeminiRequestInfo:
    """
    What was asked of a Gemini server, echoed back.  The query is never
    shown (it may be a secret answer), only whether there was one.

    @ivar input_redacted: Set when the input answer was treated as a secret
        (see L{gophergem.fetcher.gemini}): how many times the capsule's
        response echoed it and it was replaced by C{[redacted]} (0 when it
        never did).  C{None} when no answer was scrubbed for.
    """

    url: str
    timestamp: str | None = None
    host: str | None = None
    port: int | None = None
    path: str | None = None
    has_query: bool | None = None
    tls_version: str | None = None
    cipher: str | None = None
    cert_fingerprint: str | None = None
    tofu_warning: str | None = None
    client_cert_warning: str | None = None
    input_redacted: int | None = None


@attrs.frozen(kw_only=True)
class GemtextResult(_MaybeIncomplete):
    """A text/gemini page: one window of its parsed lines."""

    request_info: GeminiRequestInfo
    lines: tuple[GemtextLine, ...]
    links: tuple[Link, ...]
    feed_entries: tuple[FeedEntry, ...]
    size: int
    charset: str
    lang: str | None
    window: Window
    cache: CacheInfo
    incomplete_reason: str | None = None
    decoding: str = "clean"


@attrs.frozen(kw_only=True)
class PartialLineResult(_MaybeIncomplete):
    """Part of one gemtext line too long for a window, delivered as plain text."""

    request_info: GeminiRequestInfo
    text: str
    size: int
    charset: str
    window: Window
    cache: CacheInfo
    incomplete_reason: str | None = None
    decoding: str = "clean"


@attrs.frozen(kw_only=True)
class SuccessResult(_MaybeIncomplete):
    """A text/* body other than gemtext: one window of its characters."""

    request_info: GeminiRequestInfo
    content: str
    mime: MimeType
    size: int
    window: Window
    cache: CacheInfo
    incomplete_reason: str | None = None
    decoding: str = "clean"


@attrs.frozen(kw_only=True)
class GeminiBinaryResult(_MaybeIncomplete):
    """A non-text body: described, never returned."""

    request_info: GeminiRequestInfo
    size: int
    mime_type: str
    note: str
    size_capped: bool
    cache: CacheInfo
    incomplete_reason: str | None = None


@attrs.frozen(kw_only=True)
class InputResult:
    """Status 10/11: the capsule asks for input."""

    request_info: GeminiRequestInfo
    prompt: str
    sensitive: bool


@attrs.frozen(kw_only=True)
class RedirectResult:
    """Status 30/31, not followed."""

    request_info: GeminiRequestInfo
    new_url: str
    permanent: bool
    cross_host: bool
    scheme: str


@attrs.frozen(kw_only=True)
class CertificateResult:
    """Status 60/61/62: the capsule wants (another) client certificate."""

    request_info: GeminiRequestInfo
    status: int
    required: bool
    message: str
    next_step: str


GeminiResult = (
    GemtextResult
    | PartialLineResult
    | SuccessResult
    | GeminiBinaryResult
    | InputResult
    | RedirectResult
    | CertificateResult
    | FetchFailure
)
