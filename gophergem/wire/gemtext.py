# -*- test-case-name: tests.test_wire_gemtext -*-
"""
Gemtext (C{text/gemini}), parsed without I/O.

  - L{parse_gemtext} turns a decoded page into lines, its links (resolved
    against the page's URL) and, for a gemlog, its dated posts;
    L{gemtext_lines} gives the same lines one at a time, for a reader that
    stops when it has enough (a window).
  - L{window_text} cuts a page into windows that end on whole lines, so that
    a model can read a long page piece by piece.

Gemtext is line-oriented: a line's first characters decide its type, and the
only state is whether a preformatted block is open.  Every line of the page
is kept, in order, and every piece of server text is sanitised.  Links are
only data here: nothing is fetched, whatever their scheme.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator
from typing import Protocol

import attrs

from gophergem.errors import InvalidRequest
from gophergem.url import GeminiURL
from gophergem.wire.text import sanitise, sanitise_line

__all__ = [
    "LINE_TYPES",
    "FeedEntry",
    "GemtextDocument",
    "GemtextLine",
    "Link",
    "LinkBase",
    "TextWindow",
    "feed_entry",
    "gemtext_lines",
    "parse_gemtext",
    "window_text",
]

LINE_TYPES = ("text", "link", "heading1", "heading2", "heading3", "list", "quote", "preformat")


@attrs.frozen
class Link:
    """
    The target of a link line.

    @ivar url: The target, resolved to an absolute URL against the page.
        Links to other schemes (C{gopher:}, C{https:}, C{data:}, C{file:}...)
        are kept as written; nothing here fetches them.
    @ivar text: The label, sanitised, or C{None} when the line has none.
    @ivar takes_input: Whether the link asks the reader for input, which
        is sent with the request (Spartan's C{=:} lines; only when parsed
        with C{input_links}).
    """

    url: str
    text: str | None = None
    takes_input: bool = False


class LinkBase(Protocol):
    """
    The URL of a page, against which its links are resolved: a
    L{GeminiURL}, or the URL of another scheme whose pages are gemtext
    (C{spartan://}, a C{nex://} directory).
    """

    def resolve(self, reference: str) -> str:
        """Resolve a link target to an absolute URL; never raises."""
        ...


@attrs.frozen
class GemtextLine:
    """
    One line of a gemtext page.

    Only the fields that apply to the line's type are set; the rest are
    C{None}.

    @ivar type: One of C{text}, C{link}, C{heading1}, C{heading2},
        C{heading3}, C{list}, C{quote}, C{preformat}.  The C{```} toggle
        lines and every line between them are C{preformat}.
    @ivar content: The whole line as the server wrote it, sanitised.
        Preformatted lines keep their tabs; every other line has tabs
        turned into spaces.
    @ivar text: For headings, list items and quotes: the line without its
        marker and the whitespace after it.
    @ivar level: For headings: 1, 2 or 3.
    @ivar link: For links: the resolved target and the label.
    @ivar alt_text: For an opening toggle: the text after C{```}, if any.
    @ivar language: For an opening toggle: the first word of the alt text
        when it looks like the name of a programming language or format.
    """

    type: str
    content: str
    text: str | None = None
    level: int | None = None
    link: Link | None = None
    alt_text: str | None = None
    language: str | None = None


@attrs.frozen
class FeedEntry:
    """
    A dated post of a gemlog: a link line whose label starts with a date.

    @ivar date: The date as C{YYYY-MM-DD} (checked to be a real date).
    @ivar title: The rest of the label after the date and any separator.
    @ivar url: The resolved link target.
    """

    date: str
    title: str
    url: str


@attrs.frozen
class GemtextDocument:
    """
    A parsed gemtext page.

    @ivar lines: Every line of the page, in order.
    @ivar links: The link of every link line, in order.
    @ivar feed_entries: The dated posts, newest first (page order among
        posts of the same day); empty on a page that is not a gemlog.
    """

    lines: tuple[GemtextLine, ...]
    links: tuple[Link, ...]
    feed_entries: tuple[FeedEntry, ...]


_SPACE = " \t"
_WORD = re.compile(r"[^ \t]+")
# A date at the very start of a label, then the end, whitespace or a separator.
_DATED = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})(?=$|[\s:\u2013\u2014-])[\s]*(?:[:\u2013\u2014-]+\s*)?"
)
# What a language or format name in an alt text looks like: "python",
# "c++", "c#", "objective-c", "sh", "x86-64", "json5".
_IDENTIFIER = re.compile(r"[A-Za-z][A-Za-z0-9_+#.\-]{0,31}")
# First words of alt texts that describe a block rather than name a language.
_DESCRIPTIVE = frozenset(
    {
        *("a", "an", "the", "this", "that", "these", "some", "my", "our"),
        *("ascii", "art", "image", "picture", "diagram", "figure", "drawing", "photo"),
        *("logo", "banner", "table", "map", "chart", "graph", "example", "sample"),
        *("output", "screenshot", "text"),
    }
)


def parse_gemtext(
    text: str, base: GeminiURL | LinkBase, *, input_links: bool = False
) -> GemtextDocument:
    """
    Parse a decoded gemtext page.  Never raises.

    Lines may end in CRLF or LF; a byte order mark at the start is ignored.
    A link line is C{=>}, optional spaces or tabs, the target, then
    optionally whitespace and a label; C{=>} with no target is a text line.
    C{#}, C{##}, C{###} start headings (C{####} is a level-3 heading whose
    text starts with C{#}); C{* } (or C{*} and a tab) a list item; C{>} a
    quote.  Inside a preformatted block nothing is recognised.

    @param text: The page, already decoded.
    @param base: The page's own URL, against which links are resolved.
    @param input_links: Read Spartan's C{=:} lines as links that take
        input (L{Link.takes_input}); without it they are text lines, as
        Gemini has them.
    """
    lines: list[GemtextLine] = []
    links: list[Link] = []
    entries: list[FeedEntry] = []
    for line, _ in gemtext_lines(text, base, input_links=input_links):
        lines.append(line)
        if line.link is not None:
            links.append(line.link)
            entry = feed_entry(line.link)
            if entry is not None:
                entries.append(entry)
    entries.sort(key=lambda e: e.date, reverse=True)
    return GemtextDocument(tuple(lines), tuple(links), tuple(entries))


def gemtext_lines(
    text: str,
    base: GeminiURL | LinkBase,
    *,
    preformatted: bool = False,
    input_links: bool = False,
) -> Iterator[tuple[GemtextLine, int]]:
    """
    The lines of a decoded gemtext page, parsed one at a time as they are
    asked for, each with where the line after it starts in C{text}.  Never
    raises.  L{parse_gemtext} is these lines, with the links and dated
    posts gathered.

    @param base: The page's own URL, against which links are resolved.
    @param preformatted: Whether C{text} starts inside a preformatted block
        (a window of a page that opened one earlier).  A byte order mark is
        skipped only at the start of a page, never inside a block.
    @param input_links: Read C{=:} lines as links that take input (Spartan).
    """
    position = 0
    if not preformatted and text.startswith("\ufeff"):
        text, position = text[1:], 1
    raw_lines = text.split("\n")
    if raw_lines[-1] == "":
        raw_lines.pop()
    size = position + len(text)
    for raw in raw_lines:
        position += len(raw) + 1
        stop = position if position <= size else size  # the last line may lack its \n
        raw = raw.removesuffix("\r")
        if raw.startswith("```"):
            if preformatted:
                yield GemtextLine("preformat", sanitise_line(raw)), stop
            else:
                yield _toggle(raw), stop
            preformatted = not preformatted
        elif preformatted:
            yield GemtextLine("preformat", sanitise(raw)), stop
        else:
            yield _classify(raw, base, input_links), stop


def _classify(raw: str, base: GeminiURL | LinkBase, input_links: bool = False) -> GemtextLine:
    content = sanitise_line(raw)
    first = raw[:1]  # the line's type is in its first characters: look once
    if first == "=":
        if raw.startswith("=>"):
            link = _link(raw[2:], base)
            if link is not None:
                return GemtextLine("link", content, link=link)
        elif input_links and raw.startswith("=:"):
            link = _link(raw[2:], base)
            if link is not None:
                return GemtextLine("link", content, link=attrs.evolve(link, takes_input=True))
    elif first == "#":
        level = 3 if raw.startswith("###") else 2 if raw.startswith("##") else 1
        return GemtextLine(_HEADINGS[level], content, text=_after(raw, level), level=level)
    elif first == "*":
        if raw.startswith(("* ", "*\t")):
            return GemtextLine("list", content, text=_after(raw, 1))
    elif first == ">":
        return GemtextLine("quote", content, text=_after(raw, 1))
    return GemtextLine("text", content)


_HEADINGS = {1: "heading1", 2: "heading2", 3: "heading3"}


def _after(raw: str, marker_length: int) -> str:
    """The sanitised text after a line's marker, without leading whitespace."""
    return sanitise_line(raw[marker_length:]).lstrip(_SPACE)


def _link(rest: str, base: GeminiURL | LinkBase) -> Link | None:
    """Read the target and label after C{=>}; C{None} when there is no target."""
    match = _WORD.search(rest)
    if match is None:
        return None
    target = sanitise_line(match.group())
    if not target.strip():
        return None
    label = sanitise_line(rest[match.end() :]).strip() or None
    url = sanitise_line(base.resolve(target))
    return Link(url, label)


def _toggle(raw: str) -> GemtextLine:
    """An opening C{```} line, with its alt text and the language it may name."""
    content = sanitise_line(raw)
    alt_text = sanitise_line(raw[3:]).strip() or None
    return GemtextLine("preformat", content, alt_text=alt_text, language=_language(alt_text))


def _language(alt_text: str | None) -> str | None:
    """
    The first word of C{alt_text} when it looks like a language name:
    an identifier that is not a common English word starting a description,
    and either the whole alt text or written in lower case
    (C{"python"}, C{"Go"}, C{"sh session"}; not C{"A cat"}).
    """
    if not alt_text:
        return None
    words = alt_text.split()
    first = words[0]
    if not _IDENTIFIER.fullmatch(first) or first.lower().split("-")[0] in _DESCRIPTIVE:
        return None
    if first.endswith((".", "-")):
        return None
    if len(words) > 1 and first != first.lower():
        return None
    return first


def feed_entry(link: Link) -> FeedEntry | None:
    """A gemlog post when the link's label starts with a real C{YYYY-MM-DD} date."""
    if link.text is None:
        return None
    match = _DATED.match(link.text)
    if match is None:
        return None
    year, month, day = (int(part) for part in match.groups())
    try:
        date = datetime.date(year, month, day)
    except ValueError:
        return None
    return FeedEntry(date.isoformat(), link.text[match.end() :].strip(), link.url)


# --- windows ------------------------------------------------------------------


@attrs.frozen
class TextWindow:
    """
    One window of a text.

    @ivar text: The characters of this window.
    @ivar next_offset: Where the next window starts, or C{None} at the end.
    @ivar partial_line: Whether the window holds only part of a line (one
        line longer than the window, or the rest of a line an earlier window
        cut).  Such a window must be shown as plain text, never parsed.
    """

    text: str
    next_offset: int | None
    partial_line: bool


def window_text(text: str, offset: int, limit: int) -> TextWindow:
    """
    Cut the window of at most C{limit} characters starting at C{offset}.

    A window ends after the last complete line (its C{\\n} included) that
    fits, so consecutive windows abut exactly.  If the line at C{offset} is
    too long to fit, the window is its first C{limit} characters, marked
    C{partial_line}; the window after it carries on from the middle of that
    line, also marked C{partial_line}, up to the end of the line.

    @raise InvalidRequest: If C{offset} is negative or C{limit} below 1.
    """
    if offset < 0:
        raise InvalidRequest(message="The offset cannot be negative.")
    if limit < 1:
        raise InvalidRequest(message="A window must hold at least one character.")
    size = len(text)
    if offset >= size:
        return TextWindow("", None, False)
    mid_line = offset > 0 and text[offset - 1] != "\n"
    end = offset + limit
    if mid_line:
        newline = text.find("\n", offset, end)
        stop = newline + 1 if newline >= 0 else min(end, size)
        return TextWindow(text[offset:stop], stop if stop < size else None, True)
    if end >= size:
        return TextWindow(text[offset:], None, False)
    newline = text.rfind("\n", offset, end)
    if newline < 0:
        return TextWindow(text[offset:end], end, True)
    return TextWindow(text[offset : newline + 1], newline + 1, False)
