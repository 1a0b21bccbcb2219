# -*- test-case-name: tests.test_fetcher_smolweb -*-
"""
What the Finger, Nex and Spartan pipelines keep and cut, written once.

A L{SmolDownload} is a response as the cache keeps it: a text decoded and
sanitised (gemtext with the index of its preformatting toggles), or only
the size and type of a binary.  L{cut} makes the window at an offset, in
the result kind the caller asks for: a Gopher-style text by characters, a
binary described and never returned, and gemtext or a typed text exactly
as a Gemini page is cut (L{gophergem.fetcher._textwindow}, which both use).
L{SmolFetcher.read_until_close} is how Finger and Nex obtain a download:
the cache, else one paced exchange with a server that answers and closes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Literal

import attrs
from twisted.internet.interfaces import IReactorTime

from gophergem._plural import counted
from gophergem.client.connect import Connector
from gophergem.client.gopher import GopherClientProtocol, RawResponse
from gophergem.config import SmolwebConfig
from gophergem.errors import ConnectionFailed, InvalidRequest
from gophergem.fetcher._budget import cut_text
from gophergem.fetcher._pipeline import (
    WINDOW_WEIGHT,
    Deadline,
    Offload,
    Steps,
    WindowMemo,
    check_end,
    held_by,
    keep_partial,
    parse_off_reactor,
    run_inline,
    window_for,
)
from gophergem.fetcher._textwindow import cut_text_body, toggles_of
from gophergem.interfaces import IResponseCache
from gophergem.results import (
    BinaryResult,
    CacheInfo,
    GeminiBinaryResult,
    GeminiRequestInfo,
    GemtextResult,
    PartialLineResult,
    RequestInfo,
    SuccessResult,
    TextResult,
)
from gophergem.wire.finger import FingerURL
from gophergem.wire.gemini import MimeType
from gophergem.wire.gemtext import LinkBase
from gophergem.wire.nex import NexURL
from gophergem.wire.text import decode_body, is_plain_ascii, sanitise

__all__ = [
    "Form",
    "SmolDownload",
    "SmolFetcher",
    "SmolWindow",
    "cached",
    "cut",
    "decode",
    "keep",
    "render",
]

#: How a download is shown: a gemtext page, a text (Gopher's C{text}
#: kind), a text with its MIME type (Gemini's C{success} kind) or a binary.
Form = Literal["gemtext", "text", "success", "binary"]

SmolWindow = (
    GemtextResult
    | PartialLineResult
    | SuccessResult
    | TextResult
    | BinaryResult
    | GeminiBinaryResult
)


@attrs.frozen
class SmolDownload:
    """
    A Finger, Nex or Spartan answer as the cache keeps it (only when it
    arrived whole: C{incomplete_reason} is C{None}).

    @ivar form: How it is shown (L{Form}).
    @ivar mime: Its MIME type (from Spartan's header, or a Nex path's extension).
    @ivar text: The decoded, sanitised text; C{None} for a binary.
    @ivar toggles: For gemtext, where each preformatting toggle line starts.
    """

    form: Form
    mime: MimeType
    text: str | None
    charset: str
    size: int
    overflowed: bool
    incomplete_reason: str | None
    fetched_at: float
    decoding: str = "clean"
    toggles: Sequence[int] = attrs.field(default=(), eq=False, repr=False)
    windows: WindowMemo[SmolWindow] = attrs.field(factory=WindowMemo, eq=False, repr=False)

    @property
    def held(self) -> int:
        """About what the decoded body and its index hold in memory."""
        return held_by(self.text, self.toggles)

    @property
    def weight(self) -> int:
        """The cache's measure: what the body holds, and its windows' allowance."""
        return self.held + self.windows.allowance

    def with_memo(self, limit: int) -> SmolDownload:
        """This download with a window memo sized for windows of C{limit} characters."""
        text = self.text
        if text is None:
            estimate = WINDOW_WEIGHT
        else:
            estimate = WINDOW_WEIGHT * (2 + 2 * len(text) // limit) + 3 * sys.getsizeof(text)
        return attrs.evolve(self, windows=WindowMemo.within(estimate, self.held, limit))


@attrs.define
class SmolFetcher:
    """
    What the Finger, Nex and Spartan pipelines are built from.

    @ivar clock: The time source for deadlines, timestamps and the cache.
    @ivar connector: The connect pinch point.
    @ivar steps: The steps Finger, Nex and Spartan share.
    @ivar offload: How a large answer is decoded.
    """

    clock: IReactorTime
    connector: Connector
    steps: Steps[SmolwebConfig]
    offload: Offload = attrs.field(default=run_inline, kw_only=True)

    async def read_until_close(
        self,
        url: FingerURL | NexURL,
        protocol: Callable[[int, Callable[[], bool] | None], GopherClientProtocol],
        refresh: bool,
        deadline: Deadline,
        *,
        form: Form,
        mime: MimeType,
        nothing: str | None = None,
    ) -> tuple[SmolDownload, bool]:
        """
        The answer of a server that sends it and closes (Finger, Nex): the
        cached download of C{url}, else one paced exchange with its host,
        decoded as C{form} and kept; with whether it came from the cache.

        @param protocol: Makes the client protocol, given the byte limit
            and what a read cut short asks (L{keep_partial}).
        @param nothing: When given, an answer of no bytes at all is a
            temporary C{CONNECTION_FAILED} with this message.
        """
        steps = self.steps
        key = url.to_text()
        cache = steps.cache_for()
        hit = await cached(steps, cache, key, refresh)
        if hit is not None:
            return hit, True
        started = self.clock.seconds()

        async def exchange() -> RawResponse:
            client = protocol(steps.config.max_response_size, keep_partial(deadline))
            await self.connector.connect(url, client)
            raw: RawResponse = await client.finished
            return raw

        raw = await steps.exchange(url.host, exchange, paced=True)
        if nothing is not None and not raw.data:
            raise ConnectionFailed(message=nothing, temporary=True)
        download = await keep(
            steps,
            self.offload,
            cache,
            key,
            raw.data,
            form=form,
            mime=mime,
            overflowed=raw.overflowed,
            incomplete_reason=raw.incomplete_reason,
            fetched_at=started,
            plain=form != "binary" and is_plain_ascii(raw.data),
        )
        return download, False


def decode(
    data: bytearray,
    *,
    form: Form,
    mime: MimeType,
    overflowed: bool,
    incomplete_reason: str | None,
    fetched_at: float,
) -> SmolDownload:
    """
    Decode C{data} as C{form} (pure: it may run in a thread) and clear it:
    only the download holds the body afterwards (a binary holds none of it).
    """
    size = len(data)
    if form == "binary":
        data.clear()
        return SmolDownload(
            "binary", mime, None, "", size, overflowed, incomplete_reason, fetched_at
        )
    decoded = decode_body(data, mime.charset, truncated=overflowed)
    data.clear()
    text = decoded.text
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = sanitise(text)
    toggles: Sequence[int] = ()
    if form == "gemtext":
        if overflowed and "\n" in text:
            # Never parse half a line: half a link is a URL the page never had.
            text = text[: text.rindex("\n") + 1]
        toggles = toggles_of(text)
    return SmolDownload(
        form,
        mime,
        text,
        decoded.charset,
        size,
        overflowed,
        incomplete_reason,
        fetched_at,
        decoded.decoding,
        toggles,
    )


async def cached(
    steps: Steps[SmolwebConfig], cache: IResponseCache | None, key: str, refresh: bool
) -> SmolDownload | None:
    """
    The download C{cache} keeps for C{key}, or C{None} (C{refresh} forgets
    it instead).
    """
    hit = await steps.lookup(cache, key, refresh)
    if hit is not None:
        assert isinstance(hit, SmolDownload)
    return hit


async def keep(
    steps: Steps[SmolwebConfig],
    offload: Offload,
    cache: IResponseCache | None,
    key: str,
    data: bytearray,
    *,
    form: Form,
    mime: MimeType,
    overflowed: bool,
    incomplete_reason: str | None,
    fetched_at: float,
    plain: bool,
) -> SmolDownload:
    """
    Decode C{data} (L{decode}, through C{offload} when it is large; C{plain}
    as L{parse_off_reactor} takes it), give it its window memo and keep it
    in C{cache} under C{key} when it arrived whole.
    """
    download = await parse_off_reactor(
        offload,
        len(data),
        lambda: decode(
            data,
            form=form,
            mime=mime,
            overflowed=overflowed,
            incomplete_reason=incomplete_reason,
            fetched_at=fetched_at,
        ),
        plain=plain,
    )
    download = download.with_memo(steps.config.max_rendered_chars)
    await steps.store(cache, key, download)
    return download


def cut(
    download: SmolDownload,
    info: RequestInfo | GeminiRequestInfo,
    base: LinkBase,
    offset: int,
    cache: CacheInfo,
    limit: int,
    *,
    input_links: bool = False,
) -> tuple[SmolWindow, int]:
    """
    The window of C{download} at C{offset}, and about what it holds beyond
    the download.  Gemtext, success and its binary take a
    L{GeminiRequestInfo}; text and its binary a L{RequestInfo}.

    @param base: What a gemtext page's links are resolved against.
    @param input_links: Read C{=:} lines as links that take input (Spartan).
    @raise InvalidRequest: On an offset past the end, or not 0 for a binary.
    """
    capped = download.overflowed
    incomplete = download.incomplete_reason
    if download.text is None:
        if offset:
            raise InvalidRequest(message="A binary body has no windows; offset must be 0.")
        note = "Binary content is described, not returned."
        if isinstance(info, GeminiRequestInfo):
            return GeminiBinaryResult(
                request_info=info,
                size=download.size,
                mime_type=download.mime.essence,
                note=note,
                size_capped=capped,
                cache=cache,
                incomplete_reason=incomplete,
            ), 0
        return BinaryResult(
            request_info=info,
            size=download.size,
            mime_type=download.mime.essence,
            note=note,
            size_capped=capped,
            cache=cache,
            incomplete_reason=incomplete,
        ), 0
    text = download.text
    if isinstance(info, RequestInfo):
        total = len(text)
        check_end(offset, total, f"the body has {counted(total, 'character')}")
        end = cut_text(text, offset, limit)
        plain = TextResult(
            request_info=info,
            text=text[offset:end],
            size=download.size,
            charset=download.charset,
            window=window_for(offset, end, total, capped),
            cache=cache,
            incomplete_reason=incomplete,
            decoding=download.decoding,
        )
        return plain, sys.getsizeof(plain.text)
    return cut_text_body(
        download,
        text,
        download.toggles,
        offset,
        limit,
        info=info,
        cache=cache,
        gemtext=download.form == "gemtext",
        base=base,
        input_links=input_links,
    )


def render(
    steps: Steps[SmolwebConfig],
    download: SmolDownload,
    info: RequestInfo | GeminiRequestInfo,
    base: LinkBase,
    offset: int,
    from_cache: bool,
    *,
    input_links: bool = False,
) -> SmolWindow:
    """
    The window at C{offset}: cut once per download (L{cut}), then only its
    request and age fields are filled in per call.
    """
    cache = steps.cache_info(download.fetched_at, from_cache)
    kept = download.windows.get(offset)
    if kept is None:
        limit = steps.config.max_rendered_chars
        kept, weight = cut(download, info, base, offset, cache, limit, input_links=input_links)
        download.windows.keep(offset, kept, weight)
        return kept
    return attrs.evolve(kept, request_info=info, cache=cache)  # type: ignore[arg-type]
