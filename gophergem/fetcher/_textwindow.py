# -*- test-case-name: tests.test_windows -*-
"""
One window of a decoded text body served with a MIME type, written once
for every pipeline that serves one (Gemini, and Spartan and Nex in
L{gophergem.fetcher._smoltext}).

A gemtext body is cut at whole lines whose parsed form fits the window
(L{gophergem.fetcher._budget.fitting_lines}), and part of one line when not
even the first fits; any other text by characters.  Pure: no I/O, no
clock.
"""

from __future__ import annotations

import re
import sys
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from typing import Protocol

import attrs

from gophergem._plural import counted
from gophergem.fetcher._budget import cut_text, fitting_lines
from gophergem.fetcher._pipeline import check_end, window_for
from gophergem.results import (
    CacheInfo,
    GeminiRequestInfo,
    GemtextResult,
    PartialLineResult,
    SuccessResult,
)
from gophergem.wire.gemini import MimeType
from gophergem.wire.gemtext import (
    GemtextDocument,
    LinkBase,
    feed_entry,
    gemtext_lines,
    window_text,
)

__all__ = ["TextBody", "TextWindow", "cut_text_body", "gemtext_weight", "toggles_of"]

TextWindow = GemtextResult | PartialLineResult | SuccessResult

#: A line that opens or closes a preformatted block.
_TOGGLE = re.compile(r"^```", re.MULTILINE)


class TextBody(Protocol):
    """What a window reads of a kept download besides its text."""

    @property
    def mime(self) -> MimeType: ...
    @property
    def charset(self) -> str | None: ...
    @property
    def size(self) -> int: ...
    @property
    def overflowed(self) -> bool: ...
    @property
    def incomplete_reason(self) -> str | None: ...
    @property
    def decoding(self) -> str: ...


def toggles_of(text: str) -> array[int]:
    """Where each line that toggles preformatting starts, in order."""
    return array("q", (match.start() for match in _TOGGLE.finditer(text)))


def gemtext_weight(chars: int, lines: int, links: int) -> int:
    """
    About what a parsed gemtext window of C{chars} characters, C{lines}
    lines and C{links} links holds in memory (measured with tracemalloc for
    pages of tiny, linked, dated, preformatted and prose lines; it errs high).
    """
    return 3 * chars + 220 * lines + 300 * links


def _preformatted(text: str, offset: int, toggles: Sequence[int] | None) -> bool:
    """
    Whether the line of C{text} starting at C{offset} is inside a
    preformatted block.

    @param toggles: Where C{text}'s toggle lines start (found by bisection,
        so walking a long page stays linear in its size), or C{None} to
        count them in place (a scrubbed body, never cached).
    """
    if toggles is None:
        before = text.count("\n```", 0, offset) + (offset > 0 and text.startswith("```"))
    else:
        before = bisect_left(toggles, offset)
    return before % 2 == 1


def _fitting_document(
    chunk: str, limit: int, base: LinkBase, preformatted: bool, input_links: bool
) -> tuple[int, GemtextDocument] | None:
    """
    The length of the whole lines at the start of C{chunk} whose parsed
    form fits C{limit}, and their document; C{None} when not even the first
    line fits.  Lines are parsed one at a time, up to the first that does
    not fit: each line of a page is parsed about once however it is walked.
    """
    lines = gemtext_lines(chunk, base, preformatted=preformatted, input_links=input_links)
    fit = fitting_lines(lines, limit)
    if fit is None:
        return None
    parsed, end = fit
    links = tuple(line.link for line in parsed if line.link is not None)
    entries = (feed_entry(link) for link in links)
    # As parse_gemtext orders them: newest first, page order within a day.
    dated = sorted((e for e in entries if e is not None), key=lambda e: e.date, reverse=True)
    return end, GemtextDocument(tuple(parsed), links, tuple(dated))


def cut_text_body(
    download: TextBody,
    text: str,
    toggles: Sequence[int] | None,
    offset: int,
    limit: int,
    *,
    info: GeminiRequestInfo,
    cache: CacheInfo,
    gemtext: bool,
    base: LinkBase,
    input_links: bool = False,
) -> tuple[TextWindow, int]:
    """
    The window of C{text} (C{download}'s decoded body, or a copy of it)
    at C{offset}, and about what it holds beyond the download.

    @param toggles: Where C{text}'s preformatting toggles start, or C{None}
        to count them in place.
    @param limit: What the window's content may cost (C{max_rendered_chars}).
    @param gemtext: Cut it as a gemtext page; else as a C{success} text.
    @param base: What a gemtext page's links are resolved against.
    @param input_links: Read C{=:} lines as links that take input (Spartan).
    @raise InvalidRequest: On an offset past the end.
    """
    total = len(text)
    check_end(offset, total, f"the body has {counted(total, 'character')}")
    capped = download.overflowed
    charset = download.charset or "utf-8"
    if not gemtext:
        end = cut_text(text, offset, limit)
        success = SuccessResult(
            request_info=info,
            content=text[offset:end],
            mime=attrs.evolve(download.mime, charset=charset),
            size=download.size,
            window=window_for(offset, end, total, capped),
            cache=cache,
            incomplete_reason=download.incomplete_reason,
            decoding=download.decoding,
        )
        return success, sys.getsizeof(success.content)
    chunk = window_text(text, offset, limit)
    if (offset == 0 or text[offset - 1] == "\n") and not chunk.partial_line:
        preformatted = _preformatted(text, offset, toggles)
        fit = _fitting_document(chunk.text, limit, base, preformatted, input_links)
        if fit is not None:
            length, document = fit
            end = offset + length
            page = GemtextResult(
                request_info=info,
                lines=document.lines,
                links=document.links,
                feed_entries=document.feed_entries,
                size=download.size,
                charset=charset,
                lang=download.mime.lang,
                window=window_for(offset, end, total, capped),
                cache=cache,
                incomplete_reason=download.incomplete_reason,
                decoding=download.decoding,
            )
            return page, gemtext_weight(length, len(document.lines), len(document.links))
    # Part of one line, as plain text: a line longer than the window, the
    # rest of one an earlier window cut, or one line whose parsed form alone
    # costs more than the window (a long link is counted twice).
    newline = text.find("\n", offset, offset + len(chunk.text))
    line_end = offset + len(chunk.text) if newline < 0 else newline + 1
    end = min(cut_text(text, offset, limit), line_end)
    partial = PartialLineResult(
        request_info=info,
        text=text[offset:end],
        size=download.size,
        charset=charset,
        window=window_for(offset, end, total, capped),
        cache=cache,
        incomplete_reason=download.incomplete_reason,
        decoding=download.decoding,
    )
    return partial, sys.getsizeof(partial.text)
